// Batched decode GEMV on the tensor cores (a skinny GEMM): y[b, n] = sum_k W[n, k] * x'[b, k] for
// B <= 8 rows of x, with the same prologue (RMSNorm) and epilogues as gemv.cuh. At batch 2-8 the
// CUDA-core GEMV spends more time reading x from shared memory (one load per FMA) than streaming
// the weights; here one mma.sync m16n8k16 multiplies a 16-row x 16-k weight tile by all 8 batch
// columns at once, so the weights are still read once with 16-byte loads, and x, read straight
// from global memory (L2) with the weights, once per block.
//
// f32 activations on bf16 tensor cores: x = hi + lo (+ lo2) with each term rounded to bf16, one
// mma per term; bf16 x bf16 products are exact in f32, so TERMS = 2 leaves a relative error of
// about 2^-17 per element of x (3 terms: the f32 rounding). RMSNorm: x * gamma goes into the
// mma and each output column is scaled by its row's 1 / rms at the end (the norm is linear in
// that factor), with the sum of squares gathered from the x the warps load anyway.
//
// k order: a dot product may sum its k in any order as long as W and x use the same one, so each
// lane loads 8 consecutive weights of a row with one 16-byte load and the mma's logical k
// {2t, 2t+1, 2t+8, 2t+9} of lane t (PTX fragment layout) are mapped to the lane's physical
// k {8t .. 8t+3} (first mma of a 32-k chunk) and {8t+4 .. 8t+7} (second), in W and x alike.
//
// Parameters (the family's search space):
//   BLOCK   threads per block; its WARPS warps split the block's K slice in 32-k chunks
//           (chunk c goes to warp c % WARPS) and add their partial tiles in shared memory
//   MT      16-row tiles per block (each lane keeps MT x 2 weight chunks per matrix in flight)
//   UNROLL  32-k chunks per warp in flight (double-buffered, weights and x)
//   SPLITK  K split over gridDim.y (RESIDUAL only: partial sums are added atomically)
//   TERMS   bf16 terms of x (2 or 3)
//   BATCH   largest B (1, 2, 4, 8); the mma always has 8 columns, columns >= B are zeros
//   EPI     as gemv.cuh
// Grid: (ceil(N / (16 * MT)), SPLITK). Dynamic shared memory: WARPS * MATS * MT * 128 floats of
// partial tiles. Requires K % 32 == 0 and bf16 weights.
#pragma once
#include "common/mma.cuh"
#include "common/params.h"
#include "common/pdl.cuh"
#include "common/reduce.cuh"
#include "common/vec.cuh"
#include "gemv/common.cuh"


// This lane's weights for chunk rounds j0 .. j0 + UNROLL - 1: rows g and g + 8 of each 16-row
// tile, physical k 8t .. 8t + 7 of the chunk (zeros past the slice or the last row).
template <int MT, int UNROLL, int MATS, int WARPS>
__device__ __forceinline__ void mma_load_w(u32x4 (&wv)[UNROLL][MATS][MT][2], const void* w0, const void* w1,
                                           long long row0, long long N, long long K, long long k0, long long nchunks,
                                           long long j0, int warp, int g, int t) {
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) {
    const long long c = (j0 + u) * WARPS + warp;
#pragma unroll
    for (int m = 0; m < MATS; ++m)
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const long long row = row0 + mt * 16 + h * 8 + g;
          const unsigned short* w = static_cast<const unsigned short*>(m == 0 ? w0 : w1);
          if (c < nchunks && row < N) wv[u][m][mt][h] = load_stream16(w + row * K + k0 + 32 * c + 8 * t);
          else wv[u][m][mt][h] = u32x4{0u, 0u, 0u, 0u};
        }
  }
}

// The same chunks of x, batch row g (the mma's column g), straight from global memory: each
// element of x is used by one warp of the block, so staging it would buy no reuse.
template <int UNROLL, int WARPS>
__device__ __forceinline__ void mma_load_x(float4 (&xv)[UNROLL][2], const float* x, long long K, long long k0,
                                           long long nchunks, long long j0, int warp, int g, int t, int B) {
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) {
    const long long c = (j0 + u) * WARPS + warp;
    if (c < nchunks && g < B) {
      const float4* px = reinterpret_cast<const float4*>(x + g * K + k0 + 32 * c + 8 * t);
      xv[u][0] = px[0];
      xv[u][1] = px[1];
    } else {
      xv[u][0] = xv[u][1] = make_float4(0.f, 0.f, 0.f, 0.f);
    }
  }
}

