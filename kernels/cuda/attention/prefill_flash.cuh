// Prefill attention over the bf16 KV cache, flash-attention style (FlashAttention-2's loop): a
// block takes a tile of up to 16 * WARPS consecutive query rows of one sequence (the host's tile
// table) for one query head, and walks the K/V cache of that sequence BK positions at a time:
// S = Q K^T and O += P V on tensor cores (mma.sync m16n8k16, bf16 in, f32 accumulation), the
// softmax online in f32 per row, causal per row (a row attends positions [0, its position]).
// Each K/V tile is read once per 16 * WARPS rows instead of once per row as the decode kernels
// do, which is what makes long prompts fast. The step's K and V rows are in the cache already
// (qkv_post wrote them). Q is scaled and rounded to bf16 once; P is rounded to bf16 for P V.
// Grid: (tiles, heads); block: BLOCK = 32 * WARPS threads; warp w owns rows 16w .. 16w + 15.
#pragma once
#include "common/mma.cuh"
#include "common/params.h"
#include "common/types.cuh"

template <int BLOCK, int BK, int HD>
__device__ void attn_prefill_flash(const PrefillAttnParams& p) {
  static_assert(BLOCK % 32 == 0 && HD % 16 == 0 && BK % 16 == 0, "whole MMA tiles");
  constexpr int KPAD = HD + 8;  // 16 bytes of padding per row: no bank conflicts on the fragment loads
  constexpr int KC = HD / 16;   // k-chunks of S = Q K^T
  constexpr int NT = BK / 8;    // 8-column tiles of S
  constexpr int DT = HD / 8;    // 8-column tiles of O
  __shared__ __align__(16) unsigned short ks[BK][KPAD];
  __shared__ __align__(16) unsigned short vs[BK][KPAD];
  __shared__ int last_pos;

  const int tile = blockIdx.x;
  const long long h = blockIdx.y;
  const int row0 = p.tiles[2 * tile], rows = p.tiles[2 * tile + 1];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const long long kvh = h / (p.heads / p.kv_heads);
  const long long slot = p.slots[row0];
  const int ra = warp * 16 + g, rb = ra + 8;  // this lane's two rows of the tile
  const int pa = ra < rows ? p.positions[row0 + ra] : -1;
  const int pb = rb < rows ? p.positions[row0 + rb] : -1;
  if (threadIdx.x == 0) {
    int m = -1;
    for (int i = 0; i < rows; ++i) m = max(m, p.positions[row0 + i]);
    last_pos = m;
  }

  // Q fragments (scaled, bf16): rows ra / rb, dims 16c + 2t (+1) and 16c + 2t + 8 (+1).
  unsigned qf[KC][4];
  const long long qstride = p.heads * HD;
  const float* qa = p.q + (row0 + (long long)ra) * qstride + h * HD;
  const float* qb = p.q + (row0 + (long long)rb) * qstride + h * HD;
#pragma unroll
  for (int c = 0; c < KC; ++c)
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int d = 16 * c + 2 * t + 8 * j;
      const float2 va = pa >= 0 ? *reinterpret_cast<const float2*>(qa + d) : make_float2(0.0f, 0.0f);
      const float2 vb = pb >= 0 ? *reinterpret_cast<const float2*>(qb + d) : make_float2(0.0f, 0.0f);
      qf[c][2 * j] = pack_bf16x2(va.x * p.scale, va.y * p.scale);
      qf[c][2 * j + 1] = pack_bf16x2(vb.x * p.scale, vb.y * p.scale);
    }
  __syncthreads();
  const int end = last_pos + 1;

  float o[DT][4];
