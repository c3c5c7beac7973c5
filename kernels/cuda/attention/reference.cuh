// Attention with a KV cache, reference. kv_write_ref stores the step's k and v at each token's
// (slot, position); attention_ref then runs one block per (query head, token) over positions
// [0, position] of the token's slot (its last `window` positions when window > 0: sliding-window
// attention, as mixtral configures it) with an online (single-pass) softmax in f32.
// Each thread owns head dims threadIdx.x + k*BLOCK (k < MAXD).
#pragma once
#include "common/params.h"
#include "common/reduce.cuh"
#include "common/types.cuh"

template <int BLOCK>
__device__ void kv_write_ref(const KvWriteParams& p) {
  const long long t = blockIdx.x;
  const long long dst = ((long long)p.slots[t] * p.max_seq + p.positions[t]) * p.kv_dim;
  for (long long j = threadIdx.x; j < p.kv_dim; j += BLOCK) {
    p.k_cache[dst + j] = p.k[t * p.kv_dim + j];
    p.v_cache[dst + j] = p.v[t * p.kv_dim + j];
  }
}

template <int BLOCK, int MAXD>
__device__ void attention_ref(const AttentionParams& p) {
  __shared__ float scratch[BLOCK / 32];
  const long long h = blockIdx.x, t = blockIdx.y;
  const long long group = p.heads / p.kv_heads, kvh = h / group;
  const long long kv_dim = p.kv_heads * p.head_dim;
  const float* q = p.q + (t * p.heads + h) * p.head_dim;
  const long long base = (long long)p.slots[t] * p.max_seq * kv_dim + kvh * p.head_dim;
  float qv[MAXD], acc[MAXD];
#pragma unroll
  for (int k = 0; k < MAXD; ++k) {
    const long long j = threadIdx.x + (long long)k * BLOCK;
    qv[k] = j < p.head_dim ? q[j] : 0.0f;
    acc[k] = 0.0f;
  }
  float m = AC_NEG_INF, l = 0.0f;
  const long long len = (long long)p.positions[t] + 1;
  const long long first = p.window > 0 && len > p.window ? len - p.window : 0;
  for (long long pos = first; pos < len; ++pos) {
    const float* kp = p.k_cache + base + pos * kv_dim;
    float part = 0.0f;
#pragma unroll
    for (int k = 0; k < MAXD; ++k) {
      const long long j = threadIdx.x + (long long)k * BLOCK;
      if (j < p.head_dim) part += qv[k] * kp[j];
    }
    const float s = block_sum<BLOCK>(part, scratch) * p.scale;
    const float m_new = fmaxf(m, s);
    const float corr = expf(m - m_new), e = expf(s - m_new);
    l = l * corr + e;
    const float* vp = p.v_cache + base + pos * kv_dim;
#pragma unroll
    for (int k = 0; k < MAXD; ++k) {
      const long long j = threadIdx.x + (long long)k * BLOCK;
      acc[k] = acc[k] * corr + (j < p.head_dim ? e * vp[j] : 0.0f);
    }
    m = m_new;
  }
  float* out = p.out + (t * p.heads + h) * p.head_dim;
#pragma unroll
  for (int k = 0; k < MAXD; ++k) {
    const long long j = threadIdx.x + (long long)k * BLOCK;
    if (j < p.head_dim) out[j] = acc[k] / l;
  }
}
