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
//
// gemv.mma_fp8 (gemv_mma_fp8 below) is the same kernel over FP8 e4m3 weights (W8A16, FMT
// WFMT_FP8_*): at batch 2-8 gemv.fp8 spends BATCH FMAs per widened weight with x from shared
// memory, here the widened weights go into the mma as bf16 (every e4m3 value is a bf16 value: 3
// mantissa bits, exponents -9 .. 8). Each lane loads 16 codes of a row with one 16-byte load,
// physical k 16t .. 16t + 15 of a 64-k chunk; the chunk's q-th mma (q = 0..3) takes codes 4q, 4q + 1
// as its logical k {2t, 2t + 1} and codes 4q + 2, 4q + 3 as {2t + 8, 2t + 9}, in W and x alike.
// Scales: SCALE 0, one per output row, applied to the row's sums at the end; SCALE 1, one per 128 x
// 128 block ([ceil(N / 128), ceil(K / 128)] row-major): a 64-k chunk lies in one 128-k block and a
// block's 16 * MT rows (MT <= 8) in one 128-row block, so each chunk's mma have one scale per
// matrix, folded into x before it is split into bf16 terms. Requires K % 64 == 0; gamma and the
// bias bf16.
#pragma once
#include "common/mma.cuh"
#include "common/params.h"
#include "common/pdl.cuh"
#include "common/reduce.cuh"
#include "common/vec.cuh"
#include "gemv/common.cuh"


// This lane's weights for chunk rounds j0 .. j0 + UNROLL - 1: rows g and g + 8 of each 16-row
// tile, 16 bytes at physical k CK/4 * t of the chunk of CK (8 bf16 of a 32-k chunk, 16 FP8 codes
// of a 64-k one; ES bytes per weight); zeros past the slice or the last row.
template <int MT, int UNROLL, int MATS, int WARPS, int CK, int ES>
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
          const unsigned char* w = static_cast<const unsigned char*>(m == 0 ? w0 : w1);
          if (c < nchunks && row < N) wv[u][m][mt][h] = load_stream16(w + (row * K + k0 + CK * c + CK / 4 * t) * ES);
          else wv[u][m][mt][h] = u32x4{0u, 0u, 0u, 0u};
        }
  }
}

// The same chunks of x, batch row g (the mma's column g), CK / 4 values, straight from global
// memory: each element of x is used by one warp of the block, so staging it would buy no reuse.
template <int UNROLL, int WARPS, int CK>
__device__ __forceinline__ void mma_load_x(float4 (&xv)[UNROLL][CK / 16], const float* x, long long K, long long k0,
                                           long long nchunks, long long j0, int warp, int g, int t, int B) {
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) {
    const long long c = (j0 + u) * WARPS + warp;
    const bool in = c < nchunks && g < B;
    const float4* px = reinterpret_cast<const float4*>(x + g * K + k0 + CK * c + CK / 4 * t);
#pragma unroll
    for (int i = 0; i < CK / 16; ++i) xv[u][i] = in ? px[i] : make_float4(0.f, 0.f, 0.f, 0.f);
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

// Four e4m3 codes (one 32-bit word, code i in byte i) as two bf16 pairs: lo = codes 0, 1; hi = 2, 3.
__device__ __forceinline__ void fp8x4_to_bf16x2(unsigned w, unsigned& lo, unsigned& hi) {
  float f[4];
  unpack_fp8x4(w, f);  // exact
  lo = pack_bf16x2(f[0], f[1]);  // exact: every e4m3 value is a bf16 value
  hi = pack_bf16x2(f[2], f[3]);
}
// fp8x4_to_bf16x2 (BITS false: cvt) or fp8x4_to_bf16x2_bits (true: bit moves, the same bits).
template <bool BITS>
__device__ __forceinline__ void fp8x4_to_bf16x2_as(unsigned w, unsigned& lo, unsigned& hi) {
  if constexpr (BITS) fp8x4_to_bf16x2_bits(w, lo, hi);
  else fp8x4_to_bf16x2(w, lo, hi);
}

// x'' (16 values, scaled by s) as TERMS bf16 pairs: b[term][i] holds physical k 16t + 2i, 16t + 2i + 1.
template <int TERMS>
__device__ __forceinline__ void mma_split_x_fp8(unsigned (&b)[TERMS][8], const float (&x)[16], float s) {
  float r[16];
#pragma unroll
  for (int i = 0; i < 16; ++i) r[i] = x[i] * s;
#pragma unroll
  for (int term = 0; term < TERMS; ++term)
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      b[term][i] = pack_bf16x2(r[2 * i], r[2 * i + 1]);
      r[2 * i] -= __uint_as_float(b[term][i] << 16);
      r[2 * i + 1] -= __uint_as_float(b[term][i] & 0xffff0000u);
    }
}

