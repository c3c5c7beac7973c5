// attn_prefill.pipe: the prompt's attention, FlashAttention-2 style: a block's 16 * WARPS query
// rows of one sequence and one head against BK-position K/V tiles, mma.sync m16n8k16 bf16 with
// f32 accumulation, online softmax, causal per row. What makes it fast (2.5x an earlier version
// with one shared-memory tile and 16-bit loads, at head dim 128 on an H100):
// - K/V tiles are double-buffered in dynamic shared memory: the next tile's cp.async copies
//   (zero-filled past the sequence's end) run while the current one is multiplied;
// - fragments come from ldmatrix: K's with one x4 per two k-chunks, V's with one x4.trans per two
//   8-column tiles of O;
// - the softmax runs in base 2 (Q pre-scaled by log2 e), one ex2.approx.ftz per score (pipe_exp2).
// Q is scaled and rounded to bf16 once (here from f32 p.q, or by qkv_post.rows into p.q16, the same
// bits); P is rounded to bf16 for P V. The output is f32 (p.out),
// or W rounded once (p.out16, the output projection's GEMM input) where given.
// Grid: (tiles, or pairs of tiles at PAIR 1, heads); block: BLOCK = 32 * WARPS threads; warp w
// owns rows 16w .. 16w + 15;
// dynamic shared memory: attn_prefill_pipe_smem (2 stages x K and V x BK rows of HD + 8).
#pragma once
#include "attention/prefill_common.cuh"
#include "common/async_copy.cuh"
#include "common/mma.cuh"
#include "common/params.h"
#include "common/types.cuh"

// One (query tile, head) of the block's.
template <int BLOCK, int BK, int HD, typename W>
__device__ __forceinline__ void attn_prefill_pipe_tile(const PrefillAttnParams& p, const PrefillBlock& blk) {
  static_assert(BLOCK % 32 == 0 && HD % 32 == 0 && BK % 16 == 0, "whole MMA tiles, k-chunks and O tiles in pairs");
  constexpr int KPAD = HD + 8;  // 16 bytes of padding per row: conflict-free ldmatrix rows
  constexpr int KC = HD / 16;   // k-chunks of S = Q K^T
  constexpr int NT = BK / 8;    // 8-column tiles of S
  constexpr int DT = HD / 8;    // 8-column tiles of O
  constexpr int TILE = BK * KPAD;  // elements of one K (or V) tile
  extern __shared__ __align__(16) unsigned short pipe_smem[];
  unsigned short* ks = pipe_smem;             // [2][BK][KPAD]
  unsigned short* vs = pipe_smem + 2 * TILE;  // [2][BK][KPAD]
  __shared__ int last_pos, first_pos;

  const int row0 = blk.row0, rows = blk.rows, h = blk.h;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int ra = warp * 16 + g, rb = ra + 8;  // this lane's two rows of the tile
  const int pa = ra < rows ? p.positions[row0 + ra] : -1;
  const int pb = rb < rows ? p.positions[row0 + rb] : -1;
  prefill_span(p, blk, &last_pos, &first_pos);

  // Q fragments (scaled by scale * log2 e, bf16): rows ra / rb, dims 16c + 2t (+1) and 16c + 2t + 8 (+1);
  // from p.q16 as they are (qkv_post.rows scaled and rounded them the same way), else from f32 q.
  const float qscale = p.scale * 1.4426950408889634f;
  unsigned qf[KC][4];
  const long long qstride = p.heads * HD;
  const long long qoa = (row0 + (long long)ra) * qstride + h * HD, qob = (row0 + (long long)rb) * qstride + h * HD;
#pragma unroll
  for (int c = 0; c < KC; ++c)
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int d = 16 * c + 2 * t + 8 * j;
      if (p.q16) {
        qf[c][2 * j] = pa >= 0 ? *reinterpret_cast<const unsigned*>(p.q16 + qoa + d) : 0u;
        qf[c][2 * j + 1] = pb >= 0 ? *reinterpret_cast<const unsigned*>(p.q16 + qob + d) : 0u;
        continue;
      }
      const float2 va = pa >= 0 ? *reinterpret_cast<const float2*>(p.q + qoa + d) : make_float2(0.0f, 0.0f);
      const float2 vb = pb >= 0 ? *reinterpret_cast<const float2*>(p.q + qob + d) : make_float2(0.0f, 0.0f);
      qf[c][2 * j] = pack_bf16x2(va.x * qscale, va.y * qscale);
      qf[c][2 * j + 1] = pack_bf16x2(vb.x * qscale, vb.y * qscale);
    }
  __syncthreads();
  const int end = last_pos + 1, tiles_n = (end + BK - 1) / BK;
  const unsigned short* kbase = p.k_cache + blk.kv_row0 * HD;
  const unsigned short* vbase = p.v_cache + blk.kv_row0 * HD;
  auto stage = [&](int buf, int k0) { prefill_stage_kv<BLOCK, BK, HD>(ks, vs, buf, kbase, vbase, k0, end); };

  float o[DT][4];
