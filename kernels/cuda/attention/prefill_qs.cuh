// attn_prefill.qs: attn_prefill.pipe's FlashAttention-2 loop (the same tiles, block order,
// double-buffered K/V, base-2 online softmax and bf16 rounding of Q and P, so the same values up
// to the order of the f32 sums) with two changes for more tensor-core work in flight per SM:
// - the block's Q tile lives in shared memory and each warp ldmatrix's its A fragments per
//   k-chunk, instead of holding them in registers for the whole kernel (HD / 2 per lane);
// - each warp owns MT m16 tiles of query rows (FlashAttention-2's form at MT 2), so every K and V
//   fragment ldmatrix brings feeds MT MMAs instead of one.
// Nsight Compute saw attn_prefill.pipe latency-bound (issue slots 23% busy, 8 warps per SM at 173
// registers); with MT 1 the registers the Q fragments freed let more blocks fit an SM, with MT 2 a
// warp has twice the independent MMAs between its ldmatrix waits.
// Grid: (tiles, or pairs of them at PAIR 1, heads) with tiles of 16 * MT * WARPS rows
// (prefill_tile_rows); block: BLOCK =
// 32 * WARPS threads; warp w owns rows 16 MT w .. 16 MT (w + 1) - 1; dynamic shared memory:
// attn_prefill_qs_smem (the Q tile, then 2 stages x K and V x BK rows, each row HD + 8).
#pragma once
#include "attention/prefill_common.cuh"
#include "common/async_copy.cuh"
#include "common/mma.cuh"
#include "common/params.h"
#include "common/types.cuh"

// One (query tile, head) of the block's.
template <int BLOCK, int BK, int HD, int MT, typename W>
__device__ __forceinline__ void attn_prefill_qs_tile(const PrefillAttnParams& p, const PrefillBlock& blk) {
  static_assert(BLOCK % 32 == 0 && HD % 32 == 0 && BK % 16 == 0 && (MT == 1 || MT == 2), "whole tiles, k-chunks in pairs");
  constexpr int ROWS = 16 * MT * (BLOCK / 32);  // query rows of a block
  constexpr int KPAD = HD + 8;  // 16 bytes of padding per row: conflict-free ldmatrix rows
  constexpr int KC = HD / 16;   // k-chunks of S = Q K^T
  constexpr int NT = BK / 8;    // 8-column tiles of S
  constexpr int DT = HD / 8;    // 8-column tiles of O
  constexpr int CHUNKS = HD / 8;  // 16-byte chunks per row
  constexpr int TILE = BK * KPAD;
  extern __shared__ __align__(16) unsigned short qs_smem[];
  unsigned short* qsm = qs_smem;              // [ROWS][KPAD] the scaled bf16 Q tile
  unsigned short* ks = qs_smem + ROWS * KPAD;  // [2][BK][KPAD]
  unsigned short* vs = ks + 2 * TILE;          // [2][BK][KPAD]
  __shared__ int last_pos, first_pos;

  const int row0 = blk.row0, rows = blk.rows, h = blk.h;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int wrow = warp * 16 * MT;  // the warp's first row in the tile
  int pos[MT][2];                   // this lane's rows' positions (-1 past the tile's end): rows wrow + 16 i + g (+ 8)
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int r = wrow + 16 * i + g + 8 * j;
      pos[i][j] = r < rows ? p.positions[row0 + r] : -1;
    }
  prefill_span(p, blk, &last_pos, &first_pos);

  // The Q tile, scaled by scale * log2 e and rounded to bf16 (p.q16 holds it so already: copied
  // as it is), rows past the tile's end zero.
  const long long qstride = p.heads * HD;
  const float qscale = p.scale * 1.4426950408889634f;
  for (int i = threadIdx.x; i < ROWS * CHUNKS; i += BLOCK) {
    const int r = i / CHUNKS, c = i % CHUNKS;
    const bool valid = r < rows;
    const long long off = (row0 + (long long)(valid ? r : 0)) * qstride + h * HD + 8 * c;
    if (p.q16) {
      cp_async16_zfill(qsm + r * KPAD + 8 * c, p.q16 + off, valid);
      continue;
    }
    uint4 v = make_uint4(0u, 0u, 0u, 0u);
    if (valid) {
      const float4 a = *reinterpret_cast<const float4*>(p.q + off), b = *reinterpret_cast<const float4*>(p.q + off + 4);
      v = make_uint4(pack_bf16x2(a.x * qscale, a.y * qscale), pack_bf16x2(a.z * qscale, a.w * qscale),
                     pack_bf16x2(b.x * qscale, b.y * qscale), pack_bf16x2(b.z * qscale, b.w * qscale));
    }
    *reinterpret_cast<uint4*>(qsm + r * KPAD + 8 * c) = v;
  }
  cp_async_commit();  // Q's group, older than every K/V stage's: complete at the loop's first wait
  __syncthreads();
  const int end = last_pos + 1, tiles_n = (end + BK - 1) / BK;
  const unsigned short* kbase = p.k_cache + blk.kv_row0 * HD;
  const unsigned short* vbase = p.v_cache + blk.kv_row0 * HD;
  auto stage = [&](int buf, int k0) { prefill_stage_kv<BLOCK, BK, HD>(ks, vs, buf, kbase, vbase, k0, end); };

  // Each lane's ldmatrix row addresses (bytes, shared space): Q's A fragments (rows lane % 16 of
  // the m-tile, k-halves lane / 16), K's B fragments (key lane % 8, k-chunk quarters lane / 8), V's
  // transposed ones (key lane % 16, column halves lane / 16); the rest of each address is a
  // compile-time offset.
  const unsigned q_lane = smem_addr(qsm) + 2 * ((wrow + lane % 16) * KPAD + (lane / 16) * 8);
  const unsigned k_lane = smem_addr(ks) + 2 * ((lane % 8) * KPAD + (lane / 8) * 8);
  const unsigned v_lane = smem_addr(vs) + 2 * ((lane % 16) * KPAD + (lane / 16) * 8);

  float o[MT][DT][4];
  float m[MT][2], l[MT][2];  // l: this lane's columns only
