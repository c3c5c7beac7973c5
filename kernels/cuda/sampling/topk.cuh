// The k largest logits of each row, for sampling with top-k on the device (the host then samples
// among k candidates instead of copying and sorting the whole vocabulary). One block per row:
//   1. radix select of the k-th largest value over its 32-bit order-preserving key, 8 bits per
//      pass (four passes of a 256-bin shared histogram over the row, which L2 holds);
//   2. gather: every value above that key (any order: the host sorts), then the ties equal to it
//      in index order until k are taken, so ties go to the lower token id as on the CPU.
// A row holding NaN or Inf gets index -1 in its first slot: the runtime reports it. k < vocab
// (the host copies the whole row otherwise).
#pragma once
#include "common/params.h"
#include "common/types.cuh"

// Larger float, larger key (negative values have every bit flipped, positive ones the sign set).
__device__ __forceinline__ unsigned topk_key(float x) {
  const unsigned u = __float_as_uint(x);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// f(value, index) for every element of the row, 16-byte loads (four in flight per thread) where
// the row allows.
template <int BLOCK, typename F>
__device__ __forceinline__ void topk_for_each(const float* x, long long V, F&& f) {
  if (V % 4 == 0 && (reinterpret_cast<unsigned long long>(x) & 15u) == 0) {
    const float4* x4 = reinterpret_cast<const float4*>(x);
#pragma unroll 4
    for (long long i = threadIdx.x; i < V / 4; i += BLOCK) {
      const float4 q = x4[i];
      f(q.x, 4 * i);
      f(q.y, 4 * i + 1);
      f(q.z, 4 * i + 2);
      f(q.w, 4 * i + 3);
    }
  } else {
#pragma unroll 4
    for (long long i = threadIdx.x; i < V; i += BLOCK) f(x[i], i);
  }
}

template <int BLOCK>
__device__ void topk_radix(const TopKParams& p) {
  static_assert(BLOCK % 32 == 0 && BLOCK >= 256, "the histogram is cleared and read by whole warps");
  __shared__ unsigned hist[256];
  __shared__ unsigned s_prefix, s_mask, s_need, s_ties, s_slot;
  __shared__ int s_bad;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const long long row = blockIdx.x, V = p.vocab;
  const float* x = p.logits + row * V;
  float* out_v = p.out_val + row * p.k;
  int* out_i = p.out_idx + row * p.k;
  if (threadIdx.x == 0) {
    s_prefix = 0u;
    s_mask = 0u;
    s_need = (unsigned)p.k;
    s_slot = 0u;
    s_bad = 0;
  }

  // 1. Four passes, most significant byte first: among the values whose key matches the prefix
  // found so far, which byte value holds the need-th largest.
  for (int pass = 0; pass < 4; ++pass) {
    const int shift = 24 - 8 * pass;
    for (int i = threadIdx.x; i < 256; i += BLOCK) hist[i] = 0u;
    __syncthreads();
    const unsigned prefix = s_prefix, mask = s_mask;
    bool bad = false;
    // (Warp-aggregated atomics, __match_any_sync per bin, measured slower on the H200.)
    topk_for_each<BLOCK>(x, V, [&](float v, long long) {
      if (pass == 0) bad |= !isfinite(v);
      const unsigned u = topk_key(v);
      if ((u & mask) == prefix) atomicAdd(&hist[(u >> shift) & 255u], 1u);
    });
    if (bad) s_bad = 1;
    __syncthreads();
    if (warp == 0) {  // lane l holds bins 255 - 8l down to 248 - 8l; scan the lanes' sums
      unsigned c[8], sum = 0u;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        c[j] = hist[255 - (lane * 8 + j)];
        sum += c[j];
      }
      unsigned incl = sum;
#pragma unroll
      for (int off = 1; off < 32; off *= 2) {
        const unsigned t = __shfl_up_sync(0xffffffffu, incl, off);
        if (lane >= off) incl += t;
      }
      const unsigned need = s_need, above0 = incl - sum;
      if (above0 < need && need <= incl) {  // exactly one lane: the count of matches is >= need
        unsigned above = above0, count = c[7];
        int jsel = 7;
        bool found = false;
#pragma unroll
        for (int j = 0; j < 8; ++j) {  // unrolled: c stays in registers
          if (!found && above + c[j] >= need) {
            found = true;
            jsel = j;
            count = c[j];
          } else if (!found) {
            above += c[j];
          }
        }
        s_need = need - above;
        s_prefix = prefix | ((unsigned)(255 - (lane * 8 + jsel)) << shift);
        s_mask = mask | (255u << shift);
        s_ties = count;
      }
    }
    __syncthreads();
  }

  // 2. The threshold key T: k - need values lie above it, need of its ties are taken.
  const unsigned T = s_prefix, need = s_need, ties = s_ties;
  topk_for_each<BLOCK>(x, V, [&](float v, long long i) {
    const unsigned u = topk_key(v);
    if (u > T || (u == T && ties == need)) {
      const unsigned slot = atomicAdd(&s_slot, 1u);
      out_v[slot] = v;
      out_i[slot] = (int)i;
    }
  });
  if (ties != need) {  // more ties than places: the lowest indices, a block-wide chunk at a time
    __shared__ unsigned wcount[BLOCK / 32];
    __shared__ unsigned s_taken;
    if (threadIdx.x == 0) s_taken = 0u;
    __syncthreads();
    const unsigned first = (unsigned)p.k - need;
    for (long long c0 = 0; c0 < V; c0 += BLOCK) {
      const unsigned taken = s_taken;
      if (taken >= need) break;  // the same for every thread
      const long long i = c0 + threadIdx.x;
      const bool eq = i < V && topk_key(x[i]) == T;
      const unsigned m = __ballot_sync(0xffffffffu, eq);
      if (lane == 0) wcount[warp] = __popc(m);
      __syncthreads();
      unsigned before = 0u;
      for (int w = 0; w < warp; ++w) before += wcount[w];
      const unsigned rank = taken + before + __popc(m & ((1u << lane) - 1u));
      if (eq && rank < need) {
        out_v[first + rank] = x[i];
        out_i[first + rank] = (int)i;
      }
      __syncthreads();
      if (threadIdx.x == 0) {
        unsigned total = 0u;
        for (int w = 0; w < BLOCK / 32; ++w) total += wcount[w];
        s_taken = taken + total;
      }
      __syncthreads();
    }
  }
  __syncthreads();
  if (threadIdx.x == 0 && s_bad) out_i[0] = -1;
}
