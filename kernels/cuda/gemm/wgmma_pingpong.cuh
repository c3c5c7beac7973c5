// gemm.wgmma at SCHED 1: persistent blocks whose two consumer warpgroups take turns on the tensor
// cores. Why: one block per SM computes one 128 x BN tile at SCHED 0, so each tile's epilogue (the
// residual's f32 read and write at EPI 2: a quarter of the o projection's time) and each pipeline
// fill leave the tensor cores idle. Here a block walks the tiles blockIdx.x, blockIdx.x + grid, ...
// (row tiles first within a column of tiles, so neighbouring blocks share B); consumer warpgroup c
// computes every other one of them (the block's tiles c, c + 2, ...) as a whole 128 x BN tile (two
// m64 wgmma per K16 step on A's halves, BN f32 sums a thread), so while one stores a tile the
// other's wgmma run.
// - One producer thread copies the stages of the block's tiles in order by TMA (LOAD 1's boxes): a
//   tile's K steps are the block's steps i * kt_n .. (i + 1) * kt_n - 1 for its tile i, stage
//   step % STAGES. Each stage has one consumer per use, so its empty barrier takes one arrival.
// - Turns: a consumer starts waiting for its tile's stages only once the other has waited for all
//   of its previous tile's (the "turn" barriers): a stage's full barrier is then never more than
//   one phase behind the step waited for, so waiting on a parity is unambiguous, and the two
//   warpgroups' mainloops alternate (the tensor cores see one at a time, the other stores).
// - PIPE as at SCHED 0 (release each stage once its wgmma finished, or the one before it); the
//   last stage of a tile is released after its wgmma finished, the producer going on to the next.
// BN 64 or 128 (BN 128: 128 sums a thread; 256 would need 256), LOAD 1, CLUSTER 1; the epilogue
// and its stores (EPI 0-3) are SCHED 0's, per 64-row half. Launched with any grid (the host gives
// min(tiles, SMs)); needs the same shapes as SCHED 0.
#pragma once
#include "common/mbarrier.cuh"
#include "common/params.h"
#include "common/types.cuh"
#include "gemm/epilogue.cuh"
#include "gemm/wgmma_ops.cuh"

template <int BN, int STAGES, int EPI, int PIPE, typename W>
__device__ void gemm_wgmma_pingpong(const GemmW16Params& p) {
  static_assert(BN == 64 || BN == 128, "a warpgroup holds a whole 128 x BN tile's sums");
  constexpr int TILE_A = AC_WGMMA_BM * AC_WGMMA_BK, TILE_B = BN * AC_WGMMA_BK;  // 16-bit values per stage
  extern __shared__ __align__(16) unsigned char gemm_smem_raw[];
  const WgmmaSmem sm = wgmma_smem<BN, STAGES>(gemm_smem_raw);
  unsigned short* ring = sm.ring;
  unsigned long long *full = sm.full, *empty = sm.empty;
  unsigned long long* turn = sm.turn;  // turn[c]: the other consumer has waited for its tile's last stage
  constexpr int BN_OUT = EPI == 3 ? BN / 2 : BN;  // C's columns per tile (EPI 3: gate and up rows share B)
  const int tiles_m = int((p.m + AC_WGMMA_BM - 1) / AC_WGMMA_BM), tiles_n = int((p.n + BN_OUT - 1) / BN_OUT);
  const int tiles = tiles_m * tiles_n, kt_n = int(p.k / AC_WGMMA_BK);
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 1);   // the TMA thread
      mbar_init(&empty[s], 1);  // one thread of the consumer warpgroup using it
    }
    mbar_init(&turn[0], 1);
    mbar_init(&turn[1], 1);
    mbar_init_fence();
  }
  __syncthreads();
  const int wg = threadIdx.x / 128, t = threadIdx.x % 128;
  if (wg == 0) {  // producer: one thread, the copy engine moves the bytes
    if (t == 0) {
      long long step = 0;
      for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        const int m0 = (tile % tiles_m) * AC_WGMMA_BM, n0 = (tile / tiles_m) * BN_OUT;
        for (int kt = 0; kt < kt_n; ++kt, ++step) {
          const int s = int(step % STAGES);
          if (step >= STAGES) mbar_wait(&empty[s], unsigned((step / STAGES - 1) & 1));
          unsigned short* ta = ring + s * (TILE_A + TILE_B);
          mbar_arrive_expect_tx(&full[s], unsigned((TILE_A + TILE_B) * 2));
          tma_load_2d(ta, &p.ta, kt * AC_WGMMA_BK, m0, &full[s]);
          tma_load_2d(ta + TILE_A, &p.tb, kt * AC_WGMMA_BK, n0, &full[s]);
          if (EPI == 3) tma_load_2d(ta + TILE_A + (BN / 2) * AC_WGMMA_BK, &p.tb2, kt * AC_WGMMA_BK, n0, &full[s]);
        }
      }
    }
    return;
  }
  const int c = wg - 1;
  int j = 0;  // this consumer's tiles so far: the block's tile i = 2 j + c
  for (int tile = blockIdx.x + c * gridDim.x; tile < tiles; tile += 2 * gridDim.x, ++j) {
    const long long m0 = (long long)(tile % tiles_m) * AC_WGMMA_BM, n0 = (long long)(tile / tiles_m) * BN_OUT;
    const long long step0 = (long long)(2 * j + c) * kt_n;
    // consumer 0's tile j follows consumer 1's tile j - 1; consumer 1's tile j follows consumer 0's tile j
    if (c == 1) mbar_wait(&turn[1], unsigned(j & 1));
    else if (j > 0) mbar_wait(&turn[0], unsigned((j - 1) & 1));
    float d[BN];  // rows 0..63 of the tile: d[0 .. BN / 2); rows 64..127: d[BN / 2 .. BN)
#pragma unroll
    for (int i = 0; i < BN; ++i) d[i] = 0.0f;
    for (int kt = 0; kt < kt_n; ++kt) {
      const long long step = step0 + kt;
      const int s = int(step % STAGES);
      mbar_wait(&full[s], unsigned((step / STAGES) & 1));
      const unsigned short* ta = ring + s * (TILE_A + TILE_B);
      const unsigned long long da0 = wgmma_desc_sw128(ta), da1 = wgmma_desc_sw128(ta + 64 * AC_WGMMA_BK),
                               db = wgmma_desc_sw128(ta + TILE_A);
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < AC_WGMMA_BK / 16; ++kk) {
        wgmma_m64k16<BN, W>(d, da0 + 2 * kk, db + 2 * kk, kt > 0 || kk > 0);
        wgmma_m64k16<BN, W>(d + BN / 2, da1 + 2 * kk, db + 2 * kk, kt > 0 || kk > 0);
      }
      wgmma_commit();
      if (PIPE == 0) wgmma_wait<0>();
      else wgmma_wait<1>();  // the previous stage's wgmma have read their tiles
      if (t == 0 && (PIPE == 0 || kt > 0)) mbar_arrive(&empty[(PIPE == 0 ? step : step - 1) % STAGES]);
    }
    if (t == 0) mbar_arrive(&turn[1 - c]);  // every stage of this tile waited for: the other's turn
    if (PIPE == 1) {
      wgmma_wait<0>();
      if (t == 0) mbar_arrive(&empty[(step0 + kt_n - 1) % STAGES]);
    }
    gemm_store_m64<EPI, BN, W>(p, d, m0, n0, t);  // rows 0..63 of the tile
    gemm_store_m64<EPI, BN, W>(p, d + BN / 2, m0 + 64, n0, t);  // rows 64..127
  }
}
