// gemm.wgmma: C = A B^T for a prompt step's projections on Hopper's warpgroup tensor cores
// (sm_90a): A [m, k] the step's 16-bit activations, B [n, k] a weight as stored (both K-major, the
// "TN" form), f32 accumulation. What it is for: our own GEMM, whose epilogue can hold what
// cuBLAS's cannot (SwiGLU, norms); SwiGLU is the first fused one (EPI 3).
// - A block of 3 warpgroups computes a 128 x BN tile of C. Warpgroup 0 produces each 64-wide K step
//   of A's 128 rows and B's BN rows into a ring of STAGES shared-memory stages, in the 128-byte
//   swizzle wgmma reads (16-byte chunk c of row r at chunk c ^ (r % 8)), rows past m or n zero-filled.
//   LOAD 0: its 128 threads copy with cp.async; once a stage has landed each thread fences it for
//   the async proxy and arrives on the stage's "full" barrier. LOAD 1: one thread asks the copy
//   engine (TMA) for the two boxes, the tensor maps in the parameters (`__grid_constant__`, encoded
//   by the host: backends/cuda/gemm16.h), and the full barrier completes when their bytes have
//   landed: no threads or registers spent on addresses, no lead to keep (the copies never wait on
//   the producer).
// - Warpgroups 1 and 2 consume 64 rows each: per stage, four wgmma m64nBNk16 from shared-memory
//   descriptors (BN 256: two m64n128k16 on B's halves, 128 f32 sums a thread), then they release the stage ("empty" barrier) for the producer to refill: at
//   PIPE 0 once those wgmma have finished (each stage's tensor-core work alone in flight); at PIPE 1
//   the stage before it, once that one's have (wgmma.wait_group 1), so one stage's wgmma run while
//   the next stage's are issued; the producer then keeps one stage fewer in flight (AHEAD).
// - Epilogue from the accumulators (gemm/epilogue.cuh): EPI 0 stores C in W, EPI 1 stores f32,
//   EPI 2 adds into f32 C (the residual stream, as cuBLAS with beta 1). EPI 3 is the MLP's gate/up
//   with SwiGLU: a tile's B rows are BN / 2 rows of the gate projection (b) and the same BN / 2 rows
//   of the up projection (b2), so each thread holds gate column j's sums and up column j's
//   (accumulator groups q and q + BN / 16) and stores silu(gate) * up in W, C [m, n] with n the
//   intermediate size: the two GEMMs' 16-bit outputs and the separate SwiGLU pass's reads of them
//   are gone. gate and up are rounded to W before SwiGLU, so C has the bits of EPI 0 on each then
//   swiglu.w16.
// - CLUSTER 2 (LOAD 1 only): the blocks of two neighbouring row tiles and the same columns form a
//   cluster; each copies its A and half of B's rows (EPI 3: half the gate and half the up rows),
//   the latter into both blocks' stages by TMA multicast, so B leaves L2 once per pair. A block's
//   full barrier counts its A and the whole B; its empty barrier takes four arrivals (both blocks'
//   consumer warpgroups: a stage is refilled in both at once); the pair syncs before its first copy
//   and before it exits (the other's copies and arrivals target this block's shared memory). The
//   grid's rows are whole pairs: the last pair's second block may lie past m (its A arrives as
//   zeros, it stores nothing).
// - SCHED 1 (LOAD 1, CLUSTER 1, BN 64 or 128): persistent blocks walking the tiles, the two consumer
//   warpgroups taking whole tiles in turns so that one's epilogue overlaps the other's wgmma
//   (gemm/wgmma_pingpong.cuh).
// Needs k % 64 == 0, lda and ldb multiples of 8 (16-byte rows), n % 8 == 0; LOAD 1 also a and b
// 16-byte aligned and m, n below 2^31 (the tensor maps' limits).
// Grid: (ceil(n / BN), ceil(m / 128)) (EPI 3: ceil(n / (BN / 2)); SCHED 1: any, the host gives
// min(tiles, SMs) blocks along x); block: 384 threads; dynamic
// shared memory: gemm_wgmma_smem (backends/cuda/family.h): the ring, aligned here to 1024 bytes (the swizzle's period), then
// STAGES full and STAGES empty barriers (and SCHED 1's two turn barriers).
#pragma once
#include "common/async_copy.cuh"
#include "common/mbarrier.cuh"
#include "common/params.h"
#include "common/types.cuh"
#include "gemm/epilogue.cuh"
#include "gemm/pipeline.h"
#include "gemm/wgmma_ops.cuh"
#include "gemm/wgmma_pingpong.cuh"


