// swiglu.w16: silu(gate) * up over the 16-bit outputs of a prefill's gate and up GEMMs, in f32,
// rounded to the same dtype for the down projection (half the bytes of the f32 path, no cast pass).
#pragma once
#include "common/params.h"
#include "common/types.cuh"

template <int BLOCK, typename W>
__device__ void swiglu_w16(const Swiglu16Params& p) {
  const W* gate = static_cast<const W*>(p.gate);
  const W* up = static_cast<const W*>(p.up);
  W* out = static_cast<W*>(p.out);
  for (long long i = (long long)blockIdx.x * BLOCK + threadIdx.x; i < p.count; i += (long long)gridDim.x * BLOCK) {
    const float g = to_f32(gate[i]);
    out[i] = from_f32<W>(g / (1.0f + expf(-g)) * to_f32(up[i]));
  }
}
