// A sparse layer's router (the fast path's): the post-attention RMSNorm of each token's residual
// row (as rms_norm_ref computes it: the experts read this row) and the router's logits from it,
// one warp per expert at a time (16-byte loads of its weight row against the normalised row in
// shared memory). Needs hidden % 8 == 0.
// moe_router_fused: one block per token, which then picks the experts itself (warp 0,
//   moe_pick_warp). On an H100 it took 30 us a launch for Qwen3-30B-A3B (one SM reads the whole
//   router), where the reference's norm and linear took 19 us and its routing 310 us.
//   Grid: (n); dynamic shared memory: (hidden + experts) floats.
// moe_router_logits: the experts spread over blocks of BLOCK / 32, each normalising the row again
//   (it is in L2; block 0 writes it); moe_route.warp picks from the logits (PICK 0), or the last
//   of a token's blocks to finish picks them (PICK 1: one launch fewer per layer, as in CUDA's
//   threadFenceReduction sample: each block's logits are made visible before it counts itself in
//   p.done, and the last one resets the count for the next launch).
//   Grid: (ceil(experts / (BLOCK / 32)), n); dynamic shared memory: hidden (+ experts, PICK 1, 2)
//   floats.
// PICK 2 (moe_router.logits): the last block picks with moe_pick_warp_as PROBS 1 (the same picks; each
//   probability computed once, each round's best by two warp-wide integer reductions).
// NORM 1 (moe_router.logits): each thread loads its gamma values into registers before waiting
//   (weights: they do not depend on the kernel before) and reads its residual values once, keeping
//   them in registers for the sum of squares and the normalised row (the same sums in the same
//   order as moe_norm_row). Rows longer than 8 * BLOCK (2048 at BLOCK 256) take moe_norm_row.
// ILP (moe_router.logits): how many of a warp's loads of its expert's row are in flight (moe_row_dot:
//   0 one at a time, 1 four, 2 eight). A token's router is only BLOCK / 32 warps per 8 experts, so
//   each warp's chain of loads is the kernel's length; the adds keep their order (the same bits).
// Under programmatic dependent launch (moe_pdl, p.prefetch 1) both ask L2 for their router rows
// before waiting for the kernel before them (pdl_wait): the weights do not depend on it, and the
// fetch overlaps the output projection's end. Without PDL nothing overlaps it, so they do not.
// With p.early (moe_early) they then let the gate/up GEMV launch: its blocks wait resident for the
// picks instead of being launched after the router's last block ends.
#pragma once
#include "common/params.h"
#include "common/pdl.cuh"
#include "common/reduce.cuh"
#include "common/types.cuh"
#include "moe/gemv.cuh"
#include "moe/route.cuh"
#include "rms_norm/reference.cuh"

// Logit of expert e: the warp's dot product of its router row with xs (every lane gets it).
template <typename W, int ILP = 0>
__device__ __forceinline__ float moe_router_dot(const W* row, const float* xs, long long hidden, int lane) {
  return warp_sum(moe_row_dot<W, ILP>(row, xs, hidden, lane));
}

// Token t's residual row normalised into xs (shared), and into h where `write`; the block waits.
template <int BLOCK, typename W>
__device__ __forceinline__ void moe_norm_row(const MoeRouterParams& p, long long t, float* xs, bool write) {
  const float* x = p.x + t * p.hidden;
  const float inv = rms_inv_row<BLOCK>(x, p.hidden, p.eps);
  const W* g = static_cast<const W*>(p.gamma);
  for (long long j = threadIdx.x; j < p.hidden; j += BLOCK) {
    const float v = to_f32(g[j]) * (x[j] * inv);
    xs[j] = v;
    if (write) p.h[t * p.hidden + j] = v;
  }
  __syncthreads();
}

