#pragma once
// The graph IR: one forward step of a decoder over a ragged batch of N tokens (prefill: the
// prompt of one sequence; decode: one token of each of B sequences). Every activation is a
// [N, width] matrix; ops read values and write one new value (SSA), weights are referenced by
// the stored tensor they read. The builder (builder.cpp) makes this from a config; backends
// execute it op by op; the compiler cuts it into regions.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "agentcompile/model/architecture.h"
#include "agentcompile/model/hf_config.h"

namespace ac {

enum class OpKind : uint8_t {
  Embed,      // tokens -> [N, hidden]                       weights: table [vocab, hidden]
  RmsNorm,    // [N, width] -> [N, width], per group of width/groups   weights: gamma [width/groups]
  Linear,     // [N, in] -> [N, out]                         weights: W [out, in], bias [out] (optional)
  Rope,       // [N, heads*head_dim] -> same, rotated by each token's position
  Attention,  // q [N, heads*hd], k, v [N, kv_heads*hd] -> [N, heads*hd]; appends k, v to the KV cache
  SwiGlu,     // gate, up [N, F] -> silu(gate) * up
  Add,        // a, b -> a + b (residual)
  Logits,     // [N, hidden] -> [R, vocab] for the R rows the step asks logits for   weights: lm_head
  MoeMlp,     // [N, hidden] -> [N, hidden], a sparse layer's whole MLP (see below)
              //   weights: router [E, hidden], then per expert e: gate [F, hidden], up [F, hidden], down [hidden, F]
};
std::string_view op_kind_name(OpKind k);

// MoeMlp is one op, not a graph of its own linears: which experts run depends on the router's
// output for each token, so no static op list can name them. Per token: logits = router x; p =
// softmax(logits) in f32 over all E experts; the top_k largest p (ties: the lower expert index);
// renormalised to sum 1 when norm_topk; out = sum over the picked experts, in expert order, of
// p_e * down_e(silu(gate_e x) * up_e x). One op keeps the reference obviously correct
// (tuning/reference_ops.h ref::moe_mlp) and gives a later GPU route one region to replace with a
// grouped kernel; the dense layers of the same model keep the ordinary gate/up/SwiGLU/down ops.

struct Value {
  int id = -1;
  std::string name;   // "layers.0.q", "hidden.3"
  int64_t width = 0;  // columns; rows are the step's tokens (Logits: its selected rows)
};

struct Op {
  OpKind kind;
  std::string name;                        // "layers.0.q_proj"
  int layer = -1;                          // decoder layer, -1 outside the layers
  std::vector<int> inputs;                 // value ids
  int output = -1;                         // value id
  std::vector<const TensorInfo*> weights;  // see OpKind
  // attributes (only those of the kind are meaningful)
  int64_t groups = 1;      // RmsNorm: independent groups per row (heads, for qk_norm)
  float eps = 0.0f;        // RmsNorm
  int64_t heads = 0;       // Rope, Attention: query heads (Rope: heads of the rotated value)
  int64_t kv_heads = 0;    // Attention
  int64_t head_dim = 0;    // Rope, Attention
  int64_t window = 0;      // Attention: a query attends to the last `window` positions (0: all before it)
  int64_t experts = 0;     // MoeMlp: E
  int64_t top_k = 0;       // MoeMlp: experts per token
  int64_t expert_inter = 0;  // MoeMlp: F, the experts' intermediate width
  bool norm_topk = false;  // MoeMlp: renormalise the picked probabilities
};

struct Graph {
  ModelConfig config;
  std::vector<Value> values;
  std::vector<Op> ops;
  int logits = -1;  // the output value
  // The ops' weights loaded from FP8 (ModelWeights::fp8), each as stored: a backend whose kernels
  // read e4m3 codes and scales (the CUDA fast path's gemv.fp8) takes these instead of the f32.
  std::map<const TensorInfo*, std::shared_ptr<const Fp8Weight>> fp8;

  const Value& value(int id) const { return values.at(static_cast<size_t>(id)); }
  // Index of the last op reading each value (-1: never read; the graph output stays live).
  std::vector<int> last_uses() const;
  // One line per op: "%7 = linear(%6) layers.0.q_proj W=[2048, 2048] BF16".
  std::string to_string() const;
};

// Builds the decoder graph of a bound model.
Graph build_decoder_graph(const ModelConfig& cfg, const ModelWeights& w);

}  // namespace ac
