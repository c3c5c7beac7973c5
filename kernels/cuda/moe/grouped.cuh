// The passes around a prompt step's grouped expert GEMMs (moe.cpp, moe_prefill_grouped): the
// picks sorted by expert (moe_groups.h) make each expert's tokens one run of rows, so cuBLAS's
// grouped GEMM reads each expert's weights once for all the tokens routed to it, where the expert
// GEMVs read them once per token.
// moe_gather_rows: xg[r, :] = h[rows[r] / top_k, :] rounded to W (the GEMMs' 16-bit input).
//   Grid: (picks).
// moe_combine_rows: out[t, o] += sum over token t's picks j, in their (increasing expert) order,
//   of weights[t, j] * down[pos[t, j], o]: the order moe_down.gemv and the CPU reference add them.
//   down is W: cuBLAS's grouped GEMM writes only its inputs' type (no f32 output from 16-bit
//   inputs), so each expert's output is rounded to 16 bits first, as the checkpoints' own
//   frameworks round it. Grid: (n).
#pragma once
#include "common/params.h"
#include "common/types.cuh"

template <int BLOCK, typename W>
__device__ void moe_gather_rows(const MoeGroupedParams& p) {
  const long long r = blockIdx.x;
  const float* x = p.h + (long long)(p.rows[r] / p.top_k) * p.hidden;
  W* out = static_cast<W*>(p.xg) + r * p.hidden;
  for (long long i = threadIdx.x; i < p.hidden; i += BLOCK) out[i] = from_f32<W>(x[i]);
}

template <int BLOCK, typename W>
__device__ void moe_combine_rows(const MoeGroupedParams& p) {
  const long long t = blockIdx.x;
  const W* down = static_cast<const W*>(p.down);
  for (long long o = threadIdx.x; o < p.hidden; o += BLOCK) {
    float total = 0.0f;
    for (long long j = 0; j < p.top_k; ++j) {
      const long long pick = t * p.top_k + j;
      total += p.weights[pick] * to_f32(down[(long long)p.pos[pick] * p.hidden + o]);
    }
    p.out[t * p.hidden + o] += total;
  }
}
