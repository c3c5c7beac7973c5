// A decoder layer's whole MLP in one kernel, for decode (B <= BATCH tokens):
//   h[b] += W_down · (silu(W_gate · x'[b]) * (W_up · x'[b])),   x' = RMSNorm(h[b]) * gamma.
// Two regions (mlp_in: norm + gate/up + SwiGLU; mlp_out: down + residual) as one span. The
// intermediate dimension I is cut into units of KC rows; a unit's gate/up rows give KC SwiGLU
// values that stay in shared memory and are multiplied at once by the KC matching columns of
// W_down, so no intermediate vector goes through memory and no kernel boundary separates the
// two projections. W_down comes tiled by unit ([units][H][KC], zero past I; tile_mlp_down on the
// host), so a unit's down weights are one contiguous stream like its gate/up rows (in the
// [H, I] layout each down row would give 2*KC scattered bytes). Each block takes a contiguous range of units (the grid is sized so all
// blocks are resident: a few per SM) and keeps the down projection's partial sums for every
// output in shared memory; at the end it adds them into h with 16-byte vector reductions.
//
// h is both the input (read by every block for the norm) and the output: a block may add into
// it only after every block has read it, so blocks count themselves in after staging x' and
// wait for the count before adding (all blocks are resident, so the wait ends; the host sizes
// the grid by the occupancy). The last block to finish resets the two counters.
//
// Parameters: BLOCK threads; KC intermediate rows per unit (16-byte column chunks: KC / 8 lanes
// per down row); ROWS gate/up rows per warp per pass (KC / (WARPS * ROWS) passes per unit);
// UNROLL 16-byte chunks per lane per row in flight; BATCH largest B. Grid: (blocks), dynamic
// shared memory 2 * BATCH * H floats. Requires H % 8 == 0, I % 8 == 0, 16-bit weights.
#pragma once
#include "common/params.h"
#include "common/pdl.cuh"
#include "common/reduce.cuh"
#include "common/vec.cuh"
#include "gemv/gemv.cuh"

