#include "agentcompile/tuning/reference_ops.h"

#include <cmath>
#include <cstring>

#include "agentcompile/core/threads.h"
#include "agentcompile/ir/rope.h"

namespace ac::ref {

float dot(const float* a, const float* b, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) acc[j] += a[i + j] * b[i + j];
  float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

void embed(const int32_t* tokens, int64_t n, const float* table, int64_t hidden, float* out) {
  for (int64_t i = 0; i < n; ++i)
    std::memcpy(out + i * hidden, table + int64_t(tokens[i]) * hidden, size_t(hidden) * sizeof(float));
}

void rms_norm(const float* x, int64_t rows, int64_t dim, const float* gamma, float eps, float* out) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    float* yr = out + r * dim;
    float ss = dot(xr, xr, dim);
    float inv = 1.0f / std::sqrt(ss / float(dim) + eps);
    for (int64_t j = 0; j < dim; ++j) yr[j] = gamma[j] * (xr[j] * inv);
  }
}

void linear(const float* x, int64_t n, int64_t in, const float* w, const float* bias, int64_t out_dim, float* out) {
  // Threads over output features: each weight row is read once and applied to all n tokens.
  const size_t min_rows = size_t(std::max<int64_t>(1, (1 << 16) / std::max<int64_t>(1, in * n)));
  parallel_for(size_t(out_dim), min_rows, [&](size_t ob, size_t oe) {
    for (size_t o = ob; o < oe; ++o) {
      const float* wr = w + int64_t(o) * in;
      const float b = bias != nullptr ? bias[o] : 0.0f;
      for (int64_t t = 0; t < n; ++t) out[t * out_dim + int64_t(o)] = dot(x + t * in, wr, in) + b;
    }
  });
}

void rope(const float* x, int64_t n, int64_t heads, int64_t head_dim, const int32_t* positions,
          const std::vector<float>& inv_freq, float* out) {
  const int64_t half = head_dim / 2;
  std::vector<float> cs(size_t(half) * 2);
  for (int64_t t = 0; t < n; ++t) {
    rope_cos_sin(inv_freq, positions[t], cs.data(), cs.data() + half);
    for (int64_t h = 0; h < heads; ++h) {
      const float* xh = x + (t * heads + h) * head_dim;
      float* yh = out + (t * heads + h) * head_dim;
      for (int64_t j = 0; j < half; ++j) {
        const float a = xh[j], b = xh[j + half], c = cs[size_t(j)], s = cs[size_t(half + j)];
        yh[j] = a * c - b * s;
        yh[j + half] = b * c + a * s;
      }
    }
  }
}

void attention(const float* q, const float* k_new, const float* v_new, int64_t n, const int32_t* positions,
               const int32_t* slots, int64_t heads, int64_t kv_heads, int64_t head_dim, KvCacheView cache,
               float* out, int64_t window) {
  const int64_t kv_dim = kv_heads * head_dim;
  for (int64_t t = 0; t < n; ++t) {
    const int64_t row = (int64_t(slots[t]) * cache.max_seq + positions[t]) * kv_dim;
    std::memcpy(cache.k + row, k_new + t * kv_dim, size_t(kv_dim) * sizeof(float));
    std::memcpy(cache.v + row, v_new + t * kv_dim, size_t(kv_dim) * sizeof(float));
  }
  const int64_t group = heads / kv_heads;
  const float scale = 1.0f / std::sqrt(float(head_dim));
  parallel_for(size_t(n * heads), 8, [&](size_t b, size_t e) {
    std::vector<float> scores;
    for (size_t th = b; th < e; ++th) {
      const int64_t t = int64_t(th) / heads, h = int64_t(th) % heads, kvh = h / group;
      const int64_t first = attention_start(positions[t], window);
      const int64_t len = int64_t(positions[t]) + 1 - first;
      const float* qh = q + (t * heads + h) * head_dim;
      const float* kbase = cache.k + (int64_t(slots[t]) * cache.max_seq + first) * kv_dim + kvh * head_dim;
      const float* vbase = cache.v + (int64_t(slots[t]) * cache.max_seq + first) * kv_dim + kvh * head_dim;
      scores.resize(size_t(len));
      float mx = -INFINITY;
      for (int64_t p = 0; p < len; ++p) {
        scores[size_t(p)] = dot(qh, kbase + p * kv_dim, head_dim) * scale;
        mx = std::max(mx, scores[size_t(p)]);
      }
      float sum = 0.0f;
      for (int64_t p = 0; p < len; ++p) sum += (scores[size_t(p)] = std::exp(scores[size_t(p)] - mx));
      float* oh = out + (t * heads + h) * head_dim;
      for (int64_t j = 0; j < head_dim; ++j) oh[j] = 0.0f;
      for (int64_t p = 0; p < len; ++p) {
        const float wgt = scores[size_t(p)] / sum;
        const float* vp = vbase + p * kv_dim;
        for (int64_t j = 0; j < head_dim; ++j) oh[j] += wgt * vp[j];
      }
    }
  });
}

void swiglu(const float* gate, const float* up, int64_t count, float* out) {
  for (int64_t i = 0; i < count; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

void add(const float* a, const float* b, int64_t count, float* out) {
  for (int64_t i = 0; i < count; ++i) out[i] = a[i] + b[i];
}

}  // namespace ac::ref