#pragma unroll
  for (int d = 0; d < DT; ++d) o[d][0] = o[d][1] = o[d][2] = o[d][3] = 0.0f;
  float m_a = AC_NEG_INF, m_b = AC_NEG_INF, l_a = 0.0f, l_b = 0.0f;  // l: this lane's columns only
  const unsigned short* kbase = p.k_cache + (slot * p.kv_heads + kvh) * p.max_seq * HD;
  const unsigned short* vbase = p.v_cache + (slot * p.kv_heads + kvh) * p.max_seq * HD;

  for (int k0 = 0; k0 < end; k0 += BK) {
    __syncthreads();  // the previous tile's readers are done
    constexpr int CHUNKS = HD / 8;
    for (int i = threadIdx.x; i < BK * CHUNKS; i += BLOCK) {
      const int r = i / CHUNKS, c = i % CHUNKS;
      uint4 kv = {0u, 0u, 0u, 0u}, vv = {0u, 0u, 0u, 0u};
      if (k0 + r < end) {
        kv = *reinterpret_cast<const uint4*>(kbase + (long long)(k0 + r) * HD + 8 * c);
        vv = *reinterpret_cast<const uint4*>(vbase + (long long)(k0 + r) * HD + 8 * c);
      }
      *reinterpret_cast<uint4*>(&ks[r][8 * c]) = kv;
      *reinterpret_cast<uint4*>(&vs[r][8 * c]) = vv;
    }
    __syncthreads();

    float s[NT][4];
#pragma unroll
    for (int n = 0; n < NT; ++n) {
      s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
      for (int c = 0; c < KC; ++c) {
        const unsigned b0 = *reinterpret_cast<const unsigned*>(&ks[8 * n + g][16 * c + 2 * t]);
        const unsigned b1 = *reinterpret_cast<const unsigned*>(&ks[8 * n + g][16 * c + 2 * t + 8]);
        mma_bf16_16816(s[n], qf[c][0], qf[c][1], qf[c][2], qf[c][3], b0, b1);
      }
    }
    // Causal mask, then the online softmax: the new row maxima over the quad of lanes sharing a row.
    float mx_a = m_a, mx_b = m_b;
#pragma unroll
    for (int n = 0; n < NT; ++n)
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const int key = k0 + 8 * n + 2 * t + i;
        if (key > pa) s[n][i] = AC_NEG_INF;
        if (key > pb) s[n][2 + i] = AC_NEG_INF;
        mx_a = fmaxf(mx_a, s[n][i]);
        mx_b = fmaxf(mx_b, s[n][2 + i]);
      }
#pragma unroll
    for (int off = 1; off < 4; off <<= 1) {
      mx_a = fmaxf(mx_a, __shfl_xor_sync(0xffffffffu, mx_a, off));
      mx_b = fmaxf(mx_b, __shfl_xor_sync(0xffffffffu, mx_b, off));
    }
    // A row with nothing unmasked yet keeps max -inf: subtract 0 instead (exp(-inf) = 0, no NaN).
    const float ua = mx_a == AC_NEG_INF ? 0.0f : mx_a, ub = mx_b == AC_NEG_INF ? 0.0f : mx_b;
    const float ca = expf(m_a - ua), cb = expf(m_b - ub);
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
        s[n][i] = expf(s[n][i] - ua);
        s[n][2 + i] = expf(s[n][2 + i] - ub);
        l_a += s[n][i];
        l_b += s[n][2 + i];
      }
    // O += P V: S's accumulator layout is P's A-fragment layout, two 8-column tiles per k-chunk.
#pragma unroll
    for (int c = 0; c < BK / 16; ++c) {
      const unsigned a0 = pack_bf16x2(s[2 * c][0], s[2 * c][1]), a1 = pack_bf16x2(s[2 * c][2], s[2 * c][3]);
      const unsigned a2 = pack_bf16x2(s[2 * c + 1][0], s[2 * c + 1][1]), a3 = pack_bf16x2(s[2 * c + 1][2], s[2 * c + 1][3]);
      const int kr = 16 * c + 2 * t;
#pragma unroll
      for (int d = 0; d < DT; ++d) {
        const int col = 8 * d + g;
        const unsigned b0 = (unsigned)vs[kr][col] | ((unsigned)vs[kr + 1][col] << 16);
        const unsigned b1 = (unsigned)vs[kr + 8][col] | ((unsigned)vs[kr + 9][col] << 16);
        mma_bf16_16816(o[d], a0, a1, a2, a3, b0, b1);
      }
    }
  }

#pragma unroll
  for (int off = 1; off < 4; off <<= 1) {
    l_a += __shfl_xor_sync(0xffffffffu, l_a, off);
    l_b += __shfl_xor_sync(0xffffffffu, l_b, off);
  }
  float* oa = p.out + (row0 + (long long)ra) * qstride + h * HD;
  float* ob = p.out + (row0 + (long long)rb) * qstride + h * HD;
#pragma unroll
  for (int d = 0; d < DT; ++d) {
    const int col = 8 * d + 2 * t;
    if (pa >= 0) *reinterpret_cast<float2*>(oa + col) = make_float2(o[d][0] / l_a, o[d][1] / l_a);
    if (pb >= 0) *reinterpret_cast<float2*>(ob + col) = make_float2(o[d][2] / l_b, o[d][3] / l_b);
  }
}