// mma_step over FP8 chunks of 64 k: acc[m][mt] += W_m tile . x''^T (x'' = x * gamma, and with block
// scales * the chunk's scale of W_m); ss gathers this lane's sum of x^2 for the norm.
template <int MT, int UNROLL, int MATS, int WARPS, int TERMS, int FMT>
__device__ __forceinline__ void mma_step_fp8(float (&acc)[MATS][MT][4], float& ss, const u32x4 (&wv)[UNROLL][MATS][MT][2],
                                             const float4 (&xq)[UNROLL][4], const ac_bf16* gamma, const GemvParams& p,
                                             long long row0, long long k0, long long nchunks, long long j0, int warp, int t) {
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) {
    const long long c = (j0 + u) * WARPS + warp;
    if (c >= nchunks) continue;  // warp-uniform
    float xv[16];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      xv[4 * i] = xq[u][i].x;
      xv[4 * i + 1] = xq[u][i].y;
      xv[4 * i + 2] = xq[u][i].z;
      xv[4 * i + 3] = xq[u][i].w;
    }
    if (gamma) {
      float gv[16];
      const u32x4* pg = reinterpret_cast<const u32x4*>(gamma + k0 + 64 * c + 16 * t);
      unpack8(pg[0], ac_bf16{}, gv);
      unpack8(pg[1], ac_bf16{}, gv + 8);
#pragma unroll
      for (int i = 0; i < 16; ++i) {
        ss = fmaf(xv[i], xv[i], ss);
        xv[i] *= gv[i];
      }
    }
    // One set of x terms for all matrices (row scales), or one per matrix (its block's scale).
    constexpr int XS = wfmt_layout(FMT) == WFMT_FP8_BLOCK ? MATS : 1;
    unsigned b[XS][TERMS][8];
#pragma unroll
    for (int m = 0; m < XS; ++m) {
      float s = 1.0f;
      if (wfmt_layout(FMT) == WFMT_FP8_BLOCK) {
        const long long sk = (p.K + 127) / 128;
        s = (m == 0 ? p.w_scale : p.w2_scale)[(row0 / 128) * sk + (k0 + 64 * c) / 128];
      }
      mma_split_x_fp8<TERMS>(b[m], xv, s);
    }
#pragma unroll
    for (int m = 0; m < MATS; ++m)
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        const unsigned r0[4] = {wv[u][m][mt][0].a, wv[u][m][mt][0].b, wv[u][m][mt][0].c, wv[u][m][mt][0].d};  // row g
        const unsigned r1[4] = {wv[u][m][mt][1].a, wv[u][m][mt][1].b, wv[u][m][mt][1].c, wv[u][m][mt][1].d};  // row g + 8
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          unsigned a0, a2, a1, a3;
          fp8x4_to_bf16x2_as<(FMT & WFMT_FP8_BITS) != 0>(r0[q], a0, a2);
          fp8x4_to_bf16x2_as<(FMT & WFMT_FP8_BITS) != 0>(r1[q], a1, a3);
          const int xm = wfmt_layout(FMT) == WFMT_FP8_BLOCK ? m : 0;
