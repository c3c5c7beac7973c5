// A token's experts from its router logits by one warp per token (the fast path's routing, after
// moe_router.logits): the reference (moe_route_ref) has one thread walk the experts top_k times,
// 0.3 ms a launch for Qwen3-30B-A3B's 128 experts and 8 picks on an H100, three quarters of its
// decode step. Here the lanes hold experts lane, lane + 32, ...; the softmax's max and sum are warp
// reductions; each of the top_k rounds takes every lane's best unpicked probability and the warp's
// best of those (ties to the lower index, as the reference and the CPU reference pick).
// Probabilities are expf(l - max) / sum as the reference computes them (only the sum's order
// differs), and the picks' sum is taken in pick order as there. Lane j keeps pick j; the picks are
// stored in increasing expert index, each at its rank among them.
// Needs top_k <= 32 and experts <= 32 * 32 (a lane's taken mask).
#pragma once
#include "common/params.h"
#include "common/pdl.cuh"
#include "common/reduce.cuh"
#include "common/types.cuh"

// The picks of one token from its `experts` logits l, by the whole warp; ids and weights: the
// token's top_k outputs. PROBS 0 (moe_pick_warp; l in global or shared memory): each round
// recomputes every candidate's probability and reduces the warp's best by five rounds of paired
// shuffles. PROBS 1 (l in shared memory, overwritten with the probabilities):
// each probability is computed once (the same expression, so the same bits), and each round's best
// (highest probability, then lowest index) is taken by two warp-wide integer reductions (redux.sync
// on sm_80+: the bits of a non-negative float order as the float); the same picks and weights. A
// lane only reads and writes its own experts. NaN probabilities are never picked.
template <int PROBS, typename L>
__device__ __forceinline__ void moe_pick_warp_as(L* l, long long experts, long long top_k, int renormalise, int* ids,
                                                 float* weights, int lane) {
  float mx = AC_NEG_INF;
  for (long long e = lane; e < experts; e += 32) mx = fmaxf(mx, l[e]);
  mx = warp_max(mx);
  float sum = 0.0f;
  for (long long e = lane; e < experts; e += 32) sum += expf(l[e] - mx);
  sum = warp_sum(sum);
  if constexpr (PROBS)
    for (long long e = lane; e < experts; e += 32) l[e] = expf(l[e] - mx) / sum;
  unsigned taken = 0;  // bit i: expert lane + 32 i is picked
  int my_id = -1;
  float my_w = 0.0f, picked = 0.0f;
  for (int j = 0; j < int(top_k); ++j) {
    float bp = -1.0f;
    int be = 0x7fffffff;
    int i = 0;
    for (long long e = lane; e < experts; e += 32, ++i) {  // increasing index: strictly greater wins
      if (taken >> i & 1u) continue;
      const float pe = PROBS ? l[e] : expf(l[e] - mx) / sum;
      if (pe > bp) bp = pe, be = int(e);
    }
    if constexpr (PROBS) {
      // A lane without a candidate offers key 0 and index INT_MAX: any candidate (even p = 0) wins.
      const unsigned key = be == 0x7fffffff ? 0u : __float_as_uint(bp);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
      const unsigned kmax = __reduce_max_sync(0xffffffffu, key);
      be = int(__reduce_min_sync(0xffffffffu, key == kmax ? unsigned(be) : 0xffffffffu));
#else
      unsigned kmax = key;
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) kmax = max(kmax, __shfl_xor_sync(0xffffffffu, kmax, off));
      unsigned em = key == kmax ? unsigned(be) : 0xffffffffu;
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) em = min(em, __shfl_xor_sync(0xffffffffu, em, off));
      be = int(em);
#endif
      bp = __uint_as_float(kmax);
    } else {
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) {
        const float op = __shfl_xor_sync(0xffffffffu, bp, off);
        const int oe = __shfl_xor_sync(0xffffffffu, be, off);
        if (op > bp || (op == bp && oe < be)) bp = op, be = oe;
      }
    }
    if (lane == be % 32) taken |= 1u << (be / 32);
    if (lane == j) my_id = be, my_w = bp;
    picked += bp;
  }
  if (renormalise) my_w /= picked;
  int rank = 0;
  for (int i = 0; i < int(top_k); ++i) {
    const int other = __shfl_sync(0xffffffffu, my_id, i);
    rank += other < my_id ? 1 : 0;
  }
  if (lane < int(top_k)) {
    ids[rank] = my_id;
    weights[rank] = my_w;
  }
}

__device__ __forceinline__ void moe_pick_warp(const float* l, long long experts, long long top_k, int renormalise, int* ids,
                                              float* weights, int lane) {
  moe_pick_warp_as<0>(l, experts, top_k, renormalise, ids, weights, lane);
}

// Grid: (ceil(n / (BLOCK / 32))).
template <int BLOCK>
__device__ void moe_route_warp(const MoeRouteParams& p) {
  pdl_wait();  // the logits are the kernel before's
  const long long t = (long long)blockIdx.x * (BLOCK / 32) + threadIdx.x / 32;
  if (t >= p.n) return;  // whole warps leave together
  moe_pick_warp(p.logits + t * p.experts, p.experts, p.top_k, p.renormalise, p.ids + t * p.top_k, p.weights + t * p.top_k,
                int(threadIdx.x % 32));
}

// The distinct experts among a decode step's picks (ids [picks], one sparse layer), added to
// counter[0], and one (layer, step) to counter[1]: Executor::count_expert_reads, for the floor of a
// batched step, which reads the union of its rows' experts. Grid: (1). Needs experts <= 1024.
template <int BLOCK>
__device__ void moe_count_union(const MoeCountParams& p) {
  static_assert(BLOCK >= 32, "a whole warp sums the bitmap");
  __shared__ unsigned seen[32];
  if (threadIdx.x < 32) seen[threadIdx.x] = 0u;
  __syncthreads();
  for (long long i = threadIdx.x; i < p.picks; i += BLOCK) atomicOr(&seen[p.ids[i] / 32], 1u << (p.ids[i] % 32));
  __syncthreads();
  if (threadIdx.x < 32) {
    int c = __popc(seen[threadIdx.x]);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) c += __shfl_xor_sync(0xffffffffu, c, off);
    if (threadIdx.x == 0) {
      atomicAdd(p.counter, (unsigned long long)c);
      atomicAdd(p.counter + 1, 1ull);
    }
  }
}
