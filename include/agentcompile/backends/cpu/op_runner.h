#pragma once
// One graph op on the CPU with a chosen implementation: the reference op or a tuned family
// (linear.blocked for linear/logits, attention.blocked for attention). The executor runs every
// op through it, and the compiler's CPU evaluator runs a region's ops through it, so what the
// search measures is exactly what a plan runs.
#include <cstdint>
#include <functional>
#include <vector>

#include "agentcompile/backends/cpu/cpu_families.h"
#include "agentcompile/ir/graph.h"

namespace ac::cpu {

struct OpBinding {
  enum class Kind : uint8_t { Reference, LinearBlocked, AttentionBlocked };
  Kind kind = Kind::Reference;
  LinearBlockedParams linear;
  AttentionBlockedParams attention;
};

// Which part of an Attention op to run: both halves, only the cache append, or only attending
// over rows the cache already holds (the compiler's regions split the op this way).
enum class AttentionPart : uint8_t { Whole, Write, Attend };

struct OpArgs {
  const float* in[3] = {nullptr, nullptr, nullptr};  // the op's inputs, [n, width] each
  const float* w[2] = {nullptr, nullptr};            // its weights as f32 (weight, bias)
  const std::vector<const float*>* all_w = nullptr;   // MoeMlp: every weight as f32, in op.weights order
  float* out = nullptr;                              // [n (logits: rows), width]
  int64_t n = 0;                                     // tokens of the step
  const int32_t* tokens = nullptr;
  const int32_t* positions = nullptr;
  const int32_t* slots = nullptr;
  const int32_t* logit_rows = nullptr;  // Logits: which rows of in[0]
  int64_t rows = 0;                     // Logits: how many
  const std::vector<float>* inv_freq = nullptr;  // Rope
  ref::KvCacheView kv;                                // Attention: this layer's cache
  std::vector<int32_t>* picks = nullptr;              // MoeMlp: null, or set to the [n, top_k] picks

  // The fields every op of one step shares.
  void set_step(int64_t tokens_in_step, const int32_t* token_ids, const int32_t* pos, const int32_t* slot_ids,
                const int32_t* rows_wanted, int64_t rows_count, const std::vector<float>* rope_inv_freq) {
    n = tokens_in_step;
    tokens = token_ids;
    positions = pos;
    slots = slot_ids;
    logit_rows = rows_wanted;
    rows = rows_count;
    inv_freq = rope_inv_freq;
  }
};

// Runs `op` (of graph g) as `binding` says. A family binding on an op it does not implement is
// an internal error.
void run_op(const Graph& g, const Op& op, const OpBinding& binding, const OpArgs& a,
            AttentionPart part = AttentionPart::Whole);

// A layer's MLP as one span for mlp.fused: the post-attention RMSNorm, gate, up, SwiGLU, down
// projection and residual add (the regions mlp_in and mlp_out), and the values the fused kernel
// reads and writes; the intermediates between them are read by no op outside the span.
struct MlpSpan {
  int layer = -1;
  std::vector<int> ops;  // the six op indices, graph order (consecutive)
  int x = -1;            // value id: the norm's input
  int residual = -1;     // value id: the add's input that is not the down projection
  int out = -1;          // value id: the add's output
  int64_t hidden = 0, inter = 0;
};
// Every dense layer's MLP span of g, layer order (a sparse layer's MLP is one MoeMlp op);
// Internal when the graph's MLP is not the builder's pattern or an intermediate value is read
// after the span.
std::vector<MlpSpan> mlp_spans(const Graph& g);
// The span's weights as f32, through the caller's converted copy of each tensor.
MlpWeights mlp_span_weights(const Graph& g, const MlpSpan& s, const std::function<const float*(const TensorInfo*)>& f32_of);

}  // namespace ac::cpu