// moe_norm_row from registers (NORM 1): gv holds this thread's gamma values hidden index
// threadIdx.x + i * BLOCK, i < PER (0 past the row).
template <int BLOCK, int PER>
__device__ __forceinline__ void moe_norm_row_regs(const MoeRouterParams& p, long long t, float* xs, bool write, const float* gv) {
  const float* x = p.x + t * p.hidden;
  float xv[PER];
  float ss = 0.0f;
#pragma unroll
  for (int i = 0; i < PER; ++i) {
    const long long j = threadIdx.x + (long long)i * BLOCK;
    xv[i] = j < p.hidden ? x[j] : 0.0f;
  }
#pragma unroll
  for (int i = 0; i < PER; ++i)
    if (threadIdx.x + (long long)i * BLOCK < p.hidden) ss += xv[i] * xv[i];  // rms_inv_row's order
  const float inv = rms_inv_from_partial<BLOCK>(ss, p.hidden, p.eps);
#pragma unroll
  for (int i = 0; i < PER; ++i) {
    const long long j = threadIdx.x + (long long)i * BLOCK;
    if (j >= p.hidden) continue;
    const float v = gv[i] * (xv[i] * inv);
    xs[j] = v;
    if (write) p.h[t * p.hidden + j] = v;
  }
  __syncthreads();
}

template <int BLOCK, typename W>
__device__ void moe_router_fused(const MoeRouterParams& p) {
  extern __shared__ __align__(16) float router_smem[];
  float* xs = router_smem;                 // [hidden] the normalised row
  float* logits = router_smem + p.hidden;  // [experts]
  const long long t = blockIdx.x;
  if (p.prefetch) moe_prefetch_l2(p.w, p.experts * p.hidden * (long long)sizeof(W), threadIdx.x, BLOCK);
  if (p.early) pdl_launch_dependents();
  pdl_wait();
  moe_norm_row<BLOCK, W>(p, t, xs, true);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (long long e = warp; e < p.experts; e += BLOCK / 32) {
    const float acc = moe_router_dot(static_cast<const W*>(p.w) + e * p.hidden, xs, p.hidden, lane);
    if (lane == 0) logits[e] = acc;
  }
  __syncthreads();
  if (warp == 0)
    moe_pick_warp(logits, p.experts, p.top_k, p.renormalise, p.ids + t * p.top_k, p.weights + t * p.top_k, lane);
}

template <int BLOCK, int PICK, int ILP, int NORM, typename W>
__device__ void moe_router_logits(const MoeRouterParams& p) {
  extern __shared__ __align__(16) float router_smem[];
  float* xs = router_smem;  // [hidden] the normalised row
  const long long t = blockIdx.y;
  const int lane = threadIdx.x % 32;
  const long long e = (long long)blockIdx.x * (BLOCK / 32) + threadIdx.x / 32;
  if (p.prefetch && e < p.experts) moe_prefetch_l2(static_cast<const W*>(p.w) + e * p.hidden, p.hidden * (long long)sizeof(W), lane, 32);
  constexpr int PER = NORM ? 8 : 1;
  float gv[PER];
  if constexpr (NORM) {
    const W* g = static_cast<const W*>(p.gamma);
#pragma unroll
    for (int i = 0; i < PER; ++i) {
      const long long j = threadIdx.x + (long long)i * BLOCK;
      gv[i] = j < p.hidden ? to_f32(g[j]) : 0.0f;
    }
  }
  if (p.early) pdl_launch_dependents();
  pdl_wait();
  if (NORM && p.hidden <= PER * BLOCK)
    moe_norm_row_regs<BLOCK, PER>(p, t, xs, blockIdx.x == 0, gv);
  else
    moe_norm_row<BLOCK, W>(p, t, xs, blockIdx.x == 0);
  if (e < p.experts) {
    const float acc = moe_router_dot<W, ILP>(static_cast<const W*>(p.w) + e * p.hidden, xs, p.hidden, lane);
    if (lane == 0) p.logits[t * p.experts + e] = acc;
  }
  if constexpr (PICK) {
    __shared__ int last;
    __syncthreads();  // every warp's logits are written
    if (threadIdx.x == 0) {
      __threadfence();  // ... and visible to the block that picks
      last = atomicAdd(p.done + t, 1) == int(gridDim.x) - 1;
    }
    __syncthreads();
    if (!last) return;
    // The other blocks' logits through L2 (__ldcg: never a line this SM's L1 may hold).
    float* ls = router_smem + p.hidden;
    for (long long i = threadIdx.x; i < p.experts; i += BLOCK) ls[i] = __ldcg(p.logits + t * p.experts + i);
    __syncthreads();
    if (threadIdx.x < 32)
      moe_pick_warp_as<PICK == 2>(ls, p.experts, p.top_k, p.renormalise, p.ids + t * p.top_k, p.weights + t * p.top_k, lane);
    if (threadIdx.x == 0) p.done[t] = 0;  // every block of this launch has counted itself
  }
}
