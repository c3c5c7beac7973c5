#pragma once
// The register tiles of linear.blocked, shared with mlp.fused: x [n, in] times weight rows that
// lie `ldw` floats apart (a column block of a wider matrix when ldw > in), into an output whose
// rows lie `ldo` apart, stored or accumulated. A tile is ROWS weight rows x TOKENS token rows,
// each (row, token) pair keeping KUNROLL partial sums along k, so the compiler keeps the tile's
// accumulators in vector registers and each loaded weight vector serves TOKENS tokens.
#include <algorithm>
#include <cstdint>

namespace ac::cpu::tiles {

struct LinearArgs {
  const float* x;     // [n, in], rows `in` apart
  int64_t n, in;
  const float* w;     // weight row o at w + o * ldw (its first `in` values are used)
  int64_t ldw;
  const float* bias;  // [rows] or null
  float* out;         // out[t * ldo + o]
  int64_t ldo;
  bool accumulate;    // out += x . w (+ bias) instead of out = ...
};

inline void store(const LinearArgs& a, int64_t t, int64_t o, float s) {
  float& dst = a.out[t * a.ldo + o];
  s += a.bias ? a.bias[o] : 0.0f;
  dst = a.accumulate ? dst + s : s;
}

// Pairwise sum of K partial sums (K a power of two).
template <int K>
inline float reduce(const float* acc) {
  float v[K];
  for (int u = 0; u < K; ++u) v[u] = acc[u];
  for (int width = K / 2; width > 0; width /= 2)
    for (int u = 0; u < width; ++u) v[u] += v[u + width];
  return v[0];
}

template <int K>
inline float dot_k(const float* a, const float* b, int64_t n) {
  float acc[K] = {};
  int64_t i = 0;
  for (; i + K <= n; i += K)
    for (int u = 0; u < K; ++u) acc[u] += a[i + u] * b[i + u];
  float s = reduce<K>(acc);
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

template <int R, int T, int K>
inline void full_tile(const LinearArgs& a, int64_t o0, int64_t t0) {
  float acc[R][T][K] = {};
  const int64_t in = a.in;
  int64_t k = 0;
  for (; k + K <= in; k += K)
    for (int r = 0; r < R; ++r) {
      const float* wr = a.w + (o0 + r) * a.ldw + k;
      for (int t = 0; t < T; ++t) {
        const float* xt = a.x + (t0 + t) * in + k;
        for (int u = 0; u < K; ++u) acc[r][t][u] += wr[u] * xt[u];
      }
    }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) {
      float s = reduce<K>(acc[r][t]);
      for (int64_t kk = k; kk < in; ++kk) s += a.w[(o0 + r) * a.ldw + kk] * a.x[(t0 + t) * in + kk];
      store(a, t0 + t, o0 + r, s);
    }
}

// Output rows [ob, oe): whole tiles, then single (row, token) dots for the ragged edges.
template <int R, int T, int K>
void row_range(const LinearArgs& a, int64_t ob, int64_t oe) {
  for (int64_t o0 = ob; o0 < oe; o0 += R) {
    const int64_t rn = std::min<int64_t>(R, oe - o0);
    for (int64_t t0 = 0; t0 < a.n; t0 += T) {
      const int64_t tn = std::min<int64_t>(T, a.n - t0);
      if (rn == R && tn == T) {
        full_tile<R, T, K>(a, o0, t0);
        continue;
      }
      for (int64_t r = 0; r < rn; ++r)
        for (int64_t t = 0; t < tn; ++t) store(a, t0 + t, o0 + r, dot_k<K>(a.w + (o0 + r) * a.ldw, a.x + (t0 + t) * a.in, a.in));
    }
  }
}

using RangeFn = void (*)(const LinearArgs&, int64_t, int64_t);

template <int R, int T>
RangeFn pick_k(int k) {
  switch (k) {
    case 4: return &row_range<R, T, 4>;
    case 8: return &row_range<R, T, 8>;
    case 16: return &row_range<R, T, 16>;
  }
  return nullptr;
}

template <int R>
RangeFn pick_t(int t, int k) {
  switch (t) {
    case 1: return pick_k<R, 1>(k);
    case 2: return pick_k<R, 2>(k);
    case 4: return pick_k<R, 4>(k);
  }
  return nullptr;
}

// The instantiated tile for (ROWS, TOKENS, KUNROLL), or null outside linear.blocked's domains.
inline RangeFn pick(int rows, int tokens, int k_unroll) {
  switch (rows) {
    case 1: return pick_t<1>(tokens, k_unroll);
    case 2: return pick_t<2>(tokens, k_unroll);
    case 4: return pick_t<4>(tokens, k_unroll);
    case 8: return pick_t<8>(tokens, k_unroll);
  }
  return nullptr;
}

}  // namespace ac::cpu::tiles
