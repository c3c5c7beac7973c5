// The fast path's mixture-of-experts MLP for decode steps: every token's picked experts in one
// launch per projection, reading only those experts' rows (a batch-1 step of Qwen3-30B-A3B reads 8
// of 128 experts per layer). Weights stream with 16-byte loads (8 values) into f32 dot products,
// ROWS rows per warp for loads in flight; the input row is staged once per block in shared memory.
// moe_gate_up_gemv: act[t, j, f] = silu(gate_e . x) * (up_e . x), e = ids[t, j], x token t's input
//   row (the post-attention RMSNorm's, which the router read too).
//   Grid: (ceil(inter / (BLOCK / 32 * ROWS)), n * top_k); dynamic shared memory: hidden floats (DIRECT 0).
// moe_down_gemv: out[t, o] += sum over the picks j, in increasing expert index (the order HF and
//   the CPU reference add them), of weights[t, j] * (down_e . act[t, j]).
//   Grid: (ceil(hidden / (BLOCK / 32 * ROWS)), n); dynamic shared memory: top_k * inter floats (DIRECT 0).
// Needs hidden and inter multiples of 8 (whole 16-byte loads of 16-bit W).
// ILP 1 (not the default until measured): a row's dot product is unrolled four chunks deep, so a
// lane has up to four 16-byte loads in flight (the same order of adds); moe_down_gemv goes chunk
// by chunk over all the picks at once, each lane adding its weighted partials, and reduces each
// output over the warp once, instead of reducing every pick's dot before loading the next pick's
// row (a Qwen3-30B-A3B expert row is 768 values: three loads per lane, then a reduction).
// DIRECT 1 (not the default until measured): the input rows are read where they are, through L1
// (every warp of a block reads the same row), instead of staged into shared memory first. A
// block's staging is a prologue before its first weight load: moe_down_gemv's is the token's
// top_k * inter activations (24 KB for Qwen3-30B-A3B) against the 48 KB of weights a 4-warp
// block then streams. Dynamic shared memory: none.
// Both wait for the kernel before them (pdl_wait) first: their rows follow that kernel's picks, so
// nothing can be loaded earlier; under programmatic dependent launch (moe_pdl) their launch
// overlaps its end. With p.early, moe_gate_up_gemv lets the next kernel (the down projection)
// launch once it has waited: the router has finished then, so that kernel may read the picks
// before its own wait (moe/down_split.cuh).
#pragma once
#include "common/params.h"
#include "common/pdl.cuh"
#include "common/reduce.cuh"
#include "common/types.cuh"

// Asks L2 for `bytes` bytes from `base`, one 128-byte line per thread and step (thread `i` of
// `threads`).
__device__ __forceinline__ void moe_prefetch_l2(const void* base, long long bytes, long long i, long long threads) {
  const char* b = static_cast<const char*>(base);
  for (long long off = 128 * i; off < bytes; off += 128 * threads) asm volatile("prefetch.global.L2 [%0];" ::"l"(b + off));
}

// The dot product of one row of W (16-bit) with xs (shared f32) over `len` values, this lane's
// share: 8 values per lane and load, lanes 8 values apart.
// ILP 2 unrolls eight chunks deep: a 2048-value row's eight loads per lane all in flight at once.
template <typename W, int ILP = 0>
__device__ __forceinline__ float moe_row_dot(const W* row, const float* xs, long long len, int lane) {
  float acc = 0.0f;
#pragma unroll(ILP ? 4 * ILP : 1)
  for (long long i = 8LL * lane; i < len; i += 256) {
    const uint4 v = *reinterpret_cast<const uint4*>(row + i);
    const float4 xa = *reinterpret_cast<const float4*>(xs + i), xb = *reinterpret_cast<const float4*>(xs + i + 4);
    const float xv[8] = {xa.x, xa.y, xa.z, xa.w, xb.x, xb.y, xb.z, xb.w};
    const unsigned words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      acc += to_f32(W{(unsigned short)(words[k] & 0xffffu)}) * xv[2 * k];
      acc += to_f32(W{(unsigned short)(words[k] >> 16)}) * xv[2 * k + 1];
    }
  }
  return acc;
}

// The block's input row(s) (count values from src): staged in shared memory, or src itself (DIRECT).
template <int BLOCK, int DIRECT>
__device__ __forceinline__ const float* moe_stage_input(const float* src, long long count) {
  if constexpr (DIRECT) {
    return src;
  } else {
    extern __shared__ __align__(16) float moe_smem[];
    for (long long i = threadIdx.x; i < count; i += BLOCK) moe_smem[i] = src[i];
    __syncthreads();
    return moe_smem;
  }
}

