// moe_down.split: a decode step's down projection with one grid row per pick instead of per token.
// moe_down_gemv's warp walks a token's top_k picks one after another, and each pick starts with
// two dependent loads (its id, then its expert's row pointer) before its row's three 16-byte loads
// per lane (a Qwen3-30B-A3B expert row is 768 values): eight such chains a warp, at 1.0-1.3 TB/s
// on an H100. Here a warp computes one pick's dot products for its ROWS outputs and stores them
// (p.part); the last of a token's top_k blocks for those outputs (CUDA's threadFenceReduction
// pattern: fence, count in p.done, which it resets) adds them into the residual in pick order,
// weighted, exactly as moe_down_gemv adds them: the same bits.
// The pick's expert is read before waiting for the gate/up GEMV (pdl_wait): the router wrote it, and
// the router has finished whenever this kernel runs (with p.early the gate/up GEMV lets this one
// launch only after its own wait). With p.early the warp then asks L2 for its rows and lets the
// next kernel (the next layer's QKV GEMV, which streams its weights before waiting) launch, so
// both overlap the gate/up GEMV's end. ILP: the dot products' loads in flight (moe_row_dot).
// Grid: (ceil(hidden / (BLOCK / 32 * ROWS)), n * top_k); no dynamic shared memory; the
// activations are read through L1 (the block's warps share one pick's row). p.part: [n * top_k,
// hidden] floats; p.done: [n * gridDim.x] zeros.
#pragma once
#include "moe/gemv.cuh"

template <int BLOCK, int ROWS, int ILP, typename W>
__device__ void moe_down_split(const MoeGemvParams& p) {
  static_assert(BLOCK % 32 == 0, "whole warps");
  const long long pick = blockIdx.y, t = pick / p.top_k;
  const int lane = threadIdx.x % 32;
  // __ldcg: from L2, where the router's picks are (never an older layer's line in this SM's L1).
  const W* down = static_cast<const W*>(p.table[2 * p.experts + __ldcg(p.ids + pick)]);
  const long long first = (long long)blockIdx.x * (BLOCK / 32) * ROWS, o0 = first + (threadIdx.x / 32) * ROWS;
  if (p.early) {
    const int lines = int((p.inter * (long long)sizeof(W) + 127) / 128);  // 128-byte lines per row
#pragma unroll
    for (int r = 0; r < ROWS; ++r)
      if (o0 + r < p.hidden)
        for (int l = lane; l < lines; l += 32) asm volatile("prefetch.global.L2 [%0];" ::"l"(down + (o0 + r) * p.inter + 128 / int(sizeof(W)) * l));
    pdl_launch_dependents();
  }
  pdl_wait();
  const float* a = p.act + pick * p.inter;
  float acc[ROWS];
#pragma unroll
  for (int r = 0; r < ROWS; ++r)
    acc[r] = o0 + r < p.hidden ? moe_row_dot<W, ILP>(down + (o0 + r) * p.inter, a, p.inter, lane) : 0.0f;
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    const float d = warp_sum(acc[r]);
    if (lane == 0 && o0 + r < p.hidden) p.part[pick * p.hidden + o0 + r] = d;
  }
  __shared__ int last;
  __syncthreads();  // every warp's products are stored
  int* done = p.done + t * gridDim.x + blockIdx.x;
  if (threadIdx.x == 0) {
    __threadfence();  // ... and visible to the block that adds them
    last = atomicAdd(done, 1) == int(p.top_k) - 1;
  }
  __syncthreads();
  if (!last) return;
  for (long long o = first + threadIdx.x; o < first + (BLOCK / 32) * ROWS && o < p.hidden; o += BLOCK) {
    float total = 0.0f;
    for (long long j = 0; j < p.top_k; ++j)  // the other blocks' products through L2 (__ldcg)
      total += p.weights[t * p.top_k + j] * __ldcg(p.part + (t * p.top_k + j) * p.hidden + o);
    p.out[t * p.hidden + o] += total;
  }
  if (threadIdx.x == 0) *done = 0;  // every block of this token has counted itself
}
