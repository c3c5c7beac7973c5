// One kernel per decode attention: grid (kv_heads, max_splits, n). Every block normalises and
// rotates its query group (q_norm + rope); the block whose split holds the token's own position
// also normalises and rotates the new key, writes k and v to the bf16 cache and uses them from
// shared memory; each block attends its split with an online softmax; the last block of a
// (token, KV head) to finish merges the splits (no separate combine kernel). One split: the
// result is written directly.
#pragma once
#include "common/params.h"
#include "common/pdl.cuh"
#include "common/reduce.cuh"
#include "common/types.cuh"

// Per-head RMSNorm (optional) and rope of `src` (HD values) into dst, by one warp.
template <int HD, typename W>
__device__ __forceinline__ void norm_rope_warp(const float* src, float* dst, const W* norm, float eps, float pos,
                                               const float* inv_freq, float scale, int lane) {
  float inv = 1.0f;
  if (norm) {
    float ss = 0.0f;
    for (int j = lane; j < HD; j += 32) ss += src[j] * src[j];
    ss = warp_sum(ss);
    inv = 1.0f / sqrtf(ss / (float)HD + eps);
  }
  for (int j = lane; j < HD / 2; j += 32) {
    const float a = norm ? to_f32(norm[j]) * (src[j] * inv) : src[j];
    const float b = norm ? to_f32(norm[j + HD / 2]) * (src[j + HD / 2] * inv) : src[j + HD / 2];
    const float angle = pos * inv_freq[j];
    const float c = (float)cos((double)angle), s = (float)sin((double)angle);
    dst[j] = (a * c - b * s) * scale;
    dst[j + HD / 2] = (b * c + a * s) * scale;
  }
}

