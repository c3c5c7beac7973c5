#pragma once
// Tuned CPU kernel families: the CPU backend's candidates, so the search (issue 7) can measure
// real alternatives without a GPU. Each family computes what a reference op computes (ref_ops.h)
// and is checked against it; its parameters are finite domains with a constraint over the shape
// and the host (cores, vector registers).
//
//   linear.blocked     out[t, o] = x[t, :] . w[o, :] + bias[o]: ROWS weight rows x TOKENS token
//                      rows per register tile, KUNROLL independent partial sums along k, THREADS
//                      threads over output rows (each weight row is read once per call).
//   attention.blocked  the attending half of ref attention (the cache already holds this step's
//                      rows): online softmax over KV blocks of BLOCK_KV positions; GQA_SHARE=1
//                      handles all query heads of a KV head together, so each K/V row is loaded
//                      once per group; THREADS threads over (token, head) work items.
//   mlp.fused          a layer's MLP as one span of two regions (mlp_in + mlp_out): RMSNorm, then
//                      per CHUNK columns of the intermediate dimension the gate/up rows, SwiGLU and
//                      that chunk's share of the down projection (linear.blocked's ROWS x TOKENS x
//                      KUNROLL tiles for all three), then the residual add; the [tokens,
//                      intermediate] activations never exist. THREADS threads over chunks, each
//                      with its own partial output.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "agentcompile/tuning/reference_ops.h"

namespace ac::cpu {

using CpuParams = std::map<std::string, int>;

struct CpuParamDomain {
  std::string name;
  std::vector<int> values;
};

// What a constraint may look at: the op's shape at the specialisation point, and the host.
struct CpuOpShape {
  int64_t tokens = 1;   // rows of the step (linear: rows of x)
  int64_t in = 0, out = 0;                        // linear; mlp: hidden, intermediate
  int64_t heads = 0, kv_heads = 0, head_dim = 0;  // attention
  int64_t context = 0;                            // attention: positions attended per token
};
struct CpuHost {
  int cores = 1;
  int simd_floats = 4;
  int simd_registers = 16;
};

struct CpuFamily {
  std::string op;    // the graph op it implements: "linear" (also lm_head rows) or "attention";
                     // "mlp": the span of a layer's MLP regions (compiler/spans.h)
  std::string name;  // "blocked"
  std::string description;
  std::vector<CpuParamDomain> params;
  std::vector<std::string> rules;  // the constraint, in words (for summaries and prompts)
};

const std::vector<CpuFamily>& cpu_families();
const CpuFamily* find_cpu_family(std::string_view op, std::string_view name);

// "" when `p` binds every parameter of `f` to a value of its domain and satisfies the family's
// interface and hardware rules for `shape` on `host`; otherwise why not.
std::string cpu_family_constraint(const CpuFamily& f, const CpuParams& p, const CpuOpShape& shape, const CpuHost& host);

struct LinearBlockedParams {
  int rows = 4, tokens = 1, k_unroll = 8, threads = 1;
};
// From a binding of linear.blocked; Internal error when a value is outside the domain.
LinearBlockedParams linear_blocked_params(const CpuParams& p);
// Same contract as cpu::linear (x [n, in], w [out, in], bias [out] or null, out [n, out]).
void linear_blocked(const float* x, int64_t n, int64_t in, const float* w, const float* bias, int64_t out_dim,
                    float* out, const LinearBlockedParams& p);

struct AttentionBlockedParams {
  int block_kv = 64, gqa_share = 1, threads = 1;
};
AttentionBlockedParams attention_blocked_params(const CpuParams& p);
// Attends like cpu::attention, reading the cache only (rows [0, positions[i]] of slots[i] must
// hold k and v already; kv_write below or the reference op put them there).
// window > 0: only the last `window` positions, as ref::attention.
void attention_blocked(const float* q, int64_t n, const int32_t* positions, const int32_t* slots, int64_t heads,
                       int64_t kv_heads, int64_t head_dim, const ref::KvCacheView& cache, float* out,
                       const AttentionBlockedParams& p, int64_t window = 0);

struct MlpFusedParams {
  int chunk = 64;            // CHUNK: intermediate columns per step
  LinearBlockedParams tile;  // ROWS, TOKENS, KUNROLL of the tiles (tile.threads unused)
  int threads = 1;           // THREADS: workers over chunks
};
MlpFusedParams mlp_fused_params(const CpuParams& p);
// One layer's MLP weights as f32: RMSNorm gamma [hidden] and eps; gate, up [inter, hidden];
// down [hidden, inter]; biases [rows] or null.
struct MlpWeights {
  const float* norm = nullptr;
  float eps = 0;
  const float* gate = nullptr;
  const float* gate_bias = nullptr;
  const float* up = nullptr;
  const float* up_bias = nullptr;
  const float* down = nullptr;
  const float* down_bias = nullptr;
};
// out = residual + down(swiglu(gate(norm(x)), up(norm(x)))): x, residual, out [n, hidden].
void mlp_fused(const float* x, const float* residual, int64_t n, int64_t hidden, int64_t inter, const MlpWeights& w,
               float* out, const MlpFusedParams& p);

// The cache-append half of cpu::attention: k_new/v_new [n, kv_dim] into (slots[i], positions[i]).
void kv_write(const float* k_new, const float* v_new, int64_t n, const int32_t* positions, const int32_t* slots,
              const ref::KvCacheView& cache);

}  // namespace ac::cpu
