// swiglu.w16: silu(gate) * up over the 16-bit outputs of a prefill's gate and up GEMMs, in f32,
// rounded to the same dtype for the down projection (half the bytes of the f32 path, no cast pass).
// Eight values per 16-byte load and store (the buffers are the executor's, 16-byte aligned), the
// count's remainder one by one; each value's arithmetic is the same either way.
#pragma once
#include "common/params.h"
#include "common/types.cuh"
#include "common/vec.cuh"

__device__ __forceinline__ float swiglu_one(float g, float u) {
  return g / (1.0f + expf(-g)) * u;
}

template <int BLOCK, typename W>
__device__ void swiglu_w16(const Swiglu16Params& p) {
  const W* gate = static_cast<const W*>(p.gate);
  const W* up = static_cast<const W*>(p.up);
  W* out = static_cast<W*>(p.out);
  const long long groups = p.count / 8, stride = (long long)gridDim.x * BLOCK;
  for (long long i = (long long)blockIdx.x * BLOCK + threadIdx.x; i < groups; i += stride) {
    const uint4 gv = reinterpret_cast<const uint4*>(gate)[i], uv = reinterpret_cast<const uint4*>(up)[i];
    float g[8], u[8];
    unpack8(u32x4{gv.x, gv.y, gv.z, gv.w}, W{}, g);
    unpack8(u32x4{uv.x, uv.y, uv.z, uv.w}, W{}, u);
    unsigned w[4];
#pragma unroll
    for (int j = 0; j < 4; ++j)
      w[j] = unsigned(from_f32<W>(swiglu_one(g[2 * j], u[2 * j])).bits) |
             (unsigned(from_f32<W>(swiglu_one(g[2 * j + 1], u[2 * j + 1])).bits) << 16);
    reinterpret_cast<uint4*>(out)[i] = make_uint4(w[0], w[1], w[2], w[3]);
  }
  for (long long i = groups * 8 + (long long)blockIdx.x * BLOCK + threadIdx.x; i < p.count; i += stride)
    out[i] = from_f32<W>(swiglu_one(to_f32(gate[i]), to_f32(up[i])));
}
