// gemm.mma: C = A B^T for a prompt step's projections on the warp-level tensor cores (mma.sync,
// sm_80+): the family for GPUs without wgmma, with gemm.wgmma's epilogues. A [m, k] the step's
// 16-bit activations, B [n, k] a weight as stored (both K-major), f32 accumulation.
// - A block of 8 warps computes a 128 x BN tile of C; warp w owns rows 64 (w / 4) .. + 63 and the
//   BN / 4 columns BN / 4 (w % 4) .. of it: 4 x BN / 32 tiles of m16n8k16.
// - K goes in 32-wide steps through a ring of STAGES shared-memory stages filled by cp.async (rows
//   past m or n zero-filled), STAGES - 1 steps ahead of the multiply; rows are padded by 8 values
//   (80 bytes), so the 8 row addresses of an ldmatrix fall in distinct banks.
// - Epilogues (gemm/epilogue.cuh) as gemm.wgmma: EPI 0 C in W, EPI 1 f32, EPI 2 added into f32 C, EPI 3 silu(gate) *
//   up in W. At EPI 3 the tile's B rows are gate and up rows placed so that each warp's columns are
//   BN / 8 gate rows and the same BN / 8 up rows: its n8 tiles j and j + BN / 64 hold matching
//   columns in the same lanes; gate and up are rounded to W before SwiGLU (the unfused path's bits).
// Needs k % 32 == 0, lda and ldb multiples of 8, a and b 16-byte aligned, n % 8 == 0.
// Grid: (ceil(n / BN), ceil(m / 128)) (EPI 3: ceil(n / (BN / 2))); block: 256 threads; dynamic
// shared memory: gemm_mma_smem (backends/cuda/family.h).
#pragma once
#include "common/async_copy.cuh"
#include "common/mma.cuh"
#include "common/params.h"
#include "common/types.cuh"
#include "gemm/epilogue.cuh"

#define AC_MMA_GEMM_BM 128
#define AC_MMA_GEMM_BK 32
#define AC_MMA_GEMM_LD 40  // a stage row: 32 values and 8 of padding

