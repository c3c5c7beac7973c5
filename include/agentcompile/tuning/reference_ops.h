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
// q, out [n, heads*head_dim].
void attention(const float* q, const float* k_new, const float* v_new, int64_t n, const int32_t* positions,
               const int32_t* slots, int64_t heads, int64_t kv_heads, int64_t head_dim, KvCacheView cache,
               float* out);

// out = silu(gate) * up, silu(x) = x / (1 + exp(-x))
void swiglu(const float* gate, const float* up, int64_t count, float* out);

// out = a + b
void add(const float* a, const float* b, int64_t count, float* out);

// f32 dot product with eight partial sums.
float dot(const float* a, const float* b, int64_t n);

}  // namespace ac::ref
