// Fused decode GEMV: y[b, n] = sum_k W[n, k] * x'[b, k] for B <= BATCH rows of x, where x' is x or
// RMSNorm(x) * gamma, followed by an epilogue. Memory-bound: every weight byte is read once with
// 16-byte streaming loads; x' is staged in shared memory (this split's K slice, all B rows).
//
// Parameters (the family's search space):
//   BLOCK   threads per block; WARPS = BLOCK / 32, each warp owns ROWS consecutive output rows
//   ROWS    output rows per warp (x reuse from shared memory vs registers)
//   UNROLL  16-byte chunks per lane per row in flight (double-buffered)
//   SPLITK  K split over gridDim.y (RESIDUAL only: partial sums are added by reductions, a warp's 2 or 4
//           rows by one vector reduction)
//   BATCH   largest B handled (x rows), 1 for batch-1 decode
//   EPI     STORE | RESIDUAL (out += y) | SWIGLU (out = silu(W x) * (W2 x)) | ARGMAX (store + the
//           block's best logit into p.best; argmax_finish, launched next, picks the token)
// Grid: (ceil(N / (WARPS * ROWS)), SPLITK); dynamic shared memory: BATCH * kchunk floats,
// kchunk = ceil(K / SPLITK) rounded up to 8. Requires K % 8 == 0 and 16-bit weights.
//
// gemv.fp8 (gemv_fp8 below) is the same kernel over FP8 e4m3 weights (W8A16: one byte per weight,
// 16 per 16-byte chunk, converted exactly to f32 in registers) with f32 scales (p.w_scale, and
// p.w2_scale for SWIGLU's up projection), SCALE: 0 one per output row (applied to the row's
// sum), 1 one per 128 x 128 block, [ceil(N / 128), ceil(K / 128)] row-major (applied to each
// chunk's partial sum; the block's rows lie in one 128-row block, so its scales are staged in
// shared memory after x': MATS * ceil(K / 128) floats more). W is then the 16-bit type of gamma
// and the bias. kchunk rounds up to 16; requires K % 16 == 0.
#pragma once
#include "common/params.h"
#include "common/pdl.cuh"
#include "common/reduce.cuh"
#include "common/vec.cuh"
#include "gemv/common.cuh"

// gemv's FMT (gemv/common.cuh WFMT_*): 16-bit W, 8 per 16-byte chunk; or FP8 e4m3 bytes, 16 per
// chunk, with a scale per output row or per 128 x 128 block.

// Four values of x (from x[0]) and of gamma (from gamma[k], when gamma is set: offset here, after
// the null check), 16-byte / 8-byte aligned; past the end (in false) zeros.
template <typename W>
__device__ __forceinline__ void gemv_load4(const float* x, const W* gamma, long long k, bool in, float4& v, uint2& g) {
  v = in ? *reinterpret_cast<const float4*>(x) : make_float4(0.f, 0.f, 0.f, 0.f);
  g = in && gamma ? *reinterpret_cast<const uint2*>(gamma + k) : make_uint2(0u, 0u);
}
template <typename W>
__device__ __forceinline__ float4 gemv_scale4(float4 v, const uint2& g) {
  const W w[4] = {W{(unsigned short)(g.x & 0xffffu)}, W{(unsigned short)(g.x >> 16)}, W{(unsigned short)(g.y & 0xffffu)},
                  W{(unsigned short)(g.y >> 16)}};
  return make_float4(v.x * to_f32(w[0]), v.y * to_f32(w[1]), v.z * to_f32(w[2]), v.w * to_f32(w[3]));
}