template <int BLOCK, int BN, int STAGES, int EPI, int PIPE, int LOAD, int CLUSTER, typename W>
__device__ void gemm_wgmma_tiles(const GemmW16Params& p) {
  static_assert(BLOCK == 384, "one producer and two consumer warpgroups");
  static_assert(CLUSTER == 1 || (CLUSTER == 2 && LOAD == 1), "a pair shares B through the copy engine's multicast");
  static_assert(BN == 64 || BN == 128 || BN == 256, "wgmma n of this family (256: two n128 halves)");
  constexpr int TILE_A = AC_WGMMA_BM * AC_WGMMA_BK, TILE_B = BN * AC_WGMMA_BK;  // 16-bit values per stage
  extern __shared__ __align__(16) unsigned char gemm_smem_raw[];
  const WgmmaSmem sm = wgmma_smem<BN, STAGES>(gemm_smem_raw);
  unsigned short* ring = sm.ring;
  unsigned long long *full = sm.full, *empty = sm.empty;
  constexpr int BN_OUT = EPI == 3 ? BN / 2 : BN;  // C's columns per tile (EPI 3: gate and up rows share B)
  const long long m0 = (long long)blockIdx.y * AC_WGMMA_BM, n0 = (long long)blockIdx.x * BN_OUT;
  const int kt_n = int(p.k / AC_WGMMA_BK);
  constexpr int AHEAD = WgmmaProducerAhead<STAGES, PIPE>::value;  // gemm/pipeline.h: why PIPE 1 is one fewer
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], LOAD == 1 ? 1 : 128);  // the TMA thread, or every producer thread
      mbar_init(&empty[s], 2 * CLUSTER);   // one thread of each consumer warpgroup (of both blocks of a pair)
    }
    mbar_init_fence();
  }
  if (CLUSTER > 1) cluster_sync_all();  // the pair's barriers are ready before either copies or arrives
  else __syncthreads();
  const int wg = threadIdx.x / 128, t = threadIdx.x % 128;
  if (wg == 0 && LOAD == 1) {  // producer: one thread, the copy engine moves the bytes
    if (t == 0) {
      // CLUSTER 2: the pair (the same columns, rows m0 and m0 + 128) each copy half of B's rows
      // (at EPI 3 half of the gate rows and half of the up rows) into both blocks' stages, so every
      // B byte leaves L2 once per pair; each block's full barrier counts its A and the whole B.
      constexpr int BOX_B = BN_OUT / CLUSTER;  // B rows (per projection at EPI 3) this block copies
      const int rank = CLUSTER > 1 ? int(cluster_rank()) : 0;
      for (int kt = 0; kt < kt_n; ++kt) {
        const int s = kt % STAGES;
        if (kt >= STAGES) mbar_wait(&empty[s], unsigned((kt / STAGES - 1) & 1));  // both blocks' consumers
        unsigned short* ta = ring + s * (TILE_A + TILE_B);
        mbar_arrive_expect_tx(&full[s], unsigned((TILE_A + TILE_B) * 2));
        tma_load_2d(ta, &p.ta, kt * AC_WGMMA_BK, int(m0), &full[s]);
        if (CLUSTER == 1) {
          tma_load_2d(ta + TILE_A, &p.tb, kt * AC_WGMMA_BK, int(n0), &full[s]);
          if (EPI == 3) tma_load_2d(ta + TILE_A + (BN / 2) * AC_WGMMA_BK, &p.tb2, kt * AC_WGMMA_BK, int(n0), &full[s]);
        } else {
          const int row = rank * BOX_B;
          tma_load_2d_multicast(ta + TILE_A + row * AC_WGMMA_BK, &p.tb, kt * AC_WGMMA_BK, int(n0) + row, &full[s], 0x3);
          if (EPI == 3)
            tma_load_2d_multicast(ta + TILE_A + (BN / 2 + row) * AC_WGMMA_BK, &p.tb2, kt * AC_WGMMA_BK, int(n0) + row, &full[s],
                                  0x3);
        }
      }
    }
    // A pair's blocks leave together: the other's copies land in this block's stages, and its
    // consumers arrive on this block's barriers, until its last step.
    if (CLUSTER > 1) cluster_sync_all();
    return;
  }
  if (wg == 0) {  // producer
    const W* a = static_cast<const W*>(p.a);
    const W* b = static_cast<const W*>(p.b);
    const W* b2 = static_cast<const W*>(p.b2);
    for (int kt = 0; kt < kt_n; ++kt) {
      const int s = kt % STAGES;
      if (kt >= STAGES) mbar_wait(&empty[s], unsigned((kt / STAGES - 1) & 1));
      unsigned short* ta = ring + s * (TILE_A + TILE_B);
      unsigned short* tb = ta + TILE_A;
      const long long k0 = (long long)kt * AC_WGMMA_BK;
      for (int i = t; i < AC_WGMMA_BM * 8; i += 128) {  // 8 chunks of 16 bytes per 64-wide row
        const int r = i / 8, c = i % 8;
        const bool ok = m0 + r < p.m;
        cp_async16_zfill(ta + r * AC_WGMMA_BK + ((c ^ (r % 8)) * 8), a + (ok ? (m0 + r) * p.lda + k0 + c * 8 : 0), ok);
      }
      for (int i = t; i < BN * 8; i += 128) {
        const int r = i / 8, c = i % 8;
        const int rb = r % BN_OUT;  // EPI 3: rows BN / 2 .. BN - 1 are b2's
        const W* src = EPI == 3 && r >= BN_OUT ? b2 : b;
        const bool ok = n0 + rb < p.n;
        cp_async16_zfill(tb + r * AC_WGMMA_BK + ((c ^ (r % 8)) * 8), src + (ok ? (n0 + rb) * p.ldb + k0 + c * 8 : 0), ok);
      }
      cp_async_commit();
      if (kt >= AHEAD) {  // the stage issued AHEAD steps ago has landed
        cp_async_wait_group<AHEAD>();
        fence_proxy_async_smem();
        mbar_arrive(&full[(kt - AHEAD) % STAGES]);
      }
    }
    cp_async_wait_all();
    fence_proxy_async_smem();
    for (int kt = kt_n - AHEAD > 0 ? kt_n - AHEAD : 0; kt < kt_n; ++kt) mbar_arrive(&full[kt % STAGES]);
    return;
  }
  // consumers: warpgroup c = wg - 1 owns rows 64c .. 64c + 63 of the tile
  const int c = wg - 1;
  float d[BN / 2];
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) d[i] = 0.0f;
  for (int kt = 0; kt < kt_n; ++kt) {
    const int s = kt % STAGES;
    mbar_wait(&full[s], unsigned((kt / STAGES) & 1));
    const unsigned short* ta = ring + s * (TILE_A + TILE_B) + c * 64 * AC_WGMMA_BK;
    const unsigned short* tb = ring + s * (TILE_A + TILE_B) + TILE_A;
    const unsigned long long da = wgmma_desc_sw128(ta), db = wgmma_desc_sw128(tb);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < AC_WGMMA_BK / 16; ++kk) {  // 16 values (32 bytes, 2 descriptor units) per step
      if constexpr (BN == 256) {
        // B's rows 128.. start 16 eight-row groups (16 KiB, a whole number of swizzle periods) on:
        // their sums are d[64..], the columns an n256 instruction would put there.
        wgmma_m64k16<128, W>(d, da + 2 * kk, db + 2 * kk, kt > 0 || kk > 0);
        wgmma_m64k16<128, W>(d + 64, da + 2 * kk, db + (16384 >> 4) + 2 * kk, kt > 0 || kk > 0);
      } else {
        wgmma_m64k16<BN, W>(d, da + 2 * kk, db + 2 * kk, kt > 0 || kk > 0);
      }
    }
    wgmma_commit();
    // A stage is released to both blocks' producers (CLUSTER 2: the other block's copies land here too).
    const int done = PIPE == 0 ? kt : kt - 1;
    if (PIPE == 0) wgmma_wait<0>();
    else wgmma_wait<1>();  // the previous stage's wgmma have read their tiles
    if (t == 0 && done >= 0) {
      mbar_arrive(&empty[done % STAGES]);
      if (CLUSTER > 1) mbar_arrive_remote(&empty[done % STAGES], cluster_rank() ^ 1u);
    }
  }
  if (PIPE == 1) wgmma_wait<0>();  // the last stage is never refilled: no release
  gemm_store_m64<EPI, BN, W>(p, d, m0 + 64 * c, n0, t);  // this warpgroup's 64 rows
  if (CLUSTER > 1) cluster_sync_all();  // the producer's
}

// SCHED 0: a block per tile (above); SCHED 1: persistent blocks, consumers taking turns (gemm/wgmma_pingpong.cuh).
template <int BLOCK, int BN, int STAGES, int EPI, int PIPE, int LOAD, int CLUSTER, int SCHED, typename W>
__device__ void gemm_wgmma(const GemmW16Params& p) {
  if constexpr (SCHED == 1) {
    static_assert(BLOCK == 384 && LOAD == 1 && CLUSTER == 1, "one TMA producer thread and two consumer warpgroups, no cluster");
    gemm_wgmma_pingpong<BN, STAGES, EPI, PIPE, W>(p);
  } else {
    gemm_wgmma_tiles<BLOCK, BN, STAGES, EPI, PIPE, LOAD, CLUSTER, W>(p);
  }
}
