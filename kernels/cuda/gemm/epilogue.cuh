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

// A consumer warpgroup's 64 rows of C from its m64 x BN wgmma sums (gemm/wgmma.cuh,
// gemm/wgmma_pingpong.cuh): thread t's d[4 q .. 4 q + 3] are columns 8 q + 2 (t % 4) (+1) of rows
// 16 (t / 32) + (t % 32) / 4 and 8 below it, from row0 and column n0; at EPI 3 group q holds gate
// columns and group q + BN / 16 the same up columns. Rows past m and columns past n are not stored.
template <int EPI, int BN, typename W>
__device__ __forceinline__ void gemm_store_m64(const GemmW16Params& p, const float* d, long long row0, long long n0, int t) {
  const int warp = t / 32, lane = t % 32;
  const long long r0 = row0 + 16 * warp + lane / 4;
  constexpr int GROUPS = EPI == 3 ? BN / 16 : BN / 8;
#pragma unroll
  for (int q = 0; q < GROUPS; ++q) {
    const long long col = n0 + 8 * q + 2 * (lane % 4);
    if (col >= p.n) continue;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const long long r = r0 + 8 * h;
      if (r >= p.m) continue;
      const int u = 4 * (EPI == 3 ? q + BN / 16 : q) + 2 * h;  // EPI 3: the same columns' up sums
      gemm_store_pair<EPI, W>(p, r, col, d[4 * q + 2 * h], d[4 * q + 2 * h + 1], d[u], d[u + 1]);
    }
  }
}