// Calls use(j, v, g) for every float4 j < nv of x this thread stages (j = threadIdx.x + i * BLOCK,
// i < 4, then 4 * BLOCK further on): v = x[4j .. 4j + 3], g their gamma values (from gamma[goff +
// 4j]); zeros where !row_ok or 4j >= limit. Each pass issues the loads of up to 4 float4 (and
// their gamma) before using any, so it costs one L2 round trip; a scalar loop left its loads
// between branches and they went out one after another (1-2% of a W2 step on the target models:
// bench/results/2026-12-01-stage-x-vector/). The 24 registers held here raise some points' counts
// (fewer blocks per SM), which the search sees; cp.async instead was slower still.
template <int BLOCK, typename W, typename Use>
__device__ __forceinline__ void gemv_each_x4(const float* x, const W* gamma, long long goff, long long nv, long long limit,
                                             bool row_ok, Use use) {
  for (long long j0 = threadIdx.x; j0 < nv; j0 += 4 * BLOCK) {
    float4 v[4];
    uint2 g[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const long long j = j0 + i * BLOCK;
      gemv_load4<W>(x + 4 * j, gamma, goff + 4 * j, row_ok && j < nv && 4 * j < limit, v[i], g[i]);
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const long long j = j0 + i * BLOCK;
      if (j < nv) use(j, v[i], g[i]);
    }
  }
}

// Stages this block's K slice of x': xs[b * kchunk + kk] = x'[b, k0 + kk] for kk < kchunk (zero
// past k1 and for rows b >= B). RMSNorm needs the whole row's sum of squares, so each block
// reads all of x once for it.
template <int BLOCK, int BATCH, typename W>
__device__ __forceinline__ void gemv_stage_x(const GemvParams& p, float* xs, long long k0, long long k1,
                                             long long kchunk) {
  __shared__ float scratch[BLOCK / 32];
  __shared__ float inv_rms[BATCH];
  const long long K = p.K;
  const int B = (int)p.B;
  if (p.gamma) {
    for (int b = 0; b < BATCH; ++b) {
      if (b >= B) break;
      float ss = 0.0f;
      for (long long k = threadIdx.x; k < K; k += BLOCK) {
        const float v = p.x[b * K + k];
        ss += v * v;
      }
      ss = block_sum<BLOCK>(ss, scratch);
      if (threadIdx.x == 0) inv_rms[b] = 1.0f / sqrtf(ss / (float)K + p.eps);
    }
    __syncthreads();
  }
  // k0, k1 and kchunk are multiples of 8: whole float4.
  const W* gamma = static_cast<const W*>(p.gamma);
  for (int b = 0; b < BATCH; ++b) {
    const float r = gamma && b < B ? inv_rms[b] : 0.0f;
    gemv_each_x4<BLOCK, W>(p.x + b * K + k0, gamma, k0, kchunk / 4, k1 - k0, b < B, [&](long long j, float4 a, const uint2& g) {
      if (gamma) a = gemv_scale4<W>(make_float4(a.x * r, a.y * r, a.z * r, a.w * r), g);
      *reinterpret_cast<float4*>(xs + b * kchunk + 4 * j) = a;
    });
  }
  __syncthreads();
}

// gemv.fused's staging when this slice is the whole row (SPLITK 1): xs = gamma * x (or x) in one
// pass (gemv_each_x4) that also sums each warp's squares into ss_part[b][warp]; the RMSNorm's
// 1/rms is applied to the outputs instead (gemv_inv_rms), so its block reduction is off the path
// between the wait for the previous kernel and the first FMA. Requires kchunk % 4 == 0 (a
// multiple of 8). Ends with __syncthreads.
template <int BLOCK, int BATCH, typename W>
__device__ __forceinline__ void gemv_stage_x_deferred(const GemvParams& p, float* xs, float (*ss_part)[BLOCK / 32],
                                                      long long kchunk) {
  const long long K = p.K;
  const int B = (int)p.B;
  const W* gamma = static_cast<const W*>(p.gamma);
  for (int b = 0; b < BATCH; ++b) {
    float ss = 0.0f;
    gemv_each_x4<BLOCK, W>(p.x + b * K, gamma, 0, kchunk / 4, K, b < B, [&](long long j, const float4& v, const uint2& g) {
      ss += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
      *reinterpret_cast<float4*>(xs + b * kchunk + 4 * j) = gamma ? gemv_scale4<W>(v, g) : v;
    });
    ss = warp_sum(ss);
    if (threadIdx.x % 32 == 0) ss_part[b][threadIdx.x / 32] = ss;
  }
  __syncthreads();
}