#pragma unroll
  for (int d = 0; d < DT; ++d) o[d][0] = o[d][1] = o[d][2] = o[d][3] = 0.0f;
  float m_a = AC_NEG_INF, m_b = AC_NEG_INF, l_a = 0.0f, l_b = 0.0f;  // l: this lane's columns only

  if (tiles_n > 0) stage(0, 0);
  for (int it = 0; it < tiles_n; ++it) {
    const int buf = it & 1, k0 = it * BK;
    if (it + 1 < tiles_n) {
      stage(buf ^ 1, k0 + BK);  // its buffer's readers finished at the last barrier
      cp_async_wait_group<1>();
    } else {
      cp_async_wait_group<0>();
    }
    __syncthreads();
    const unsigned short* kt = ks + buf * TILE;
    const unsigned short* vt = vs + buf * TILE;

    float s[NT][4];
#pragma unroll
    for (int n = 0; n < NT; ++n) {
      s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
      for (int c = 0; c < KC; c += 2) {
        unsigned b[4];  // b0, b1 of k-chunks c and c + 1 for keys 8n .. 8n + 7
        ldsm_x4(b, kt + (8 * n + lane % 8) * KPAD + 16 * c + (lane / 8) * 8);
        mma_bf16_16816(s[n], qf[c][0], qf[c][1], qf[c][2], qf[c][3], b[0], b[1]);
        mma_bf16_16816(s[n], qf[c + 1][0], qf[c + 1][1], qf[c + 1][2], qf[c + 1][3], b[2], b[3]);
      }
    }
    // Causal mask, where a key of the tile is past some row's position (tiles wholly before the
    // tile's first row's position need none: most of a long prompt's), then the online softmax
    // (base 2): the new row maxima over the quad of lanes sharing a row. Rows past the tile's end
    // (pa / pb -1) go unmasked there: their Q is 0, their scores finite, and they are not stored.
    const bool masked = k0 + BK - 1 > first_pos;  // the same for the whole block
    float mx_a = m_a, mx_b = m_b;
#pragma unroll
    for (int n = 0; n < NT; ++n)
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const int key = k0 + 8 * n + 2 * t + i;
        if (masked && key > pa) s[n][i] = AC_NEG_INF;
        if (masked && key > pb) s[n][2 + i] = AC_NEG_INF;
        mx_a = fmaxf(mx_a, s[n][i]);
        mx_b = fmaxf(mx_b, s[n][2 + i]);
      }
