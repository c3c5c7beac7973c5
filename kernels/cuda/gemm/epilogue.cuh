// The stores of the project's prompt GEMMs (gemm/wgmma.cuh, gemm/mma.cuh): a thread's two adjacent
// columns col, col + 1 of C's row r. EPI 0 writes them in W, EPI 1 as f32, EPI 2 adds them into the
// f32 C already there (the residual stream, as cuBLAS with beta 1), EPI 3 writes silu(gate) * up in
// W from the gate sums x, y and the up sums ux, uy of the same columns, each rounded to W first as
// the two GEMMs' outputs would be, so C has the bits of EPI 0 on each followed by swiglu.w16.
#pragma once
#include "common/params.h"
#include "common/types.cuh"
#include "elementwise/swiglu16.cuh"

template <int EPI, typename W>
__device__ __forceinline__ void gemm_store_pair(const GemmW16Params& p, long long r, long long col, float x, float y, float ux,
                                                float uy) {
  if (EPI == 3) {
    x = swiglu_one(to_f32(from_f32<W>(x)), to_f32(from_f32<W>(ux)));
    y = swiglu_one(to_f32(from_f32<W>(y)), to_f32(from_f32<W>(uy)));
  }
  if (EPI == 0 || EPI == 3) {
    W* out = static_cast<W*>(p.c) + r * p.ldc + col;
    *reinterpret_cast<unsigned*>(out) = unsigned(from_f32<W>(x).bits) | (unsigned(from_f32<W>(y).bits) << 16);
  } else {
    float2* out = reinterpret_cast<float2*>(static_cast<float*>(p.c) + r * p.ldc + col);
    if (EPI == 2) {
      const float2 old = *out;
      *out = make_float2(old.x + x, old.y + y);
    } else {
      *out = make_float2(x, y);
    }
  }
}