#pragma unroll
  for (int i = 0; i < MT; ++i) {
#pragma unroll
    for (int d = 0; d < DT; ++d) o[i][d][0] = o[i][d][1] = o[i][d][2] = o[i][d][3] = 0.0f;
    m[i][0] = m[i][1] = AC_NEG_INF;
    l[i][0] = l[i][1] = 0.0f;
  }

  if (tiles_n > 0) stage(0, 0);
  for (int it = 0; it < tiles_n; ++it) {
    const int buf = it & 1, k0 = it * BK;
    if (it + 1 < tiles_n) {
      stage(buf ^ 1, k0 + BK);
      cp_async_wait_group<1>();
    } else {
      cp_async_wait_group<0>();
    }
    __syncthreads();
    const unsigned kt = k_lane + buf * TILE * 2, vt = v_lane + buf * TILE * 2;  // this lane's ldmatrix rows

    // S = Q K^T: per pair of k-chunks, each m-tile's A fragments (one ldmatrix x4 per chunk), then
    // each 8-key column tile's B fragments (one x4 for both chunks) into MT MMAs each.
    float s[MT][NT][4];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int n = 0; n < NT; ++n) s[i][n][0] = s[i][n][1] = s[i][n][2] = s[i][n][3] = 0.0f;
#pragma unroll
    for (int c = 0; c < KC; c += 2) {
      unsigned a[MT][2][4];
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) ldsm_x4_at(a[i][j], q_lane + 2 * (16 * i * KPAD + 16 * (c + j)));
#pragma unroll
      for (int n = 0; n < NT; ++n) {
        unsigned b[4];  // b0, b1 of k-chunks c and c + 1 for keys 8n .. 8n + 7
        ldsm_x4_at(b, kt + 2 * (8 * n * KPAD + 16 * c));
#pragma unroll
        for (int i = 0; i < MT; ++i) {
          mma_bf16_16816(s[i][n], a[i][0][0], a[i][0][1], a[i][0][2], a[i][0][3], b[0], b[1]);
          mma_bf16_16816(s[i][n], a[i][1][0], a[i][1][1], a[i][1][2], a[i][1][3], b[2], b[3]);
        }
      }
    }
    // Causal mask and online softmax per row, as attn_prefill.pipe.
    const bool masked = k0 + BK - 1 > first_pos;
