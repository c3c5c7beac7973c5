// The k largest logits of each row, for sampling with top-k on the device (the host then samples
// among k candidates instead of copying and sorting the whole vocabulary). Grid (chunks, rows):
//   1. each block takes a chunk of its row (at least k values, a few thousand) and finds the key
//      of its k-th largest by radix select (8 bits per pass, four passes of a 256-bin shared
//      histogram), then writes its k candidates in index order;
//   2. the last block of the row to finish (a counter) selects the row's k among the chunks'
//      candidates the same way (they are in index order, so ties still go to the lower id).
// The key of a float orders like the float; the tie rule matches top_k_candidates on the CPU.
// A row holding NaN or Inf gets index -1 in its first slot: the runtime reports it. k < vocab.
// One chunk: the block writes the row's k directly.
#pragma once
#include "common/params.h"
#include "common/types.cuh"

// Larger float, larger key (negative values have every bit flipped, positive ones the sign set).
__device__ __forceinline__ unsigned topk_key(float x) {
  const unsigned u = __float_as_uint(x);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

struct TopKShared {
  unsigned hist[256];
  unsigned wcount[32];
  unsigned prefix, mask, need;  // after topk_select: the k-th key, and how many of its ties to take
  int bad;
  bool last;
};

// Radix select over n values get(i): leaves the key of the k-th largest in sh.prefix and the
// number of its ties that belong to the top k in sh.need. With check, sets sh.bad on NaN/Inf.
template <int BLOCK, typename Get>
__device__ void topk_select(TopKShared& sh, long long n, unsigned k, Get get, bool check) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (threadIdx.x == 0) {
    sh.prefix = 0u;
    sh.mask = 0u;
    sh.need = k;
    sh.bad = 0;
  }
  for (int pass = 0; pass < 4; ++pass) {
    const int shift = 24 - 8 * pass;
    for (int i = threadIdx.x; i < 256; i += BLOCK) sh.hist[i] = 0u;
    __syncthreads();
    const unsigned prefix = sh.prefix, mask = sh.mask;
    bool bad = false;
#pragma unroll 4
    for (long long i = threadIdx.x; i < n; i += BLOCK) {
      const float v = get(i);
      if (check && pass == 0) bad |= !isfinite(v);
      const unsigned u = topk_key(v);
      if ((u & mask) == prefix) atomicAdd(&sh.hist[(u >> shift) & 255u], 1u);
    }
    if (bad) sh.bad = 1;
    __syncthreads();
    if (warp == 0) {  // lane l holds bins 255 - 8l down to 248 - 8l; scan the lanes' sums
      unsigned c[8], sum = 0u;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        c[j] = sh.hist[255 - (lane * 8 + j)];
        sum += c[j];
      }
      unsigned incl = sum;
#pragma unroll
      for (int off = 1; off < 32; off *= 2) {
        const unsigned t = __shfl_up_sync(0xffffffffu, incl, off);
        if (lane >= off) incl += t;
      }
      const unsigned need = sh.need, above0 = incl - sum;
      if (above0 < need && need <= incl) {  // exactly one lane: the count of matches is >= need
        unsigned above = above0;
        int jsel = 7;
        bool found = false;
#pragma unroll
        for (int j = 0; j < 8; ++j) {  // unrolled: c stays in registers
          if (!found && above + c[j] >= need) {
            found = true;
            jsel = j;
          } else if (!found) {
            above += c[j];
          }
        }
        sh.need = need - above;
        sh.prefix = prefix | ((unsigned)(255 - (lane * 8 + jsel)) << shift);
        sh.mask = mask | (255u << shift);
      }
    }
    __syncthreads();
  }
}

// This thread's rank among the threads of the block whose flag is set (in thread order), and
// their total. Every thread of the block calls it.
template <int BLOCK>
__device__ __forceinline__ unsigned topk_block_rank(TopKShared& sh, bool flag, unsigned& total) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const unsigned m = __ballot_sync(0xffffffffu, flag);
  if (lane == 0) sh.wcount[warp] = __popc(m);
  __syncthreads();
  unsigned before = 0u, all = 0u;
  for (int w = 0; w < BLOCK / 32; ++w) {
    const unsigned c = sh.wcount[w];
    if (w < warp) before += c;
    all += c;
  }
  __syncthreads();  // wcount is reused by the next call
  total = all;
  return before + __popc(m & ((1u << lane) - 1u));
}

