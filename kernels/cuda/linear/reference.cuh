// Linear layer, reference: one warp per (token, output feature), f32 accumulation in lane order
// then a warp reduction. Any shape; weights in their stored dtype.
// Grid: (ceil(out_dim / (BLOCK/32)), n).
#pragma once
#include "common/params.h"
#include "common/reduce.cuh"
#include "common/types.cuh"

template <int BLOCK, typename W>
__device__ void linear_ref(const LinearParams& p) {
  const long long t = blockIdx.y;
  const long long o = (long long)blockIdx.x * (BLOCK / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (o >= p.out_dim) return;
  const long long src = p.rows ? p.rows[t] : t;
  const float* x = p.x + src * p.in;
  const W* w = static_cast<const W*>(p.w) + o * p.in;
  float acc = 0.0f;
  for (long long i = lane; i < p.in; i += 32) acc += x[i] * to_f32(w[i]);
  acc = warp_sum(acc);
  if (lane == 0) {
    if (p.bias) acc += to_f32(static_cast<const W*>(p.bias)[o]);
    p.out[t * p.out_dim + o] = acc;
  }
}