#pragma unroll
    for (int off = 1; off < 4; off <<= 1) {
      mx_a = fmaxf(mx_a, __shfl_xor_sync(0xffffffffu, mx_a, off));
      mx_b = fmaxf(mx_b, __shfl_xor_sync(0xffffffffu, mx_b, off));
    }
    // A row with nothing unmasked yet keeps max -inf: subtract 0 instead (2^-inf = 0, no NaN).
    const float ua = mx_a == AC_NEG_INF ? 0.0f : mx_a, ub = mx_b == AC_NEG_INF ? 0.0f : mx_b;
    const float ca = pipe_exp2(m_a - ua), cb = pipe_exp2(m_b - ub);
    m_a = mx_a;
    m_b = mx_b;
    l_a *= ca;
    l_b *= cb;
#pragma unroll
    for (int d = 0; d < DT; ++d) {
      o[d][0] *= ca;
      o[d][1] *= ca;
      o[d][2] *= cb;
      o[d][3] *= cb;
    }
#pragma unroll
    for (int n = 0; n < NT; ++n)
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        s[n][i] = pipe_exp2(s[n][i] - ua);
        s[n][2 + i] = pipe_exp2(s[n][2 + i] - ub);
        l_a += s[n][i];
        l_b += s[n][2 + i];
      }
    // O += P V: S's accumulator layout is P's A-fragment layout, two 8-column tiles per k-chunk.
#pragma unroll
    for (int c = 0; c < BK / 16; ++c) {
      const unsigned a0 = pack_bf16x2(s[2 * c][0], s[2 * c][1]), a1 = pack_bf16x2(s[2 * c][2], s[2 * c][3]);
      const unsigned a2 = pack_bf16x2(s[2 * c + 1][0], s[2 * c + 1][1]), a3 = pack_bf16x2(s[2 * c + 1][2], s[2 * c + 1][3]);
#pragma unroll
      for (int d = 0; d < DT; d += 2) {
        unsigned b[4];  // b0, b1 of O tiles d and d + 1 for keys 16c .. 16c + 15
        ldsm_x4_trans(b, vt + (16 * c + lane % 16) * KPAD + 8 * d + (lane / 16) * 8);
        mma_bf16_16816(o[d], a0, a1, a2, a3, b[0], b[1]);
        mma_bf16_16816(o[d + 1], a0, a1, a2, a3, b[2], b[3]);
      }
    }
    __syncthreads();  // this stage's readers are done before it is refilled
  }

#pragma unroll
  for (int off = 1; off < 4; off <<= 1) {
    l_a += __shfl_xor_sync(0xffffffffu, l_a, off);
    l_b += __shfl_xor_sync(0xffffffffu, l_b, off);
  }
  const float ia = 1.0f / l_a, ib = 1.0f / l_b;
  const long long oa = (row0 + (long long)ra) * qstride + h * HD, ob = (row0 + (long long)rb) * qstride + h * HD;
#pragma unroll
  for (int d = 0; d < DT; ++d) {
    const int col = 8 * d + 2 * t;
    if (p.out16) {  // two W per lane and row: one 32-bit store
      W* o16 = static_cast<W*>(p.out16);
      auto pack = [](float x, float y) { return unsigned(from_f32<W>(x).bits) | unsigned(from_f32<W>(y).bits) << 16; };
      if (pa >= 0) *reinterpret_cast<unsigned*>(o16 + oa + col) = pack(o[d][0] * ia, o[d][1] * ia);
      if (pb >= 0) *reinterpret_cast<unsigned*>(o16 + ob + col) = pack(o[d][2] * ib, o[d][3] * ib);
    } else {
      if (pa >= 0) *reinterpret_cast<float2*>(p.out + oa + col) = make_float2(o[d][0] * ia, o[d][1] * ia);
      if (pb >= 0) *reinterpret_cast<float2*>(p.out + ob + col) = make_float2(o[d][2] * ib, o[d][3] * ib);
    }
  }
}

template <int BLOCK, int BK, int HD, int PAIR, typename W>
__device__ void attn_prefill_pipe(const PrefillAttnParams& p) {
  prefill_for_each_tile<PAIR>(p, [&](const PrefillBlock& blk) { attn_prefill_pipe_tile<BLOCK, BK, HD, W>(p, blk); });
}
