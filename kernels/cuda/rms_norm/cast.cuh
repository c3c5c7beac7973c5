// rms_norm.cast: RMSNorm of f32 rows written in gamma's 16-bit dtype, one block per row: the
// reference's arithmetic (the same f32 result) rounded once, so a prefill GEMM reads its input
// without a separate cast pass over the rows.
#pragma once
#include "common/params.h"
#include "common/types.cuh"
#include "rms_norm/reference.cuh"

template <int BLOCK, typename W>
__device__ void rms_norm_cast(const NormCastParams& p) {
  const long long r = blockIdx.x;
  const float* x = p.x + r * p.dim;
  const float inv = rms_inv_row<BLOCK>(x, p.dim, p.eps);
  const W* g = static_cast<const W*>(p.gamma);
  W* out = static_cast<W*>(p.out) + r * p.dim;
  for (long long j = threadIdx.x; j < p.dim; j += BLOCK) out[j] = from_f32<W>(to_f32(g[j]) * (x[j] * inv));
}
