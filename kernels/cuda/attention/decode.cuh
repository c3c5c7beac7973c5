// Flash-decoding over a bf16 KV cache ([slot, kv_head, position, HD]). attn_decode: one block per
// (KV head, split of the positions, token) attends the GROUP query heads that share the KV head,
// tile by tile (TILE positions of K and V staged in shared memory with 16-byte loads), with an
// online softmax; it writes an unnormalised partial (o, running max, sum). attn_combine merges
// a token's splits. Works for decode (one token per sequence) and, slowly, for prefill rows.
// Grid: (kv_heads, max_splits, n); splits past a token's position exit at once.
#pragma once
#include "attention/partials.cuh"
#include "common/params.h"
#include "common/pdl.cuh"
#include "common/reduce.cuh"
#include "common/types.cuh"

template <int BLOCK, int TILE, int SPLIT, int HD, int GROUP>
__device__ void attn_decode(const DecodeAttnParams& p) {
  static_assert(SPLIT % TILE == 0, "a split is whole tiles");
  static_assert((GROUP * HD) % BLOCK == 0, "outputs divide among the threads");
  constexpr int KPAD = HD + 8;                  // 16 bytes of padding per row: no bank conflicts
  constexpr int OUTS = GROUP * HD / BLOCK;      // outputs (query head, dim) per thread
  __shared__ __align__(16) unsigned short ks[TILE][KPAD];
  __shared__ __align__(16) unsigned short vs[TILE][KPAD];
  __shared__ float qs[GROUP][HD];
  __shared__ float sc[GROUP][TILE];
  __shared__ float m_run[GROUP], l_run[GROUP], corr[GROUP];

  const long long kvh = blockIdx.x, split = blockIdx.y, t = blockIdx.z;
  pdl_wait();
  const long long len = (long long)p.positions[t] + 1;
  const long long begin = split * SPLIT;
  if (begin >= len) return;
  const long long end = begin + SPLIT < len ? begin + SPLIT : len;
  const long long slot = p.slots[t];
  const unsigned short* kbase = p.k_cache + (slot * p.kv_heads + kvh) * p.max_seq * HD;
  const unsigned short* vbase = p.v_cache + (slot * p.kv_heads + kvh) * p.max_seq * HD;
  const long long h0 = kvh * GROUP;  // first query head of the group

  for (int i = threadIdx.x; i < GROUP * HD; i += BLOCK)
    qs[i / HD][i % HD] = p.q[(t * p.heads + h0 + i / HD) * HD + i % HD] * p.scale;
  if (threadIdx.x < GROUP) {
    m_run[threadIdx.x] = AC_NEG_INF;
    l_run[threadIdx.x] = 0.0f;
  }
  float acc[OUTS];
#pragma unroll
  for (int o = 0; o < OUTS; ++o) acc[o] = 0.0f;

  for (long long p0 = begin; p0 < end; p0 += TILE) {
    const int rows = end - p0 < TILE ? (int)(end - p0) : TILE;
    // Stage K and V rows with 16-byte loads (8 bf16 each).
    constexpr int CHUNKS = HD / 8;
    for (int i = threadIdx.x; i < TILE * CHUNKS; i += BLOCK) {
      const int r = i / CHUNKS, c = i % CHUNKS;
      uint4 kv = {0u, 0u, 0u, 0u}, vv = {0u, 0u, 0u, 0u};
      if (r < rows) {
        kv = *reinterpret_cast<const uint4*>(kbase + (p0 + r) * HD + 8 * c);
        vv = *reinterpret_cast<const uint4*>(vbase + (p0 + r) * HD + 8 * c);
      }
      *reinterpret_cast<uint4*>(&ks[r][8 * c]) = kv;
      *reinterpret_cast<uint4*>(&vs[r][8 * c]) = vv;
    }
    __syncthreads();
    // Scores for (query head, position) pairs.
    for (int i = threadIdx.x; i < GROUP * TILE; i += BLOCK) {
      const int g = i / TILE, r = i % TILE;
      float s = AC_NEG_INF;
      if (r < rows) {
        s = 0.0f;
#pragma unroll 8
        for (int c = 0; c < HD; c += 8) {
          const uint4 kv = *reinterpret_cast<const uint4*>(&ks[r][c]);
          const unsigned w[4] = {kv.x, kv.y, kv.z, kv.w};
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            s = fmaf(qs[g][c + 2 * j], __uint_as_float(w[j] << 16), s);
            s = fmaf(qs[g][c + 2 * j + 1], __uint_as_float(w[j] & 0xffff0000u), s);
          }
        }
      }
      sc[g][r] = s;
    }
    __syncthreads();
    // Online softmax update, one warp per query head.
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (int g = warp; g < GROUP; g += BLOCK / 32) {
      float mx = AC_NEG_INF;
      for (int r = lane; r < TILE; r += 32) mx = fmaxf(mx, sc[g][r]);
      mx = warp_max(mx);
      const float m_new = fmaxf(m_run[g], mx);
      float sum = 0.0f;
      for (int r = lane; r < TILE; r += 32) {
        const float e = r < rows ? expf(sc[g][r] - m_new) : 0.0f;
        sc[g][r] = e;
        sum += e;
      }
      sum = warp_sum(sum);
      if (lane == 0) {
        const float c = expf(m_run[g] - m_new);
        corr[g] = c;
        l_run[g] = l_run[g] * c + sum;
        m_run[g] = m_new;
      }
    }
    __syncthreads();
    // o = o * corr + P V for this thread's outputs.
#pragma unroll
    for (int o = 0; o < OUTS; ++o) {
      const int i = threadIdx.x + o * BLOCK;
      const int g = i / HD, d = i % HD;
      float a = acc[o] * corr[g];
      for (int r = 0; r < rows; ++r) a = fmaf(sc[g][r], to_f32(ac_bf16{vs[r][d]}), a);
      acc[o] = a;
    }
    __syncthreads();
  }
  attn_store_partial<BLOCK, HD, GROUP>(p, t, h0, split, acc, m_run, l_run);
  pdl_launch_dependents();
}

// Merges the splits of each (token, query head): grid (heads, n), HD threads.
template <int SPLIT, int HD>
__device__ void attn_combine(const DecodeAttnParams& p) {
  pdl_wait();
  const long long h = blockIdx.x, t = blockIdx.y;
  const long long len = (long long)p.positions[t] + 1;
  const long long splits = (len + SPLIT - 1) / SPLIT;
  const long long ms = p.max_splits;
  const float* ml = p.part_ml + (t * p.heads + h) * ms * 2;
  float m = AC_NEG_INF;
  for (long long s = 0; s < splits; ++s) m = fmaxf(m, ml[2 * s]);
  float l = 0.0f, o = 0.0f;
  const int d = threadIdx.x;
  for (long long s = 0; s < splits; ++s) {
    const float w = expf(ml[2 * s] - m);
    l += ml[2 * s + 1] * w;
    o += p.part_o[((t * p.heads + h) * ms + s) * HD + d] * w;
  }
  p.out[(t * p.heads + h) * HD + d] = o / l;
  pdl_launch_dependents();
}