// OCC: the generated kernel's register bound (__launch_bounds__ for a full SM of blocks), nothing here.
template <int BLOCK, int ROWS, int ILP, int DIRECT, int OCC, typename W>
__device__ void moe_gate_up_gemv(const MoeGemvParams& p) {
  static_assert(BLOCK % 32 == 0, "whole warps");
  pdl_wait();
  if (p.early) pdl_launch_dependents();
  const long long pick = blockIdx.y, t = pick / p.top_k;
  const float* xs = moe_stage_input<BLOCK, DIRECT>(p.x + t * p.hidden, p.hidden);
  const int e = p.ids[pick], lane = threadIdx.x % 32;
  const W* gate = static_cast<const W*>(p.table[e]);
  const W* up = static_cast<const W*>(p.table[p.experts + e]);
  const long long f0 = ((long long)blockIdx.x * (BLOCK / 32) + threadIdx.x / 32) * ROWS;
  float gs[ROWS], us[ROWS];
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    const long long f = f0 + r;
    gs[r] = f < p.inter ? moe_row_dot<W, ILP>(gate + f * p.hidden, xs, p.hidden, lane) : 0.0f;
    us[r] = f < p.inter ? moe_row_dot<W, ILP>(up + f * p.hidden, xs, p.hidden, lane) : 0.0f;
  }
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    const float gv = warp_sum(gs[r]), uv = warp_sum(us[r]);
    if (lane == 0 && f0 + r < p.inter) p.act[pick * p.inter + f0 + r] = gv / (1.0f + expf(-gv)) * uv;
  }
}

template <int BLOCK, int ROWS, int ILP, int DIRECT, typename W>
__device__ void moe_down_gemv(const MoeGemvParams& p) {
  static_assert(BLOCK % 32 == 0, "whole warps");
  pdl_wait();
  const long long t = blockIdx.y, width = p.top_k * p.inter;
  const float* as = moe_stage_input<BLOCK, DIRECT>(p.act + t * width, width);
  const int lane = threadIdx.x % 32;
  const long long o0 = ((long long)blockIdx.x * (BLOCK / 32) + threadIdx.x / 32) * ROWS;
  float total[ROWS];
#pragma unroll
  for (int r = 0; r < ROWS; ++r) total[r] = 0.0f;
  if (ILP) {  // chunk by chunk over up to 8 picks at once: their loads in flight together
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
      const long long o = o0 + r;  // the same for the warp's lanes: the loop below is warp-uniform
      float acc = 0.0f;
      for (long long j0 = 0; o < p.hidden && j0 < p.top_k; j0 += 8) {
        const W* rows[8];
        float wj[8];
#pragma unroll
        for (int jj = 0; jj < 8; ++jj) {
          const long long j = j0 + jj;
          rows[jj] = j < p.top_k ? static_cast<const W*>(p.table[2 * p.experts + p.ids[t * p.top_k + j]]) + o * p.inter
                                 : nullptr;
          wj[jj] = j < p.top_k ? p.weights[t * p.top_k + j] : 0.0f;
        }
        for (long long i = 8LL * lane; i < p.inter; i += 256) {
          uint4 v[8];
#pragma unroll
          for (int jj = 0; jj < 8; ++jj) v[jj] = rows[jj] ? *reinterpret_cast<const uint4*>(rows[jj] + i) : uint4{0u, 0u, 0u, 0u};
#pragma unroll
          for (int jj = 0; jj < 8; ++jj) {
            if (!rows[jj]) continue;
            const float* a = as + (j0 + jj) * p.inter + i;
            const unsigned words[4] = {v[jj].x, v[jj].y, v[jj].z, v[jj].w};
            float part = 0.0f;
#pragma unroll
            for (int q = 0; q < 4; ++q) {
              part += to_f32(W{(unsigned short)(words[q] & 0xffffu)}) * a[2 * q];
              part += to_f32(W{(unsigned short)(words[q] >> 16)}) * a[2 * q + 1];
            }
            acc += wj[jj] * part;
          }
        }
      }
      total[r] = warp_sum(acc);
    }
  }
  for (long long j = 0; !ILP && j < p.top_k; ++j) {
    const W* down = static_cast<const W*>(p.table[2 * p.experts + p.ids[t * p.top_k + j]]);
    const float w = p.weights[t * p.top_k + j];
    float acc[ROWS];
#pragma unroll
    for (int r = 0; r < ROWS; ++r)
      acc[r] = o0 + r < p.hidden ? moe_row_dot(down + (o0 + r) * p.inter, as + j * p.inter, p.inter, lane) : 0.0f;
#pragma unroll
    for (int r = 0; r < ROWS; ++r) total[r] += w * warp_sum(acc[r]);
  }
#pragma unroll
  for (int r = 0; r < ROWS; ++r)
    if (lane == 0 && o0 + r < p.hidden) p.out[t * p.hidden + o0 + r] += total[r];
}