template <int BLOCK, int TILE, int SPLIT, int HD, int GROUP, typename W>
__device__ void attn_decode_fused(const FusedAttnParams& p) {
  static_assert(SPLIT % TILE == 0, "a split is whole tiles");
  static_assert((GROUP * HD) % BLOCK == 0, "outputs divide among the threads");
  constexpr int KPAD = HD + 8;
  constexpr int OUTS = GROUP * HD / BLOCK;
  constexpr int WARPS = BLOCK / 32;
  __shared__ __align__(16) unsigned short ks[TILE][KPAD];
  __shared__ __align__(16) unsigned short vs[TILE][KPAD];
  __shared__ __align__(16) unsigned short knew[HD], vnew[HD];
  __shared__ float qs[GROUP][HD];
  __shared__ float sc[GROUP][TILE];
  __shared__ float m_run[GROUP], l_run[GROUP], corr[GROUP];
  __shared__ bool last;

  const long long kvh = blockIdx.x, split = blockIdx.y, t = blockIdx.z;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  pdl_wait();
  const long long pos = p.positions[t];
  const long long len = pos + 1;
  const long long splits = (len + SPLIT - 1) / SPLIT;
  if (split >= splits) return;
  const long long begin = split * SPLIT, end = begin + SPLIT < len ? begin + SPLIT : len;
  const long long q_dim = p.heads * HD, kv_dim = p.kv_heads * HD;
  const float* qkv = p.qkv + t * (q_dim + 2 * kv_dim);
  const long long h0 = kvh * GROUP;
  const W* qn = static_cast<const W*>(p.q_norm);
  const W* kn = static_cast<const W*>(p.k_norm);
  const long long slot = p.slots[t];
  unsigned short* kbase = p.k_cache + (slot * p.kv_heads + kvh) * p.max_seq * HD;
  unsigned short* vbase = p.v_cache + (slot * p.kv_heads + kvh) * p.max_seq * HD;
  const bool owns_new = split == splits - 1;

  for (int g = warp; g < GROUP; g += WARPS)
    norm_rope_warp<HD, W>(qkv + (h0 + g) * HD, qs[g], qn, p.eps, (float)pos, p.inv_freq, p.scale, lane);
  if (owns_new && warp == WARPS - 1) {  // the step's key and value for this KV head
    __shared__ float kf[HD];
    norm_rope_warp<HD, W>(qkv + q_dim + kvh * HD, kf, kn, p.eps, (float)pos, p.inv_freq, 1.0f, lane);
    __syncwarp();
    for (int j = lane; j < HD; j += 32) {
      const unsigned short kb = from_f32<ac_bf16>(kf[j]).bits;
      const unsigned short vb = from_f32<ac_bf16>(qkv[q_dim + kv_dim + kvh * HD + j]).bits;
      knew[j] = kb;
      vnew[j] = vb;
      kbase[pos * HD + j] = kb;
      vbase[pos * HD + j] = vb;
    }
  }
  if (threadIdx.x < GROUP) {
    m_run[threadIdx.x] = AC_NEG_INF;
    l_run[threadIdx.x] = 0.0f;
  }
  __syncthreads();
  float acc[OUTS];
#pragma unroll
  for (int o = 0; o < OUTS; ++o) acc[o] = 0.0f;

  for (long long p0 = begin; p0 < end; p0 += TILE) {
    const int rows = end - p0 < TILE ? (int)(end - p0) : TILE;
    constexpr int CHUNKS = HD / 8;
    for (int i = threadIdx.x; i < TILE * CHUNKS; i += BLOCK) {
      const int r = i / CHUNKS, c = i % CHUNKS;
      uint4 kv = {0u, 0u, 0u, 0u}, vv = {0u, 0u, 0u, 0u};
      if (r < rows) {
        if (p0 + r == pos) {  // written above: take it from shared memory, not the cache
          kv = *reinterpret_cast<const uint4*>(&knew[8 * c]);
          vv = *reinterpret_cast<const uint4*>(&vnew[8 * c]);
        } else {
          kv = *reinterpret_cast<const uint4*>(kbase + (p0 + r) * HD + 8 * c);
          vv = *reinterpret_cast<const uint4*>(vbase + (p0 + r) * HD + 8 * c);
        }
      }
      *reinterpret_cast<uint4*>(&ks[r][8 * c]) = kv;
      *reinterpret_cast<uint4*>(&vs[r][8 * c]) = vv;
    }
    __syncthreads();
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
    for (int g = warp; g < GROUP; g += WARPS) {
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
  pdl_launch_dependents();

  if (splits == 1) {  // the whole context in one block: finish here
#pragma unroll
    for (int o = 0; o < OUTS; ++o) {
      const int i = threadIdx.x + o * BLOCK;
      const int g = i / HD, d = i % HD;
      p.out[(t * p.heads + h0 + g) * HD + d] = acc[o] / l_run[g];
    }
    return;
  }
  const long long ms = p.max_splits;
#pragma unroll
  for (int o = 0; o < OUTS; ++o) {
    const int i = threadIdx.x + o * BLOCK;
    const int g = i / HD, d = i % HD;
    p.part_o[((t * p.heads + h0 + g) * ms + split) * HD + d] = acc[o];
  }
  if (threadIdx.x < GROUP) {
    const long long j = ((t * p.heads + h0 + threadIdx.x) * ms + split) * 2;
    p.part_ml[j] = m_run[threadIdx.x];
    p.part_ml[j + 1] = l_run[threadIdx.x];
  }
  // The last block of this (token, KV head) merges every split.
  __threadfence();
  __syncthreads();
  unsigned* counter = p.counters + t * p.kv_heads + kvh;
  if (threadIdx.x == 0) last = atomicAdd(counter, 1u) == (unsigned)(splits - 1);
  __syncthreads();
  if (!last) return;
  __threadfence();
  for (int i = threadIdx.x; i < GROUP * HD; i += BLOCK) {
    const int g = i / HD, d = i % HD;
    const volatile float* ml = p.part_ml + (t * p.heads + h0 + g) * ms * 2;
    const volatile float* po = p.part_o + (t * p.heads + h0 + g) * ms * HD;
    float m = AC_NEG_INF;
    for (long long s = 0; s < splits; ++s) m = fmaxf(m, ml[2 * s]);
    float l = 0.0f, o = 0.0f;
    for (long long s = 0; s < splits; ++s) {
      const float w = expf(ml[2 * s] - m);
      l += ml[2 * s + 1] * w;
      o += po[s * HD + d] * w;
    }
    p.out[(t * p.heads + h0 + g) * HD + d] = o / l;
  }
  if (threadIdx.x == 0) *counter = 0u;
}