// acc[m][mt] += W_m tile . x''^T for this warp's chunks j0 .. j0 + UNROLL - 1, where x'' = x * gamma
// (RMSNorm's 1 / rms is applied to the outputs: it is one factor per batch column); ss gathers
// this lane's sum of x^2 for the norm.
template <int MT, int UNROLL, int MATS, int WARPS, int TERMS>
__device__ __forceinline__ void mma_step(float (&acc)[MATS][MT][4], float& ss, const u32x4 (&wv)[UNROLL][MATS][MT][2],
                                         const float4 (&xq)[UNROLL][2], const ac_bf16* gamma, long long k0,
                                         long long nchunks, long long j0, int warp, int t) {
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) {
    const long long c = (j0 + u) * WARPS + warp;
    if (c >= nchunks) continue;  // warp-uniform
    float xv[8] = {xq[u][0].x, xq[u][0].y, xq[u][0].z, xq[u][0].w, xq[u][1].x, xq[u][1].y, xq[u][1].z, xq[u][1].w};
    if (gamma) {
      float gv[8];
      unpack8(*reinterpret_cast<const u32x4*>(gamma + k0 + 32 * c + 8 * t), ac_bf16{}, gv);
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        ss = fmaf(xv[i], xv[i], ss);
        xv[i] *= gv[i];
      }
    }
    // x'' as TERMS bf16 pairs: b[term][i] holds physical k 8t + 2i, 8t + 2i + 1.
    unsigned b[TERMS][4];
#pragma unroll
    for (int term = 0; term < TERMS; ++term)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        b[term][i] = pack_bf16x2(xv[2 * i], xv[2 * i + 1]);
        xv[2 * i] -= __uint_as_float(b[term][i] << 16);
        xv[2 * i + 1] -= __uint_as_float(b[term][i] & 0xffff0000u);
      }
#pragma unroll
    for (int m = 0; m < MATS; ++m)
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        const u32x4& r0 = wv[u][m][mt][0];  // row g
        const u32x4& r1 = wv[u][m][mt][1];  // row g + 8
#pragma unroll
        for (int term = 0; term < TERMS; ++term) {
          mma_bf16_16816(acc[m][mt], r0.a, r1.a, r0.b, r1.b, b[term][0], b[term][1]);
          mma_bf16_16816(acc[m][mt], r0.c, r1.c, r0.d, r1.d, b[term][2], b[term][3]);
        }
      }
  }
}

