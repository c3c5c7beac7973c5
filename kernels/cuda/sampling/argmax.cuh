// Greedy token choice on the device: one block per row, the largest logit, the lowest index on
// ties (as torch.argmax and the CPU sampler). A row holding NaN or Inf yields -1: the runtime
// reports it instead of choosing a token.
#pragma once
#include "common/params.h"
#include "common/pdl.cuh"
#include "common/types.cuh"

template <int BLOCK>
__device__ void argmax_ref(const ArgmaxParams& p) {
  __shared__ float best_v[BLOCK];
  __shared__ int best_i[BLOCK];
  __shared__ int bad;
  if (threadIdx.x == 0) bad = 0;
  __syncthreads();
  const long long r = blockIdx.x;
  const float* l = p.logits + r * p.vocab;
  float bv = AC_NEG_INF;
  int bi = 0x7fffffff;
  for (long long i = threadIdx.x; i < p.vocab; i += BLOCK) {
    const float v = l[i];
    if (!isfinite(v)) bad = 1;
    if (v > bv || (v == bv && (int)i < bi)) { bv = v; bi = (int)i; }
  }
  best_v[threadIdx.x] = bv;
  best_i[threadIdx.x] = bi;
  __syncthreads();
  for (int s = BLOCK / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) {
      const float v = best_v[threadIdx.x + s];
      const int i = best_i[threadIdx.x + s];
      if (v > best_v[threadIdx.x] || (v == best_v[threadIdx.x] && i < best_i[threadIdx.x])) {
        best_v[threadIdx.x] = v;
        best_i[threadIdx.x] = i;
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) p.out[r] = bad ? -1 : best_i[0];
}

// The token of each batch row from an ARGMAX GEMV's published keys (gemv/common.cuh), launched
// right after it: the wait returns once every block of the GEMV has finished, so every block's
// atomic max is in. Zeroes the keys for the next launch.
// With p.positions, also the next chained step's inputs (ArgmaxFinishParams).
template <int BLOCK>
__device__ void argmax_finish(const ArgmaxFinishParams& p) {
  pdl_wait();
  int* host = p.host_tokens && p.positions ? p.host_tokens + (p.positions[0] & 1) * p.slot_len : nullptr;
  if (p.positions) __syncthreads();  // every thread has read positions[0] before one advances it
  for (long long b = threadIdx.x; b < p.B; b += BLOCK) {
    const unsigned long long k = p.best[b];
    const int token = k == 0ull || k == ~0ull ? -1 : (int)~(unsigned)(k & 0xffffffffull);
    p.token_out[b] = token;
    if (host) host[b] = token;
    p.best[b] = 0ull;
    if (p.positions) p.positions[b] += 1;
  }
}