// 1 / rms of batch row b from the warps' partial sums of squares (gemv_stage_x_deferred).
template <int BLOCK>
__device__ __forceinline__ float gemv_inv_rms(const GemvParams& p, const float* ss_part_b) {
  float ss = 0.0f;
#pragma unroll
  for (int w = 0; w < BLOCK / 32; ++w) ss += ss_part_b[w];
  return 1.0f / sqrtf(ss / (float)p.K + p.eps);
}

// gemv.merged's staging (PARTS > 0; no norm): x'[b, k] is the attention's output, merged here
// from attn_decode.parts's PARTS partials (attention/decode_parts.cuh; GemvParams::part_ml): the
// softmax of their maxima and sums weighs their unnormalised P.V, with the operations of
// attn_decode.cluster's merge in its order (the same outputs). Each float4 of x' costs PARTS
// float4 and PARTS (max, sum) loads from L2, all issued before any is used.
template <int BLOCK, int BATCH, int PARTS>
__device__ __forceinline__ void gemv_stage_parts(const GemvParams& p, float* xs, long long k0, long long k1,
                                                 long long kchunk) {
  const long long K = p.K, hd = p.part_hd, gh = p.part_group * p.part_hd;
  for (int b = 0; b < BATCH; ++b)
    for (long long j = threadIdx.x; j < kchunk / 4; j += BLOCK) {
      float4 a = make_float4(0.f, 0.f, 0.f, 0.f);
      if (b < (int)p.B && k0 + 4 * j < k1) {
        const long long e = b * K + k0 + 4 * j;  // in (token, KV head) unit e / gh at offset e % gh
        const long long unit = e / gh, in = e - unit * gh;
        const float* src = p.x + unit * PARTS * gh + in;
        const float2* ml = reinterpret_cast<const float2*>(p.part_ml) + unit * PARTS * p.part_group + in / hd;
        float4 o[PARTS];
        float2 s[PARTS];
#pragma unroll
        for (int r = 0; r < PARTS; ++r) {
          o[r] = *reinterpret_cast<const float4*>(src + r * gh);
          s[r] = ml[r * p.part_group];
        }
        float mx = AC_NEG_INF;
#pragma unroll
        for (int r = 0; r < PARTS; ++r) mx = fmaxf(mx, s[r].x);
        float sum = 0.0f;
#pragma unroll
        for (int r = 0; r < PARTS; ++r) {
          const float w = s[r].x == AC_NEG_INF ? 0.0f : expf(s[r].x - mx);  // empty shares weigh nothing
          sum = fmaf(w, s[r].y, sum);
          a = make_float4(fmaf(w, o[r].x, a.x), fmaf(w, o[r].y, a.y), fmaf(w, o[r].z, a.z), fmaf(w, o[r].w, a.w));
        }
        a = make_float4(a.x / sum, a.y / sum, a.z / sum, a.w / sum);
      }
      *reinterpret_cast<float4*>(xs + b * kchunk + 4 * j) = a;
    }
  __syncthreads();
}

// Loads this lane's next UNROLL chunks of ROWS rows of each matrix (w0, and w1 for SWIGLU); FP8
// weights (FMT) are bytes whatever W says.
template <int ROWS, int UNROLL, int MATS, typename W, int FMT = WFMT_16>
__device__ __forceinline__ void gemv_load(u32x4 (&wv)[UNROLL][MATS][ROWS], const W* w0, const W* w1, long long row0,
                                          long long N, long long K, long long k0, long long nchunks, long long c0,
                                          int lane) {
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) {
    const long long c = c0 + 32 * u + lane;
#pragma unroll
    for (int m = 0; m < MATS; ++m)
#pragma unroll
      for (int r = 0; r < ROWS; ++r) {
        const long long row = row0 + r;
        if constexpr (FMT == WFMT_16) {
          if (c < nchunks && row < N) wv[u][m][r] = load_stream16((m == 0 ? w0 : w1) + row * K + k0 + 8 * c);
          else wv[u][m][r] = u32x4{0u, 0u, 0u, 0u};
        } else {
          const unsigned char* wm = reinterpret_cast<const unsigned char*>(m == 0 ? w0 : w1);
          if (c < nchunks && row < N) wv[u][m][r] = load_stream16(wm + row * K + k0 + 16 * c);
          else wv[u][m][r] = u32x4{0u, 0u, 0u, 0u};
        }
      }
  }
}

