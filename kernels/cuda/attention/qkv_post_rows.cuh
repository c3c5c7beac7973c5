// qkv_post.rows: qkv_post's work for a prompt step (q/k RMSNorm per head, rope from the
// executor's cos/sin tables, k and v written to the bf16 KV cache), one warp per (token, head)
// row instead of one block. A 2048-token prompt has tens of thousands of rows of HD values:
// qkv_post.fused gave each a block with two barriers and ran at a tenth of the copy bandwidth on
// an H100. Here lane l holds the row's HD / 32 consecutive values; the norm's sum is a warp
// shuffle and rope's partner (d +- HD / 2) is lane l ^ 16's value at the same index.
// Grid: ceil(n * (heads + 2 kv_heads) / (BLOCK / 32)) blocks of BLOCK threads; row r is token
// r / (heads + 2 kv_heads), then query heads, key heads, value heads (the qkv row's order).
// Needs p.rope_cos / p.rope_sin. With p.q16, q is written there as attn_prefill.pipe's bf16 Q
// fragments (scaled by p.q16_scale, rounded once) instead of f32 to p.q_out.
#pragma once
#include "common/params.h"
#include "common/types.cuh"

template <int BLOCK, int HD, typename W>
__device__ void qkv_post_rows(const QkvPostParams& p) {
  static_assert(HD % 32 == 0 && HD <= 256 && BLOCK % 32 == 0, "whole values per lane, whole warps");
  constexpr int E = HD / 32, HALF = HD / 2;
  const long long width = p.heads + 2 * p.kv_heads;
  const long long r = (long long)blockIdx.x * (BLOCK / 32) + threadIdx.x / 32;
  if (r >= p.n * width) return;
  const int lane = threadIdx.x % 32;
  const long long t = r / width, h = r % width;
  const long long q_dim = p.heads * HD, kv_dim = p.kv_heads * HD;
  const float* src = p.qkv + t * (q_dim + 2 * kv_dim) + h * HD + lane * E;  // q | k | v heads are consecutive
  float x[E];
#pragma unroll
  for (int i = 0; i < E; i += (E % 4 == 0 ? 4 : E % 2 == 0 ? 2 : 1)) {
    if constexpr (E % 4 == 0) {
      const float4 v = *reinterpret_cast<const float4*>(src + i);
      x[i] = v.x, x[i + 1] = v.y, x[i + 2] = v.z, x[i + 3] = v.w;
    } else if constexpr (E % 2 == 0) {
      const float2 v = *reinterpret_cast<const float2*>(src + i);
      x[i] = v.x, x[i + 1] = v.y;
    } else {
      x[i] = src[i];
    }
  }
  const bool is_q = h < p.heads, is_k = !is_q && h < p.heads + p.kv_heads;
  unsigned short* cache_row = nullptr;
  if (!is_q) {
    const long long kvh = is_k ? h - p.heads : h - p.heads - p.kv_heads;
    cache_row = (is_k ? p.k_cache : p.v_cache) + (((long long)p.slots[t] * p.kv_heads + kvh) * p.max_seq + p.positions[t]) * HD +
                lane * E;
  }
  if (!is_q && !is_k) {  // v: stored as is
#pragma unroll
    for (int i = 0; i < E; ++i) cache_row[i] = from_f32<ac_bf16>(x[i]).bits;
    return;
  }
  if (const W* norm = static_cast<const W*>(is_q ? p.q_norm : p.k_norm)) {
    float ss = 0.0f;
#pragma unroll
    for (int i = 0; i < E; ++i) ss += x[i] * x[i];
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, off);
    const float inv = 1.0f / sqrtf(ss / (float)HD + p.eps);
#pragma unroll
    for (int i = 0; i < E; ++i) x[i] = to_f32(norm[lane * E + i]) * (x[i] * inv);
  }
  // Rope (rotate_half): the first half's d pairs with d + HALF, held by lane ^ 16 at the same i.
  const bool first = lane < 16;
  const long long table = (long long)p.positions[t] * HALF + (lane % 16) * E;
  float y[E];
#pragma unroll
  for (int i = 0; i < E; ++i) {
    const float other = __shfl_xor_sync(0xffffffffu, x[i], 16);
    const float c = p.rope_cos[table + i], s = p.rope_sin[table + i];
    y[i] = first ? x[i] * c - other * s : x[i] * c + other * s;
  }
  if (is_q && p.q16) {  // pre-scaled bf16 for attn_prefill.pipe: half the bytes, the same rounding
    unsigned short* q = p.q16 + t * q_dim + h * HD + lane * E;
#pragma unroll
    for (int i = 0; i < E; ++i) q[i] = from_f32<ac_bf16>(y[i] * p.q16_scale).bits;
  } else if (is_q) {
    float* q = p.q_out + t * q_dim + h * HD + lane * E;
#pragma unroll
    for (int i = 0; i < E; ++i) q[i] = y[i];
  } else {
#pragma unroll
    for (int i = 0; i < E; ++i) cache_row[i] = from_f32<ac_bf16>(y[i]).bits;
  }
}