template <int BLOCK, int MT, int UNROLL, int SPLITK, int TERMS, int BATCH, int EPI>
__device__ void gemv_mma(const GemvParams& p) {
  constexpr int WARPS = BLOCK / 32;
  constexpr int MATS = EPI == EPI_SWIGLU ? 2 : 1;
  constexpr int RT = 16 * MT;  // rows per block
  extern __shared__ float4 smem_raw[];
  float* red = reinterpret_cast<float*>(smem_raw);  // [WARPS][MATS][MT][16][8] partial tiles
  __shared__ float ss_warp[WARPS][8];
  __shared__ float inv_rms[8];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const long long K = p.K, N = p.N;
  const int B = (int)p.B < BATCH ? (int)p.B : BATCH;
  const long long kchunk = ((K + SPLITK - 1) / SPLITK + 31) / 32 * 32;
  const long long k0 = (long long)blockIdx.y * kchunk;
  const long long k1 = k0 + kchunk < K ? k0 + kchunk : K;
  const long long nchunks = k1 > k0 ? (k1 - k0) / 32 : 0;
  const long long nrounds = (nchunks + WARPS - 1) / WARPS;
  const long long row0 = (long long)blockIdx.x * RT;
  const ac_bf16* gamma = static_cast<const ac_bf16*>(p.gamma);

  // Weights do not depend on the previous kernel: start streaming them before waiting for it.
  u32x4 wa[UNROLL][MATS][MT][2], wb[UNROLL][MATS][MT][2];
  float4 xa[UNROLL][2], xb[UNROLL][2];
  mma_load_w<MT, UNROLL, MATS, WARPS>(wa, p.w, p.w2, row0, N, K, k0, nchunks, 0, warp, g, t);
  pdl_launch_dependents();
  pdl_wait();
  mma_load_x<UNROLL, WARPS>(xa, p.x, K, k0, nchunks, 0, warp, g, t, B);

  float acc[MATS][MT][4];
#pragma unroll
  for (int m = 0; m < MATS; ++m)
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[m][mt][i] = 0.0f;
  float ss = 0.0f;

  for (long long j0 = 0; j0 < nrounds; j0 += 2 * UNROLL) {
    mma_load_w<MT, UNROLL, MATS, WARPS>(wb, p.w, p.w2, row0, N, K, k0, nchunks, j0 + UNROLL, warp, g, t);
    mma_load_x<UNROLL, WARPS>(xb, p.x, K, k0, nchunks, j0 + UNROLL, warp, g, t, B);
    mma_step<MT, UNROLL, MATS, WARPS, TERMS>(acc, ss, wa, xa, gamma, k0, nchunks, j0, warp, t);
    if (j0 + UNROLL >= nrounds) break;
    mma_load_w<MT, UNROLL, MATS, WARPS>(wa, p.w, p.w2, row0, N, K, k0, nchunks, j0 + 2 * UNROLL, warp, g, t);
    mma_load_x<UNROLL, WARPS>(xa, p.x, K, k0, nchunks, j0 + 2 * UNROLL, warp, g, t, B);
    mma_step<MT, UNROLL, MATS, WARPS, TERMS>(acc, ss, wb, xb, gamma, k0, nchunks, j0 + UNROLL, warp, t);
  }

  // Each warp's partial tiles to shared memory (C fragment: rows g, g + 8; columns 2t, 2t + 1),
  // then the block adds them over the warps, one output (row, batch column) per thread.
#pragma unroll
  for (int m = 0; m < MATS; ++m)
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      float* r = red + (((long long)warp * MATS + m) * MT + mt) * 128;
      r[g * 8 + 2 * t] = acc[m][mt][0];
      r[g * 8 + 2 * t + 1] = acc[m][mt][1];
      r[(g + 8) * 8 + 2 * t] = acc[m][mt][2];
      r[(g + 8) * 8 + 2 * t + 1] = acc[m][mt][3];
    }
  if (gamma) {
    // RMSNorm's sum of squares of row g: the 4 lanes of the group, then the warps. A K slice
    // (split-K) sees part of the row only, so then the row is read again in full.
    ss += __shfl_xor_sync(0xffffffffu, ss, 1);
    ss += __shfl_xor_sync(0xffffffffu, ss, 2);
    if (t == 0) ss_warp[warp][g] = ss;
  }
  __syncthreads();
  if (gamma && threadIdx.x < 8) {
    float sum = 0.0f;
    if (SPLITK == 1) {
      for (int w = 0; w < WARPS; ++w) sum += ss_warp[w][threadIdx.x];
    } else if ((int)threadIdx.x < B) {
      for (long long k = 0; k < K; ++k) sum = fmaf(p.x[threadIdx.x * K + k], p.x[threadIdx.x * K + k], sum);
    }
    inv_rms[threadIdx.x] = 1.0f / sqrtf(sum / (float)K + p.eps);
  }
  __syncthreads();

  __shared__ unsigned long long best_k[BATCH * RT];
  for (int o = threadIdx.x; o < RT * 8; o += BLOCK) {
    const int mt = o / 128, rr = (o % 128) / 8, b = o % 8;  // tile, row in tile, batch column
    float v = 0.0f, u = 0.0f;
#pragma unroll 4
    for (int w = 0; w < WARPS; ++w) {
      v += red[((w * MATS + 0) * MT + mt) * 128 + rr * 8 + b];
      if (MATS == 2) u += red[((w * MATS + 1) * MT + mt) * 128 + rr * 8 + b];
    }
    if (gamma) {
      v *= inv_rms[b];
      u *= inv_rms[b];
    }
    const long long row = row0 + mt * 16 + rr;
    if (EPI == EPI_ARGMAX && b < BATCH) best_k[b * RT + mt * 16 + rr] = (row < N && b < B) ? argmax_key(v, row) : 0ull;
    if (row < N && b < B) gemv_epilogue<EPI, SPLITK, ac_bf16>(p, b, row, v, u);
  }

  if (EPI == EPI_ARGMAX) gemv_argmax_publish<BLOCK, BATCH>(p, best_k, RT);
}