// t[m][r][b] += f[m][r] . x'[b, off .. off + 7] (xs: the staged x', kchunk apart per batch row).
template <int ROWS, int MATS, int BATCH>
__device__ __forceinline__ void gemv_dot8(float (&t)[MATS][ROWS][BATCH], const float (&f)[MATS][ROWS][8], const float* xs,
                                          long long kchunk, long long off) {
#pragma unroll
  for (int b = 0; b < BATCH; ++b) {
    const float4* px = reinterpret_cast<const float4*>(xs + b * kchunk + off);
    const float4 lo = px[0], hi = px[1];
    const float xv[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
    for (int m = 0; m < MATS; ++m)
#pragma unroll
      for (int r = 0; r < ROWS; ++r)
#pragma unroll
        for (int i = 0; i < 8; ++i) t[m][r][b] = fmaf(f[m][r][i], xv[i], t[m][r][b]);
  }
}

// FP8 chunks (FMT != WFMT_16): each half of 8 weights widened in turn, the chunk's partial sum
// scaled by its 128 x 128 block's scale (sc: this block's row of block scales per matrix, sk
// apart; k0 the slice's first column) or added as is (per-row scales come in the epilogue).
template <int ROWS, int UNROLL, int MATS, int BATCH, int FMT>
__device__ __forceinline__ void gemv_fma_fp8(float (&acc)[MATS][ROWS][BATCH], const u32x4 (&wv)[UNROLL][MATS][ROWS],
                                             const float* xs, long long kchunk, long long nchunks, long long c0, int lane,
                                             const float* sc, long long sk, long long k0) {
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) {
    const long long c = c0 + 32 * u + lane;
    if (c >= nchunks) continue;
    float part[MATS][ROWS][BATCH];
#pragma unroll
    for (int m = 0; m < MATS; ++m)
#pragma unroll
      for (int r = 0; r < ROWS; ++r)
#pragma unroll
        for (int b = 0; b < BATCH; ++b) part[m][r][b] = 0.0f;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float f[MATS][ROWS][8];
#pragma unroll
      for (int m = 0; m < MATS; ++m)
#pragma unroll
        for (int r = 0; r < ROWS; ++r) {
          unpack_fp8x4_as<(FMT & WFMT_FP8_BITS) != 0>(h == 0 ? wv[u][m][r].a : wv[u][m][r].c, f[m][r]);
          unpack_fp8x4_as<(FMT & WFMT_FP8_BITS) != 0>(h == 0 ? wv[u][m][r].b : wv[u][m][r].d, f[m][r] + 4);
        }
      gemv_dot8<ROWS, MATS, BATCH>(part, f, xs, kchunk, 16 * c + 8 * h);
    }
#pragma unroll
    for (int m = 0; m < MATS; ++m) {
      const float s = wfmt_layout(FMT) == WFMT_FP8_BLOCK ? sc[m * sk + (k0 + 16 * c) / 128] : 1.0f;
#pragma unroll
      for (int r = 0; r < ROWS; ++r)
#pragma unroll
        for (int b = 0; b < BATCH; ++b) acc[m][r][b] = fmaf(s, part[m][r][b], acc[m][r][b]);
    }
  }
}