#pragma unroll
    for (int i = 0; i < MT; ++i) {
      float mx[2] = {m[i][0], m[i][1]};
#pragma unroll
      for (int n = 0; n < NT; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int key = k0 + 8 * n + 2 * t + e % 2, j = e / 2;
          if (masked && key > pos[i][j]) s[i][n][e] = AC_NEG_INF;
          mx[j] = fmaxf(mx[j], s[i][n][e]);
        }
#pragma unroll
      for (int j = 0; j < 2; ++j) {
#pragma unroll
        for (int off = 1; off < 4; off <<= 1) mx[j] = fmaxf(mx[j], __shfl_xor_sync(0xffffffffu, mx[j], off));
        const float u = mx[j] == AC_NEG_INF ? 0.0f : mx[j];  // nothing unmasked yet: 2^-inf = 0, no NaN
        const float corr = pipe_exp2(m[i][j] - u);
        m[i][j] = mx[j];
        l[i][j] *= corr;
#pragma unroll
        for (int d = 0; d < DT; ++d) {
          o[i][d][2 * j] *= corr;
          o[i][d][2 * j + 1] *= corr;
        }
#pragma unroll
        for (int n = 0; n < NT; ++n)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            s[i][n][2 * j + e] = pipe_exp2(s[i][n][2 * j + e] - u);
            l[i][j] += s[i][n][2 * j + e];
          }
      }
    }
    // O += P V: each V fragment pair (one ldmatrix x4.trans) into MT m-tiles' MMAs.
#pragma unroll
    for (int c = 0; c < BK / 16; ++c) {
      unsigned pa[MT][4];
#pragma unroll
      for (int i = 0; i < MT; ++i) {
        pa[i][0] = pack_bf16x2(s[i][2 * c][0], s[i][2 * c][1]);
        pa[i][1] = pack_bf16x2(s[i][2 * c][2], s[i][2 * c][3]);
        pa[i][2] = pack_bf16x2(s[i][2 * c + 1][0], s[i][2 * c + 1][1]);
        pa[i][3] = pack_bf16x2(s[i][2 * c + 1][2], s[i][2 * c + 1][3]);
      }
#pragma unroll
      for (int d = 0; d < DT; d += 2) {
        unsigned b[4];  // b0, b1 of O tiles d and d + 1 for keys 16c .. 16c + 15
        ldsm_x4_trans_at(b, vt + 2 * (16 * c * KPAD + 8 * d));
#pragma unroll
        for (int i = 0; i < MT; ++i) {
          mma_bf16_16816(o[i][d], pa[i][0], pa[i][1], pa[i][2], pa[i][3], b[0], b[1]);
          mma_bf16_16816(o[i][d + 1], pa[i][0], pa[i][1], pa[i][2], pa[i][3], b[2], b[3]);
        }
      }
    }
    __syncthreads();  // this stage's readers are done before it is refilled
  }

#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) {
#pragma unroll
      for (int off = 1; off < 4; off <<= 1) l[i][j] += __shfl_xor_sync(0xffffffffu, l[i][j], off);
      if (pos[i][j] < 0) continue;
      const float inv = 1.0f / l[i][j];
      const long long ob = (row0 + (long long)(wrow + 16 * i + g + 8 * j)) * qstride + h * HD;
#pragma unroll
      for (int d = 0; d < DT; ++d) {
        const int col = 8 * d + 2 * t;
        const float x = o[i][d][2 * j] * inv, y = o[i][d][2 * j + 1] * inv;
        if (p.out16)
          *reinterpret_cast<unsigned*>(static_cast<W*>(p.out16) + ob + col) =
              unsigned(from_f32<W>(x).bits) | unsigned(from_f32<W>(y).bits) << 16;
        else
          *reinterpret_cast<float2*>(p.out + ob + col) = make_float2(x, y);
      }
    }
}

template <int BLOCK, int BK, int HD, int PAIR, int MT, typename W>
__device__ void attn_prefill_qs(const PrefillAttnParams& p) {
  prefill_for_each_tile<PAIR>(p, [&](const PrefillBlock& blk) { attn_prefill_qs_tile<BLOCK, BK, HD, MT, W>(p, blk); });
}