// c += A (16 x 16) B (16 x 8) in W (bf16 or f16), f32 accumulators.
template <typename W>
__device__ __forceinline__ void mma_w16_16816(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1);
template <>
__device__ __forceinline__ void mma_w16_16816<ac_bf16>(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  mma_bf16_16816(c, a[0], a[1], a[2], a[3], b0, b1);
}
template <>
__device__ __forceinline__ void mma_w16_16816<ac_f16>(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <int BLOCK, int BN, int STAGES, int EPI, typename W>
__device__ void gemm_mma(const GemmW16Params& p) {
  static_assert(BLOCK == 256, "8 warps: 2 over the tile's rows, 4 over its columns");
  static_assert(BN == 64 || BN == 128, "BN of this family");
  constexpr int BM = AC_MMA_GEMM_BM, BK = AC_MMA_GEMM_BK, LD = AC_MMA_GEMM_LD;
  constexpr int WN = BN / 4, NT = WN / 8;          // a warp's columns and n8 tiles
  constexpr int BN_OUT = EPI == 3 ? BN / 2 : BN;  // C's columns per tile
  constexpr int STAGE = (BM + BN) * LD;           // 16-bit values per stage
  extern __shared__ __align__(16) unsigned short gemm_mma_smem_raw[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const long long m0 = (long long)blockIdx.y * BM, n0 = (long long)blockIdx.x * BN_OUT;
  const int kt_n = int(p.k / BK);
  const W* a = static_cast<const W*>(p.a);
  const W* b = static_cast<const W*>(p.b);
  const W* b2 = static_cast<const W*>(p.b2);

  // One K step into stage s: A's 128 rows and B's BN rows, 4 chunks of 16 bytes each.
  auto load = [&](int kt, int s) {
    unsigned short* ta = gemm_mma_smem_raw + s * STAGE;
    unsigned short* tb = ta + BM * LD;
    const long long k0 = (long long)kt * BK;
    for (int i = threadIdx.x; i < BM * 4; i += BLOCK) {
      const int r = i / 4, c = i % 4;
      const bool ok = m0 + r < p.m;
      cp_async16_zfill(ta + r * LD + c * 8, a + (ok ? (m0 + r) * p.lda + k0 + c * 8 : 0), ok);
    }
    for (int i = threadIdx.x; i < BN * 4; i += BLOCK) {
      const int r = i / 4, c = i % 4;
      // EPI 3: warp w's columns (rows WN w .. of the tile) are gate rows BN / 8 w .. and the same up rows.
      const int w = r / WN, q = r % WN;
      const bool up = EPI == 3 && q >= WN / 2;
      const long long row = EPI == 3 ? n0 + (long long)(WN / 2) * w + (up ? q - WN / 2 : q) : n0 + r;
      const bool ok = row < p.n;
      cp_async16_zfill(tb + r * LD + c * 8, (up ? b2 : b) + (ok ? row * p.ldb + k0 + c * 8 : 0), ok);
    }
  };

  float acc[4][NT][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < kt_n) load(s, s);
    cp_async_commit();  // empty groups too: the wait below counts groups
  }
  const int wm = (warp / 4) * 64, wn = (warp % 4) * WN;
  for (int kt = 0; kt < kt_n; ++kt) {
    cp_async_wait_group<STAGES - 2>();  // step kt has landed (this thread's copies)
    __syncthreads();                     // everyone's; and every warp is done with step kt - 1's stage
    if (kt + STAGES - 1 < kt_n) load(kt + STAGES - 1, (kt + STAGES - 1) % STAGES);
    cp_async_commit();
    const unsigned short* ta = gemm_mma_smem_raw + (kt % STAGES) * STAGE;
    const unsigned short* tb = ta + BM * LD;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      unsigned af[4][4];
#pragma unroll
      for (int i = 0; i < 4; ++i)  // lanes 0-15: rows 0-15 at k kk, lanes 16-31: the same rows at kk + 8
        ldsm_x4(af[i], ta + (wm + 16 * i + lane % 16) * LD + kk + (lane / 16) * 8);
#pragma unroll
      for (int j = 0; j < NT; j += 2) {  // two n8 tiles per ldmatrix: b0, b1 of tile j, then of j + 1
        unsigned bf[4];
        ldsm_x4(bf, tb + (wn + 8 * j + (lane / 16) * 8 + lane % 8) * LD + kk + ((lane / 8) % 2) * 8);
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          mma_w16_16816<W>(acc[i][j], af[i], bf[0], bf[1]);
          mma_w16_16816<W>(acc[i][j + 1], af[i], bf[2], bf[3]);
        }
      }
    }
  }
  cp_async_wait_all();

  // acc[i][j]: rows wm + 16 i + lane / 4 (+ 8), columns wn + 8 j + 2 (lane % 4) (+ 1) of the tile.
  // EPI 3: tiles j < NT / 2 are gate columns, j + NT / 2 the same up columns; C column
  // n0 + WN / 2 * warp_n + 8 j + ...
  constexpr int TILES = EPI == 3 ? NT / 2 : NT;
#pragma unroll
  for (int j = 0; j < TILES; ++j) {
    const long long col = EPI == 3 ? n0 + (WN / 2) * (warp % 4) + 8 * j + 2 * (lane % 4) : n0 + wn + 8 * j + 2 * (lane % 4);
    if (col >= p.n) continue;
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const long long r = m0 + wm + 16 * i + lane / 4 + 8 * h;
        if (r >= p.m) continue;
        const int ju = EPI == 3 ? j + NT / 2 : j;  // EPI 3: the same columns' up sums
        gemm_store_pair<EPI, W>(p, r, col, acc[i][j][2 * h], acc[i][j][2 * h + 1], acc[i][ju][2 * h], acc[i][ju][2 * h + 1]);
      }
  }
}
