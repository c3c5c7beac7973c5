// After the fused q/k/v projection of a step: per-head RMSNorm of q and k (when the model has
// q_norm/k_norm), rotary embedding (HF rotate_half pairing), and k, v written to the bf16 KV
// cache at each token's (slot, position). One block per (head, token): blockIdx.x < heads is a
// query head, then kv_heads key heads, then kv_heads value heads. cos/sin from the executor's
// tables where given (QkvPostParams::rope_cos).
#pragma once
#include "common/params.h"
#include "common/pdl.cuh"
#include "common/reduce.cuh"
#include "common/types.cuh"

template <int BLOCK, typename W>
__device__ void qkv_post(const QkvPostParams& p) {
  __shared__ float scratch[BLOCK / 32];
  __shared__ float row[1024];  // head_dim <= 1024
  pdl_wait();
  const long long t = blockIdx.y;
  const long long hd = p.head_dim, half = hd / 2;
  const long long q_dim = p.heads * hd, kv_dim = p.kv_heads * hd;
  const long long h = blockIdx.x;
  const float* qkv = p.qkv + t * (q_dim + 2 * kv_dim);
  const bool is_q = h < p.heads, is_k = !is_q && h < p.heads + p.kv_heads;
  const float* src = is_q ? qkv + h * hd : is_k ? qkv + q_dim + (h - p.heads) * hd
                                               : qkv + q_dim + kv_dim + (h - p.heads - p.kv_heads) * hd;
  const long long kvh = is_q ? 0 : is_k ? h - p.heads : h - p.heads - p.kv_heads;
  unsigned short* cache_row = nullptr;
  if (!is_q) {
    const long long base = (((long long)p.slots[t] * p.kv_heads + kvh) * p.max_seq + p.positions[t]) * hd;
    cache_row = (is_k ? p.k_cache : p.v_cache) + base;
  }
  if (!is_q && !is_k) {  // v: stored as is
    for (long long j = threadIdx.x; j < hd; j += BLOCK) cache_row[j] = from_f32<ac_bf16>(src[j]).bits;
    pdl_launch_dependents();
    return;
  }
  const W* norm = static_cast<const W*>(is_q ? p.q_norm : p.k_norm);
  float inv = 1.0f;
  if (norm) {
    float ss = 0.0f;
    for (long long j = threadIdx.x; j < hd; j += BLOCK) ss += src[j] * src[j];
    ss = block_sum<BLOCK>(ss, scratch);
    inv = 1.0f / sqrtf(ss / (float)hd + p.eps);
  }
  for (long long j = threadIdx.x; j < hd; j += BLOCK) row[j] = norm ? to_f32(norm[j]) * (src[j] * inv) : src[j];
  __syncthreads();
  const float pos = (float)p.positions[t];
  // The executor's tables (a prompt step has thousands of blocks, and each would otherwise run
  // head_dim double-precision sin/cos), else the same values computed here.
  const float* cos_row = p.rope_cos ? p.rope_cos + (long long)p.positions[t] * half : nullptr;
  const float* sin_row = p.rope_sin ? p.rope_sin + (long long)p.positions[t] * half : nullptr;
  for (long long j = threadIdx.x; j < half; j += BLOCK) {
    const float angle = pos * p.inv_freq[j];
    const float c = cos_row ? cos_row[j] : (float)cos((double)angle), s = sin_row ? sin_row[j] : (float)sin((double)angle);
    const float a = row[j], b = row[j + half];
    const float ra = a * c - b * s, rb = b * c + a * s;
    if (is_q) {
      p.q_out[t * q_dim + h * hd + j] = ra;
      p.q_out[t * q_dim + h * hd + j + half] = rb;
    } else {
      cache_row[j] = from_f32<ac_bf16>(ra).bits;
      cache_row[j + half] = from_f32<ac_bf16>(rb).bits;
    }
  }
  pdl_launch_dependents();
}