#pragma unroll
          for (int term = 0; term < TERMS; ++term)
            mma_bf16_16816(acc[m][mt], a0, a1, a2, a3, b[xm][term][2 * q], b[xm][term][2 * q + 1]);
        }
      }
  }
}

// The block's end, after every warp accumulated its tiles (acc) and its lane's sum of x^2 (ss):
// each warp's partial tiles to shared memory (C fragment: rows g, g + 8; columns 2t, 2t + 1), the
// block adds them over the warps, one output (row, batch column) per thread, applies RMSNorm's
// 1 / rms per batch column and, where given, a scale per output row (rs0, rs1: FP8 channel
// scales of W and W2), then the epilogue.
template <int BLOCK, int MT, int MATS, int SPLITK, int BATCH, int EPI>
__device__ __forceinline__ void mma_finish(const GemvParams& p, const float (&acc)[MATS][MT][4], float ss, float* red,
                                           long long row0, int B, const float* rs0, const float* rs1) {
  constexpr int WARPS = BLOCK / 32;
  constexpr int RT = 16 * MT;
  __shared__ float ss_warp[WARPS][8];
  __shared__ float inv_rms[8];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const long long K = p.K, N = p.N;
  const bool norm = p.gamma != nullptr;
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
  if (norm) {
    // RMSNorm's sum of squares of row g: the 4 lanes of the group, then the warps. A K slice
    // (split-K) sees part of the row only, so then the row is read again in full.
    ss += __shfl_xor_sync(0xffffffffu, ss, 1);
    ss += __shfl_xor_sync(0xffffffffu, ss, 2);
    if (t == 0) ss_warp[warp][g] = ss;
  }
  __syncthreads();
  if (norm && threadIdx.x < 8) {
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
    if (norm) {
      v *= inv_rms[b];
      u *= inv_rms[b];
    }
    const long long row = row0 + mt * 16 + rr;
    if (rs0 && row < N) {
      v *= rs0[row];
      if (MATS == 2) u *= rs1[row];
    }
    if (EPI == EPI_ARGMAX && b < BATCH) best_k[b * RT + mt * 16 + rr] = (row < N && b < B) ? argmax_key(v, row) : 0ull;
    if (row < N && b < B) gemv_epilogue<EPI, SPLITK, ac_bf16>(p, b, row, v, u);
  }

  if (EPI == EPI_ARGMAX) gemv_argmax_publish<BLOCK, BATCH>(p, best_k, RT);
}

