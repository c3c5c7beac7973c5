// Shared by the decode GEMV families (gemv.cuh, gemv_mma.cuh): the epilogue of one output and the
// argmax epilogue's per-block (logit, row) key, published to the grid-wide maximum.
#pragma once
#include "common/params.h"
#include "common/reduce.cuh"
#include "common/types.cuh"

#define EPI_STORE 0
#define EPI_RESIDUAL 1
#define EPI_SWIGLU 2
#define EPI_ARGMAX 3

// How the weights are stored (the FMT of gemv.cuh's and gemv_mma.cuh's kernels): 16-bit W; or FP8
// e4m3 bytes with a scale per output row or per 128 x 128 block.
#define WFMT_16 0
#define WFMT_FP8_CHANNEL 1
#define WFMT_FP8_BLOCK 2
// A flag on the FP8 formats: the codes widened by bit moves and a bf16x2 multiply
// (fp8x4_to_bf16x2_bits, the families' CVT 1) instead of the cvt instructions (CVT 0).
#define WFMT_FP8_BITS 4
// FMT's storage layout, the flag left out.
__host__ __device__ constexpr int wfmt_layout(int fmt) { return fmt & 3; }

// h[i .. i+1] += (a, b), h[i .. i+3] += v: one vector reduction (sm_90 has them for f32; 8- and
// 16-byte aligned), else one atomic add per value. Nothing waits for their results.
__device__ __forceinline__ void red_add2(float* h, float a, float b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("red.global.add.v2.f32 [%0], {%1, %2};" ::"l"(h), "f"(a), "f"(b) : "memory");
#else
  atomicAdd(h, a);
  atomicAdd(h + 1, b);
#endif
}
__device__ __forceinline__ void red_add4(float* h, float4 v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(h), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w)
               : "memory");
#else
  atomicAdd(h, v.x);
  atomicAdd(h + 1, v.y);
  atomicAdd(h + 2, v.z);
  atomicAdd(h + 3, v.w);
#endif
}

// One output y[b, row] = v (u: SwiGLU's up projection) through the epilogue; the bias is added
// by the first K slice only.
template <int EPI, int SPLITK, typename W>
__device__ __forceinline__ void gemv_epilogue(const GemvParams& p, long long b, long long row, float v, float u) {
  float* o = p.out + b * p.N + row;
  if (p.bias && blockIdx.y == 0) v += to_f32(static_cast<const W*>(p.bias)[row]);
  if (EPI == EPI_STORE || EPI == EPI_ARGMAX) *o = v;
  if (EPI == EPI_RESIDUAL) {
    if (SPLITK > 1) atomicAdd(o, v);
    else *o += v;
  }
  if (EPI == EPI_SWIGLU) *o = v / (1.0f + expf(-v)) * u;
}

// ARGMAX's key of one logit: the logit's order-preserving bits above the complement of its row,
// so that the largest key is the largest logit and, on ties, the lowest row (as torch.argmax); a
// NaN or Inf logit gets the largest key of all (argmax_finish reports -1: the row is poisoned);
// 0 is "no row". -0 counts as +0, as the float comparison does.
__device__ __forceinline__ unsigned long long argmax_key(float v, long long row) {
  if (!isfinite(v)) return ~0ull;
  const unsigned b = v == 0.0f ? 0u : __float_as_uint(v);
  const unsigned ord = (b & 0x80000000u) ? ~b : (b | 0x80000000u);
  return ((unsigned long long)ord << 32) | (unsigned long long)(~(unsigned)row);
}

// ARGMAX epilogue, after every thread wrote its rows' keys to keys[b * count + i] (shared memory,
// argmax_key; 0 for no row): the block's largest key per batch row goes to p.best[b] by an atomic
// max whose result nothing waits for. No fence, no counter, no last block: a block leaves as
// soon as its own work is done, the grid's completion orders every block's atomic before the next
// kernel, and that kernel (argmax_finish, sampling/argmax.cuh) turns the keys into tokens. The
// partials + fence + counter epilogue this replaces held every block's slot for an L2 round trip
// or three under full DRAM load: lm_head 9% slower than the same kernel storing its logits only
// (tools/gemv_ceiling.cu, bench/results/2026-12-01-read-ceiling/).
template <int BLOCK, int BATCH>
__device__ __forceinline__ void gemv_argmax_publish(const GemvParams& p, const unsigned long long* keys, int count) {
  __syncthreads();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int b = warp; b < BATCH && b < (int)p.B; b += BLOCK / 32) {
    unsigned long long k = 0;
    for (int i = lane; i < count; i += 32) k = keys[b * count + i] > k ? keys[b * count + i] : k;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const unsigned long long t = __shfl_xor_sync(0xffffffffu, k, o);
      k = t > k ? t : k;
    }
    if (lane == 0 && k != 0) atomicMax(p.best + b, k);
  }
}
