// fp8_dequant.rows: a [N, K] matrix of FP8 e4m3 codes times their f32 scales into 16-bit, for the
// fast path's prefill GEMMs. One grid row per matrix row (no division per element, unlike the
// reference's flat loop): 16 codes per 16-byte load, converted as gemv.fp8 converts them
// (unpack_fp8x4), their 16 values stored as two 16-byte stores. Needs K % 16 == 0 and scale
// blocks of a multiple of 16 columns (bi: K for row scales, 128 for blocks), so a group of 16
// never straddles two scales.
#pragma once
#include "common/params.h"
#include "common/types.cuh"
#include "common/vec.cuh"

template <int BLOCK, typename OUT>
__device__ void fp8_dequant_rows(const Fp8DequantParams& p) {
  const long long r = blockIdx.y, groups = p.K / 16;
  const uint4* src = reinterpret_cast<const uint4*>(p.codes + r * p.K);
  const float* srow = p.scales + (r / p.bo) * p.scale_cols;
  uint4* dst = reinterpret_cast<uint4*>(static_cast<OUT*>(p.out) + r * p.K);
  for (long long g = (long long)blockIdx.x * BLOCK + threadIdx.x; g < groups; g += (long long)gridDim.x * BLOCK) {
    const uint4 c = src[g];
    const float s = srow[g * 16 / p.bi];
    float f[16];
    unpack_fp8x4(c.x, f);
    unpack_fp8x4(c.y, f + 4);
    unpack_fp8x4(c.z, f + 8);
    unpack_fp8x4(c.w, f + 12);
    unsigned short h[16];
#pragma unroll
    for (int i = 0; i < 16; ++i) h[i] = from_f32<OUT>(f[i] * s).bits;
    uint4 lo, hi;
    lo.x = h[0] | (unsigned(h[1]) << 16);
    lo.y = h[2] | (unsigned(h[3]) << 16);
    lo.z = h[4] | (unsigned(h[5]) << 16);
    lo.w = h[6] | (unsigned(h[7]) << 16);
    hi.x = h[8] | (unsigned(h[9]) << 16);
    hi.y = h[10] | (unsigned(h[11]) << 16);
    hi.z = h[12] | (unsigned(h[13]) << 16);
    hi.w = h[14] | (unsigned(h[15]) << 16);
    dst[2 * g] = lo;
    dst[2 * g + 1] = hi;
  }
}