template <int BLOCK, int KC, int ROWS, int UNROLL, int BATCH, typename W>
__device__ void mlp_fused(const MlpParams& p) {
  constexpr int WARPS = BLOCK / 32;
  constexpr int PASSES = KC / (WARPS * ROWS);
  constexpr int LPR = KC / 8;     // lanes per down row (one 16-byte chunk of KC columns each)
  constexpr int RPI = 32 / LPR;   // down rows per warp instruction
  constexpr int UB = 4;           // down rows per lane per load batch (two batches in flight)
  static_assert(PASSES >= 1 && KC % (WARPS * ROWS) == 0, "gate/up rows divide among the warps");
  static_assert(LPR >= 1 && LPR <= 32 && 32 % LPR == 0, "KC is 8..256, a power of two");
  extern __shared__ float4 mlp_smem[];
  float* xs = reinterpret_cast<float*>(mlp_smem);  // [BATCH][H]: x'
  float* acc = xs + BATCH * p.H;                   // [BATCH][H]: this block's down partials
  __shared__ float act[2][BATCH][KC];              // SwiGLU of the unit (double-buffered by parity)

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const long long H = p.H, I = p.I;
  const int B = (int)p.B;
  const long long units = (I + KC - 1) / KC;
  const long long u0 = (long long)blockIdx.x * units / gridDim.x, u1 = (long long)(blockIdx.x + 1) * units / gridDim.x;
  const long long nchunks = H / 8;
  const W* wg = static_cast<const W*>(p.w_gate);
  const W* wu = static_cast<const W*>(p.w_up);
  const W* wd = static_cast<const W*>(p.w_down);

  // The first gate/up weights do not depend on the previous kernel: load them before waiting.
  u32x4 wa[UNROLL][2][ROWS], wb[UNROLL][2][ROWS];
  if (u0 < u1) gemv_load<ROWS, UNROLL, 2, W>(wa, wg, wu, u0 * KC + warp * ROWS, I, H, 0, nchunks, 0, lane);
  pdl_launch_dependents();
  pdl_wait();

  GemvParams gp{};
  gp.x = p.h;
  gp.gamma = p.gamma;
  gp.eps = p.eps;
  gp.K = H;
  gp.B = p.B;
  gemv_stage_x<BLOCK, BATCH, W>(gp, xs, 0, H, H);  // ends with __syncthreads
  // Counted in: this block no longer reads h.
  if (threadIdx.x == 0) {
    __threadfence();
    atomicAdd(p.counters, 1u);
  }
  for (long long i = threadIdx.x; i < BATCH * H; i += BLOCK) acc[i] = 0.0f;

  const int sub = lane % LPR, rl = lane / LPR;
  constexpr long long RSTEP = (long long)WARPS * RPI;
  // Loads of the down tile rows base + rl + j * RSTEP (zero past H).
  auto load_down = [&](u32x4 (&wv)[UB], const W* tile, long long base) {
#pragma unroll
    for (int j = 0; j < UB; ++j) {
      const long long row = base + rl + j * RSTEP;
      wv[j] = row < H ? load_stream16(tile + row * KC) : u32x4{0u, 0u, 0u, 0u};
    }
  };
  // Software pipeline: a memory round trip per unit, not one per stage. The first down rows of
  // a unit are requested before its gate/up sums are reduced, and the next unit's first gate/up
  // chunks before its down rows are multiplied.
  u32x4 wv[UB];
  for (long long u = u0; u < u1; ++u) {
    float(*a)[KC] = act[u & 1];
    // Down projection: column chunk `sub` of this unit, RPI rows per warp instruction (a warp
    // instruction reads 512 consecutive bytes of the tile).
    const W* tile = wd + u * H * KC + 8 * sub;
    // Gate/up rows of the unit, PASSES passes of ROWS rows per warp.
#pragma unroll 1
    for (int pass = 0; pass < PASSES; ++pass) {
      const long long row0 = u * KC + (pass * WARPS + warp) * ROWS;
      if (pass != 0) gemv_load<ROWS, UNROLL, 2, W>(wa, wg, wu, row0, I, H, 0, nchunks, 0, lane);
      float s[2][ROWS][BATCH];
      gemv_stream<ROWS, UNROLL, 2, BATCH, W>(s, wa, wb, wg, wu, row0, I, H, 0, nchunks, xs, H, lane, [&] {
        if (pass == PASSES - 1) load_down(wv, tile, (long long)warp * RPI);
      });
#pragma unroll
      for (int r = 0; r < ROWS; ++r)
#pragma unroll
        for (int b = 0; b < BATCH; ++b) {
          const float g = warp_sum(s[0][r][b]), up = warp_sum(s[1][r][b]);
          // Rows past I (a partial last unit) and batch rows past B contribute zero.
          if (lane == 0) a[b][(pass * WARPS + warp) * ROWS + r] = (row0 + r < I && b < B) ? g / (1.0f + expf(-g)) * up : 0.0f;
        }
    }
    __syncthreads();
    if (u + 1 < u1) gemv_load<ROWS, UNROLL, 2, W>(wa, wg, wu, (u + 1) * KC + warp * ROWS, I, H, 0, nchunks, 0, lane);

    float av[BATCH][8];
#pragma unroll
    for (int b = 0; b < BATCH; ++b)
#pragma unroll
      for (int i = 0; i < 8; ++i) av[b][i] = a[b][8 * sub + i];
    // The loop variable is the warp's (uniform across its lanes: the shuffles need every lane).
    for (long long base = (long long)warp * RPI; base < H; base += UB * RSTEP) {
      u32x4 cur[UB];
#pragma unroll
      for (int j = 0; j < UB; ++j) cur[j] = wv[j];
      if (base + UB * RSTEP < H) load_down(wv, tile, base + UB * RSTEP);
#pragma unroll
      for (int j = 0; j < UB; ++j) {
        float f[8];
        unpack8(cur[j], W{}, f);
        const long long row = base + rl + j * RSTEP;
#pragma unroll
        for (int b = 0; b < BATCH; ++b) {
          float v = 0.0f;
#pragma unroll
          for (int i = 0; i < 8; ++i) v = fmaf(f[i], av[b][i], v);
#pragma unroll
          for (int off = LPR / 2; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
          if (sub == 0 && row < H) acc[b * H + row] += v;  // the same thread owns `row` in every unit
        }
      }
    }
  }
  __syncthreads();

  // Every block has read h: add the partials.
  if (threadIdx.x == 0) {
    while (*(volatile unsigned*)p.counters < gridDim.x) __nanosleep(64);
    __threadfence();
  }
  __syncthreads();
  for (int b = 0; b < B; ++b)
    for (long long i = 4 * (long long)threadIdx.x; i < H; i += 4 * BLOCK)
      red_add4(p.h + b * H + i, *reinterpret_cast<const float4*>(acc + b * H + i));
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    if (atomicAdd(p.counters + 1, 1u) == gridDim.x - 1) {
      p.counters[0] = 0u;
      p.counters[1] = 0u;
    }
  }
}