// acc[m][r][b] += W_m[row r, chunk] . x'[b, chunk] for this lane's UNROLL chunks. The weights are
// widened once per chunk; x' is read from shared memory one batch row at a time (registers stay
// bounded by ROWS * MATS * 8 + 8 however large BATCH is).
template <int ROWS, int UNROLL, int MATS, int BATCH, typename W, int FMT = WFMT_16>
__device__ __forceinline__ void gemv_fma(float (&acc)[MATS][ROWS][BATCH], const u32x4 (&wv)[UNROLL][MATS][ROWS],
                                         const float* xs, long long kchunk, long long nchunks, long long c0, int lane,
                                         const float* sc = nullptr, long long sk = 0, long long k0 = 0) {
  if constexpr (FMT != WFMT_16) {
    gemv_fma_fp8<ROWS, UNROLL, MATS, BATCH, FMT>(acc, wv, xs, kchunk, nchunks, c0, lane, sc, sk, k0);
    return;
  }
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) {
    const long long c = c0 + 32 * u + lane;
    if (c >= nchunks) continue;
    float f[MATS][ROWS][8];
#pragma unroll
    for (int m = 0; m < MATS; ++m)
#pragma unroll
      for (int r = 0; r < ROWS; ++r) unpack8(wv[u][m][r], W{}, f[m][r]);
    gemv_dot8<ROWS, MATS, BATCH>(acc, f, xs, kchunk, 8 * c);
  }
}

// acc = the ROWS rows of each matrix from row0 times x' over this K slice, with two load buffers
// in turn (wa holds the first chunks, loaded by the caller); before_last() runs once, when the
// last loads are issued, so a caller can put its next loads in flight behind them.
template <int ROWS, int UNROLL, int MATS, int BATCH, typename W, int FMT = WFMT_16, typename F>
__device__ __forceinline__ void gemv_stream(float (&acc)[MATS][ROWS][BATCH], u32x4 (&wa)[UNROLL][MATS][ROWS],
                                            u32x4 (&wb)[UNROLL][MATS][ROWS], const W* w0, const W* w1, long long row0,
                                            long long N, long long K, long long k0, long long nchunks, const float* xs,
                                            long long kchunk, int lane, F&& before_last, const float* sc = nullptr,
                                            long long sk = 0) {
#pragma unroll
  for (int m = 0; m < MATS; ++m)
#pragma unroll
    for (int r = 0; r < ROWS; ++r)
#pragma unroll
      for (int b = 0; b < BATCH; ++b) acc[m][r][b] = 0.0f;
  constexpr long long STEP = 32 * UNROLL;
  for (long long c0 = 0; c0 < nchunks; c0 += 2 * STEP) {
    gemv_load<ROWS, UNROLL, MATS, W, FMT>(wb, w0, w1, row0, N, K, k0, nchunks, c0 + STEP, lane);
    if (c0 + 2 * STEP >= nchunks) before_last();
    gemv_fma<ROWS, UNROLL, MATS, BATCH, W, FMT>(acc, wa, xs, kchunk, nchunks, c0, lane, sc, sk, k0);
    if (c0 + STEP >= nchunks) break;
    gemv_load<ROWS, UNROLL, MATS, W, FMT>(wa, w0, w1, row0, N, K, k0, nchunks, c0 + 2 * STEP, lane);
    gemv_fma<ROWS, UNROLL, MATS, BATCH, W, FMT>(acc, wb, xs, kchunk, nchunks, c0 + STEP, lane, sc, sk, k0);
  }
}

