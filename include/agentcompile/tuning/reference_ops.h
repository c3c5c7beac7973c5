#pragma once
// The reference ops: one obviously correct implementation per graph op, f32 in and out, f32
// accumulation. They are the oracle every backend and kernel is checked against (the CPU fallback
// route runs them; evaluators compare with them), so clarity beats speed; the only concessions
// are threads over output rows and several partial sums in dot products (vectorisable).
#include <cstdint>
#include <vector>

namespace ac::ref {

// out[i, :] = table[tokens[i], :]                       table [vocab, hidden]
void embed(const int32_t* tokens, int64_t n, const float* table, int64_t hidden, float* out);

// Each row of `rows` x `dim`: out = x / sqrt(mean(x^2) + eps) * gamma     gamma [dim]
void rms_norm(const float* x, int64_t rows, int64_t dim, const float* gamma, float eps, float* out);

// out[t, o] = sum_i x[t, i] * w[o, i] + bias[o]          x [n, in], w [out, in], bias [out] or null
void linear(const float* x, int64_t n, int64_t in, const float* w, const float* bias, int64_t out_dim, float* out);

// Rotates each head's pairs (j, j + head_dim/2) by position * inv_freq[j] (HF rotate_half).
// x, out [n, heads * head_dim]; may alias.
void rope(const float* x, int64_t n, int64_t heads, int64_t head_dim, const int32_t* positions,
          const std::vector<float>& inv_freq, float* out);

// One layer's KV cache: slot s, position p, value j at [(s * max_seq + p) * kv_dim + j].
struct KvCacheView {
  float* k = nullptr;
  float* v = nullptr;
  int64_t max_seq = 0;
  int64_t kv_dim = 0;
};

// Writes k_new/v_new [n, kv_heads*head_dim] into the cache at (slots[i], positions[i]), then for
// each token and query head attends causally over positions [0, positions[i]] of its slot
// (query head h reads kv head h / (heads / kv_heads)); scale 1/sqrt(head_dim); f32 softmax.
// With window > 0 only the last `window` of them: [max(0, positions[i] - window + 1), positions[i]]
// (HF's sliding-window mask: kv > q - window). q, out [n, heads*head_dim].
void attention(const float* q, const float* k_new, const float* v_new, int64_t n, const int32_t* positions,
               const int32_t* slots, int64_t heads, int64_t kv_heads, int64_t head_dim, KvCacheView cache,
               float* out, int64_t window = 0);

// The first position a query at `position` attends to under `window` (0: no window).
inline int64_t attention_start(int64_t position, int64_t window) {
  return window > 0 && position + 1 > window ? position + 1 - window : 0;
}

// out = silu(gate) * up, silu(x) = x / (1 + exp(-x))
void swiglu(const float* gate, const float* up, int64_t count, float* out);

// out = a + b
void add(const float* a, const float* b, int64_t count, float* out);

// Mixture-of-experts routing of one token: probabilities = softmax(logits) in f32 over all
// `experts`, the top_k largest picked (ties: the lower expert index first), renormalised to sum 1
// when `renormalise`. Writes top_k expert ids in descending probability and their weights.
void moe_route(const float* logits, int64_t experts, int64_t top_k, bool renormalise, int32_t* ids, float* weights);

// One SwiGLU expert: gate, up [inter, hidden], down [hidden, inter].
struct ExpertView {
  const float* gate = nullptr;
  const float* up = nullptr;
  const float* down = nullptr;
};

// A sparse layer's MLP over n tokens (graph op MoeMlp): per token, router [experts, hidden]
// logits, moe_route, then out = sum over the picked experts in increasing expert index of
// weight * down(silu(gate x) * up x) (HF adds the experts' outputs in that order). x, out [n, hidden].
// ids_out: null, or [n, top_k] for the picks (in pick order).
void moe_mlp(const float* x, int64_t n, int64_t hidden, const float* router, const std::vector<ExpertView>& experts,
             int64_t inter, int64_t top_k, bool renormalise, float* out, int32_t* ids_out = nullptr);

// f32 dot product with eight partial sums.
float dot(const float* a, const float* b, int64_t n);

}  // namespace ac::ref