template <int BLOCK, int MT, int UNROLL, int SPLITK, int TERMS, int BATCH, int EPI, int FMT = WFMT_16>
__device__ void gemv_mma(const GemvParams& p) {
  constexpr int WARPS = BLOCK / 32;
  constexpr int MATS = EPI == EPI_SWIGLU ? 2 : 1;
  constexpr int RT = 16 * MT;  // rows per block
  constexpr int CK = FMT == WFMT_16 ? 32 : 64;  // k per chunk: 16 bytes of weights per lane and row
  static_assert(wfmt_layout(FMT) != WFMT_FP8_BLOCK || 128 % RT == 0, "a block's rows must lie in one 128-row scale block");
  extern __shared__ float4 smem_raw[];
  float* red = reinterpret_cast<float*>(smem_raw);  // [WARPS][MATS][MT][16][8] partial tiles
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const long long K = p.K, N = p.N;
  const int B = (int)p.B < BATCH ? (int)p.B : BATCH;
  const long long kchunk = ((K + SPLITK - 1) / SPLITK + CK - 1) / CK * CK;
  const long long k0 = (long long)blockIdx.y * kchunk;
  const long long k1 = k0 + kchunk < K ? k0 + kchunk : K;
  const long long nchunks = k1 > k0 ? (k1 - k0) / CK : 0;
  const long long nrounds = (nchunks + WARPS - 1) / WARPS;
  const long long row0 = (long long)blockIdx.x * RT;
  const ac_bf16* gamma = static_cast<const ac_bf16*>(p.gamma);
  constexpr int ES = FMT == WFMT_16 ? 2 : 1;
  auto step = [&](const u32x4 (&wv)[UNROLL][MATS][MT][2], const float4 (&xq)[UNROLL][CK / 16], long long j0,
                  float (&acc)[MATS][MT][4], float& ss) {
    if constexpr (FMT == WFMT_16) mma_step<MT, UNROLL, MATS, WARPS, TERMS>(acc, ss, wv, xq, gamma, k0, nchunks, j0, warp, t);
    else mma_step_fp8<MT, UNROLL, MATS, WARPS, TERMS, FMT>(acc, ss, wv, xq, gamma, p, row0, k0, nchunks, j0, warp, t);
  };

  // Weights do not depend on the previous kernel: start streaming them before waiting for it.
  u32x4 wa[UNROLL][MATS][MT][2], wb[UNROLL][MATS][MT][2];
  float4 xa[UNROLL][CK / 16], xb[UNROLL][CK / 16];
  mma_load_w<MT, UNROLL, MATS, WARPS, CK, ES>(wa, p.w, p.w2, row0, N, K, k0, nchunks, 0, warp, g, t);
  pdl_launch_dependents();
  pdl_wait();
  mma_load_x<UNROLL, WARPS, CK>(xa, p.x, K, k0, nchunks, 0, warp, g, t, B);

  float acc[MATS][MT][4];
#pragma unroll
  for (int m = 0; m < MATS; ++m)
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[m][mt][i] = 0.0f;
  float ss = 0.0f;

  for (long long j0 = 0; j0 < nrounds; j0 += 2 * UNROLL) {
    mma_load_w<MT, UNROLL, MATS, WARPS, CK, ES>(wb, p.w, p.w2, row0, N, K, k0, nchunks, j0 + UNROLL, warp, g, t);
    mma_load_x<UNROLL, WARPS, CK>(xb, p.x, K, k0, nchunks, j0 + UNROLL, warp, g, t, B);
    step(wa, xa, j0, acc, ss);
    if (j0 + UNROLL >= nrounds) break;
    mma_load_w<MT, UNROLL, MATS, WARPS, CK, ES>(wa, p.w, p.w2, row0, N, K, k0, nchunks, j0 + 2 * UNROLL, warp, g, t);
    mma_load_x<UNROLL, WARPS, CK>(xa, p.x, K, k0, nchunks, j0 + 2 * UNROLL, warp, g, t, B);
    step(wb, xb, j0 + UNROLL, acc, ss);
  }

  const bool rows_scaled = wfmt_layout(FMT) == WFMT_FP8_CHANNEL;
  mma_finish<BLOCK, MT, MATS, SPLITK, BATCH, EPI>(p, acc, ss, red, row0, B, rows_scaled ? p.w_scale : nullptr,
                                                  rows_scaled ? p.w2_scale : nullptr);
}

// gemv.mma_fp8: gemv.mma over FP8 e4m3 weights, SCALE 0 per output row, 1 per 128 x 128 block;
// the codes widened to bf16 through cvt and f32 (CVT 0) or by bit moves (CVT 1, the same bits).
template <int BLOCK, int MT, int UNROLL, int SPLITK, int TERMS, int BATCH, int EPI, int SCALE, int CVT>
__device__ void gemv_mma_fp8(const GemvParams& p) {
  constexpr int FMT = (SCALE == 0 ? WFMT_FP8_CHANNEL : WFMT_FP8_BLOCK) | (CVT == 1 ? WFMT_FP8_BITS : 0);
  gemv_mma<BLOCK, MT, UNROLL, SPLITK, TERMS, BATCH, EPI, FMT>(p);
}