// PARTS > 0: gemv.merged, x' merged from the attention's partials (gemv_stage_parts). FMT: the
// weights' storage (WFMT_*; FP8 for gemv.fp8).
template <int BLOCK, int ROWS, int UNROLL, int SPLITK, int BATCH, int EPI, typename W, int PARTS = 0, int FMT = WFMT_16>
__device__ void gemv(const GemvParams& p) {
  constexpr int WARPS = BLOCK / 32;
  constexpr int MATS = EPI == EPI_SWIGLU ? 2 : 1;
  extern __shared__ float4 xs_raw[];
  float* xs = reinterpret_cast<float*>(xs_raw);  // [BATCH][kchunk]
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const long long K = p.K, N = p.N;
  const int B = (int)p.B;
  constexpr int EPC = FMT == WFMT_16 ? 8 : 16;  // weights per 16-byte chunk
  const long long kchunk = ((K + SPLITK - 1) / SPLITK + EPC - 1) / EPC * EPC;
  const long long k0 = (long long)blockIdx.y * kchunk;
  const long long k1 = k0 + kchunk < K ? k0 + kchunk : K;
  const long long nchunks = k1 > k0 ? (k1 - k0) / EPC : 0;
  const long long row0 = ((long long)blockIdx.x * WARPS + warp) * ROWS;
  const W* w0 = static_cast<const W*>(p.w);
  const W* w1 = static_cast<const W*>(p.w2);

  // Weights do not depend on the previous kernel: start streaming them before waiting for it.
  u32x4 wa[UNROLL][MATS][ROWS], wb[UNROLL][MATS][ROWS];
  gemv_load<ROWS, UNROLL, MATS, W, FMT>(wa, w0, w1, row0, N, K, k0, nchunks, 0, lane);
  // The grid fits on the chip at once, so the next kernel may be scheduled now: its blocks start
  // streaming their weights while this one finishes.
  pdl_launch_dependents();
  pdl_wait();

  // Stage x' for this K slice: RMSNorm over the full row when gamma is given (with one slice, the
  // 1/rms scales the outputs instead: measured in bench/results/2026-11-30-deferred-norm/).
  __shared__ float ss_part[BATCH][WARPS];
  const bool deferred = PARTS == 0 && SPLITK == 1 && p.gamma != nullptr;
  // FP8 block scales of the block's 128-row block, after x' (the staging below ends with a barrier).
  float* sc = nullptr;
  long long sk = 0;
  if constexpr (wfmt_layout(FMT) == WFMT_FP8_BLOCK) {
    sc = xs + BATCH * kchunk;
    sk = (K + 127) / 128;
    const long long rb = (long long)blockIdx.x * WARPS * ROWS / 128;
    for (long long i = threadIdx.x; i < MATS * sk; i += BLOCK)
      sc[i] = (i < sk ? p.w_scale : p.w2_scale)[rb * sk + i % sk];
  }
  if constexpr (PARTS > 0) gemv_stage_parts<BLOCK, BATCH, PARTS>(p, xs, k0, k1, kchunk);
  else if (SPLITK == 1) gemv_stage_x_deferred<BLOCK, BATCH, W>(p, xs, ss_part, kchunk);
  else gemv_stage_x<BLOCK, BATCH, W>(p, xs, k0, k1, kchunk);
  AC_TIMELINE_MARK(0);  // developer timeline: x' staged

  float acc[MATS][ROWS][BATCH];
  gemv_stream<ROWS, UNROLL, MATS, BATCH, W, FMT>(acc, wa, wb, w0, w1, row0, N, K, k0, nchunks, xs, kchunk, lane, [] {}, sc,
                                                 sk);
  AC_TIMELINE_MARK(1);  // thread 0's rows accumulated

  // Split-K partial sums of the warp's ROWS (2 or 4) consecutive rows: one vector reduction per
  // batch row instead of one per output. Half the L2 atomics at ROWS 2: W2 decode -0.5% (Qwen3-1.7B),
  // -0.4% (Qwen3-4B), -0.1% (Llama-3.2-1B) on the H200 (bench/results/2026-12-02-smem-b/, run 5).
  if constexpr (EPI == EPI_RESIDUAL && SPLITK > 1 && (ROWS == 2 || ROWS == 4)) {
    float vs[BATCH][ROWS];
#pragma unroll
    for (int r = 0; r < ROWS; ++r)
#pragma unroll
      for (int b = 0; b < BATCH; ++b) vs[b][r] = warp_sum(acc[0][r][b]);
    if constexpr (wfmt_layout(FMT) == WFMT_FP8_CHANNEL)  // the rows' scales (per-row FP8 weights)
#pragma unroll
      for (int r = 0; r < ROWS; ++r)
#pragma unroll
        for (int b = 0; b < BATCH; ++b) vs[b][r] *= row0 + r < N ? p.w_scale[row0 + r] : 1.0f;
    if (lane != 0) return;
#pragma unroll
    for (int b = 0; b < BATCH; ++b) {
      if (b >= B) break;
      const long long at = b * N + row0;
      // By element index (p.out itself checked once): the address form took 7 more registers
      // (48 -> 55 at 128:2:1:8), a block fewer per SM, Qwen3-4B's W2 +3.9%.
      const bool aligned = at % ROWS == 0 && reinterpret_cast<unsigned long long>(p.out) % 16 == 0;
      if (row0 + ROWS <= N && aligned && !(p.bias && blockIdx.y == 0)) {
        if constexpr (ROWS == 2) red_add2(p.out + at, vs[b][0], vs[b][1]);
        else red_add4(p.out + at, make_float4(vs[b][0], vs[b][1], vs[b][2], vs[b][3]));
      } else {  // the last rows of N, a misaligned batch row, or the bias to add: one output at a time
#pragma unroll
        for (int r = 0; r < ROWS; ++r)
          if (row0 + r < N) gemv_epilogue<EPI, SPLITK, W>(p, b, row0 + r, vs[b][r], 0.0f);
      }
    }
    return;
  }
  // Epilogue: lane 0 of each warp owns its rows' results.
  __shared__ unsigned long long best_k[BATCH][WARPS * ROWS];
#pragma unroll
  for (int r = 0; r < ROWS; ++r)
#pragma unroll
    for (int b = 0; b < BATCH; ++b) {
      float v = warp_sum(acc[0][r][b]);
      float u = MATS == 2 ? warp_sum(acc[MATS - 1][r][b]) : 0.0f;
      const long long row = row0 + r;
      if (lane != 0) continue;
      if constexpr (wfmt_layout(FMT) == WFMT_FP8_CHANNEL) {  // the row's scale (per-row FP8 weights)
        if (row < N) {
          v *= p.w_scale[row];
          if (MATS == 2) u *= p.w2_scale[row];
        }
      }
      if (deferred) {
        const float inv = gemv_inv_rms<BLOCK>(p, ss_part[b]);
        v *= inv;
        u *= inv;
      }
      if (EPI == EPI_ARGMAX) best_k[b][warp * ROWS + r] = (row < N && b < B) ? argmax_key(v, row) : 0ull;
      if (row < N && b < B) gemv_epilogue<EPI, SPLITK, W>(p, b, row, v, u);
    }

  if (EPI == EPI_ARGMAX) gemv_argmax_publish<BLOCK, BATCH>(p, &best_k[0][0], WARPS * ROWS);
}

