// RMSNorm: one block per row; out = x / sqrt(mean(x^2) + eps) * gamma, f32 throughout.
#pragma once
#include "common/params.h"
#include "common/reduce.cuh"
#include "common/types.cuh"

// 1 / rms of one row from each thread's share of its sum of squares (every thread gets it).
template <int BLOCK>
__device__ __forceinline__ float rms_inv_from_partial(float ss, long long dim, float eps) {
  __shared__ float scratch[BLOCK / 32];
  ss = block_sum<BLOCK>(ss, scratch);
  return 1.0f / sqrtf(ss / (float)dim + eps);
}

// 1 / rms of one row, summed by the whole block: thread i adds x[i], x[i + BLOCK], ... in order.
template <int BLOCK>
__device__ float rms_inv_row(const float* x, long long dim, float eps) {
  float ss = 0.0f;
  for (long long j = threadIdx.x; j < dim; j += BLOCK) ss += x[j] * x[j];
  return rms_inv_from_partial<BLOCK>(ss, dim, eps);
}

template <int BLOCK, typename W>
__device__ void rms_norm_ref(const RmsNormParams& p) {
  const long long r = blockIdx.x;
  const float* x = p.x + r * p.dim;
  const float inv = rms_inv_row<BLOCK>(x, p.dim, p.eps);
  const W* g = static_cast<const W*>(p.gamma);
  for (long long j = threadIdx.x; j < p.dim; j += BLOCK) p.out[r * p.dim + j] = to_f32(g[j]) * (x[j] * inv);
}