// Writes the k values topk_select chose (every key above the k-th, then its ties in index order)
// to ov/oi in index order; id(i) is the token id of value i.
template <int BLOCK, typename Get, typename Id>
__device__ void topk_gather(TopKShared& sh, long long n, unsigned k, Get get, Id id, float* ov, int* oi) {
  const unsigned T = sh.prefix, need = sh.need;
  unsigned ties_seen = 0u, written = 0u;  // the same in every thread
  for (long long base = 0; base < n && written < k; base += BLOCK) {
    const long long i = base + threadIdx.x;
    const bool valid = i < n;
    const float v = valid ? get(i) : 0.0f;
    const unsigned u = topk_key(v);
    const bool tie = valid && u == T;
    unsigned ties_here = 0u, sel_here = 0u;
    const unsigned tie_rank = ties_seen + topk_block_rank<BLOCK>(sh, tie, ties_here);
    const bool sel = (valid && u > T) || (tie && tie_rank < need);
    const unsigned pos = written + topk_block_rank<BLOCK>(sh, sel, sel_here);
    if (sel) {
      ov[pos] = v;
      oi[pos] = id(i);
    }
    ties_seen += ties_here;
    written += sel_here;
  }
}

template <int BLOCK>
__device__ void topk_radix(const TopKParams& p) {
  static_assert(BLOCK % 32 == 0 && BLOCK >= 256 && BLOCK <= 1024, "whole warps; the histogram has 256 bins");
  __shared__ TopKShared sh;
  const long long row = blockIdx.y, chunk = blockIdx.x, chunks = gridDim.x, V = p.vocab;
  const long long c0 = chunk * p.chunk, n = (V - c0 < p.chunk) ? V - c0 : p.chunk;
  const unsigned k = (unsigned)p.k;
  const float* x = p.logits + row * V + c0;
  float* out_v = p.out_val + row * p.k;
  int* out_i = p.out_idx + row * p.k;
  auto from_row = [&](long long i) { return x[i]; };
  auto row_id = [&](long long i) { return (int)(c0 + i); };

  if (chunks == 1) {  // the row's k directly
    topk_select<BLOCK>(sh, n, k, from_row, true);
    topk_gather<BLOCK>(sh, n, k, from_row, row_id, out_v, out_i);
    __syncthreads();
    if (threadIdx.x == 0 && sh.bad) out_i[0] = -1;
    return;
  }
  // 1. This chunk's candidates (all of it when shorter than k: only the last chunk can be).
  const unsigned k1 = n < (long long)k ? (unsigned)n : k;
  float* pv = p.part_val + (row * chunks + chunk) * p.k;  // chunk c's candidates at c * k: contiguous
  int* pi = p.part_idx + (row * chunks + chunk) * p.k;
  topk_select<BLOCK>(sh, n, k1, from_row, true);
  topk_gather<BLOCK>(sh, n, k1, from_row, row_id, pv, pi);
  __syncthreads();
  if (threadIdx.x == 0 && sh.bad) atomicOr(p.counters + p.rows + row, 1u);
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) sh.last = atomicAdd(p.counters + row, 1u) == (unsigned)(chunks - 1);
  __syncthreads();
  if (!sh.last) return;
  __threadfence();
  // 2. The row's k among the chunks' candidates (other blocks wrote them: read through L2).
  const long long last_n = V - (chunks - 1) * p.chunk;
  const long long total = (chunks - 1) * p.k + (last_n < p.k ? last_n : p.k);
  const float* cv = p.part_val + row * chunks * p.k;
  const int* ci = p.part_idx + row * chunks * p.k;
  auto from_parts = [&](long long i) { return __ldcg(cv + i); };
  auto part_id = [&](long long i) { return __ldcg(ci + i); };
  topk_select<BLOCK>(sh, total, k, from_parts, false);
  topk_gather<BLOCK>(sh, total, k, from_parts, part_id, out_v, out_i);
  __syncthreads();
  if (threadIdx.x == 0) {
    if (__ldcg(p.counters + p.rows + row)) out_i[0] = -1;
    p.counters[row] = 0u;  // ready for the next launch
    p.counters[p.rows + row] = 0u;
  }
}
