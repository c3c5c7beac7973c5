// rms_norm.cast: RMSNorm of f32 rows written in gamma's 16-bit dtype, one block per row: the
// reference's arithmetic (the same f32 result) rounded once, so a prefill GEMM reads its input
// without a separate cast pass over the rows.
#pragma once
#include "common/params.h"
#include "common/types.cuh"
#include "rms_norm/reference.cuh"

template <int BLOCK, typename W>
__device__ void rms_norm_cast(const NormCastParams& p) {
  // Rows of up to BLOCK * kRowValues values are loaded once, all loads in flight together, and kept
  // in registers: the rolled loop of rms_inv_row waits for each load before the next and then
  // reads the row again (a prompt's norms ran at 60% of the copy bandwidth on an H100). Each
  // thread holds the values j = threadIdx.x + BLOCK * i and adds them in rms_inv_row's order, and
  // both finish in rms_inv_from_partial, so the result is the same bits; longer rows take the
  // two-pass form.
  constexpr int kRowValues = 16;
  const long long r = blockIdx.x;
  const float* x = p.x + r * p.dim;
  const W* g = static_cast<const W*>(p.gamma);
  W* out = static_cast<W*>(p.out) + r * p.dim;
  if (p.dim > (long long)BLOCK * kRowValues) {
    const float inv = rms_inv_row<BLOCK>(x, p.dim, p.eps);
    for (long long j = threadIdx.x; j < p.dim; j += BLOCK) out[j] = from_f32<W>(to_f32(g[j]) * (x[j] * inv));
    return;
  }
  float v[kRowValues];
#pragma unroll
  for (int i = 0; i < kRowValues; ++i) {
    const long long j = threadIdx.x + (long long)BLOCK * i;
    v[i] = j < p.dim ? x[j] : 0.0f;
  }
  float ss = 0.0f;
#pragma unroll
  for (int i = 0; i < kRowValues; ++i)
    if (threadIdx.x + (long long)BLOCK * i < p.dim) ss += v[i] * v[i];
  const float inv = rms_inv_from_partial<BLOCK>(ss, p.dim, p.eps);
#pragma unroll
  for (int i = 0; i < kRowValues; ++i) {
    const long long j = threadIdx.x + (long long)BLOCK * i;
    if (j < p.dim) out[j] = from_f32<W>(to_f32(g[j]) * (v[i] * inv));
  }
}