// gemv.merged: the output projection with its residual add whose x' is the attention's output
// merged from attn_decode.parts's PARTS partials (batch-1 steps of the short range).
template <int BLOCK, int ROWS, int UNROLL, int SPLITK, int BATCH, int PARTS, typename W>
__device__ void gemv_merged(const GemvParams& p) {
  gemv<BLOCK, ROWS, UNROLL, SPLITK, BATCH, EPI_RESIDUAL, W, PARTS>(p);
}

// gemv.fp8: gemv.fused over FP8 e4m3 weights with f32 scales, SCALE 0 per output row, 1 per
// 128 x 128 block (see the top of this file), the codes widened by cvt (CVT 0) or by bit moves
// (CVT 1, the same floats); W is the 16-bit type of gamma and the bias.
template <int BLOCK, int ROWS, int UNROLL, int SPLITK, int BATCH, int EPI, int SCALE, int CVT, typename W>
__device__ void gemv_fp8(const GemvParams& p) {
  constexpr int FMT = (SCALE == 0 ? WFMT_FP8_CHANNEL : WFMT_FP8_BLOCK) | (CVT == 1 ? WFMT_FP8_BITS : 0);
  gemv<BLOCK, ROWS, UNROLL, SPLITK, BATCH, EPI, W, 0, FMT>(p);
}
