// Shared by the decode GEMV families (gemv.cuh, gemv_mma.cuh): the epilogue of one output and the
// argmax epilogue's grid-wide (value, index) reduction.
#pragma once
#include "common/params.h"
#include "common/reduce.cuh"
#include "common/types.cuh"

#define EPI_STORE 0
#define EPI_RESIDUAL 1
#define EPI_SWIGLU 2
#define EPI_ARGMAX 3

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

// ARGMAX epilogue, after every block wrote its candidates best_v/best_i[b * count + i] (index
// >= N: no row) to shared memory: the block's maximum per batch row (lowest index on ties;
// NaN/Inf poisons the row) goes to the partials, and the last block to finish reduces every
// block's maximum into token_out and resets the counter for the next launch.
template <int BLOCK, int BATCH>
__device__ __forceinline__ void gemv_argmax_finish(const GemvParams& p, const float* best_v, const int* best_i,
                                                   int count) {
  const long long N = p.N;
  const int B = (int)p.B;
  __syncthreads();
  __shared__ bool last;
  if (threadIdx.x < BATCH && (int)threadIdx.x < B) {
    const int b = threadIdx.x;
    float bv = AC_NEG_INF;
    int bi = 0x7fffffff;
    bool bad = false;
    for (int i = 0; i < count; ++i) {
      const float v = best_v[b * count + i];
      const int idx = best_i[b * count + i];
      if (idx >= N) continue;
      if (!isfinite(v)) bad = true;
      if (v > bv || (v == bv && idx < bi)) { bv = v; bi = idx; }
    }
    p.part_val[(long long)b * gridDim.x + blockIdx.x] = bad ? __int_as_float(0x7fc00000) : bv;
    p.part_idx[(long long)b * gridDim.x + blockIdx.x] = bi;
  }
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(p.counter, 1u) == gridDim.x - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  __shared__ float rv[BLOCK];
  __shared__ int ri[BLOCK];
  __shared__ int rbad;
  for (int b = 0; b < B; ++b) {
    float bv = AC_NEG_INF;
    int bi = 0x7fffffff;
    int bad = 0;
    // L2 loads (other blocks wrote the partials; L1 is not coherent), independent of one
    // another so that several are in flight: this tail is latency-bound.
#pragma unroll 4
    for (long long i = threadIdx.x; i < gridDim.x; i += BLOCK) {
      const float v = __ldcg(p.part_val + b * gridDim.x + i);
      const int idx = __ldcg(p.part_idx + b * gridDim.x + i);
      if (v != v) bad = 1;
      if (v > bv || (v == bv && idx < bi)) { bv = v; bi = idx; }
    }
    // block-wide (value, index) reduction through shared memory
    if (threadIdx.x == 0) rbad = 0;
    __syncthreads();
    if (bad) rbad = 1;
    rv[threadIdx.x] = bv;
    ri[threadIdx.x] = bi;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
      if ((int)threadIdx.x < s) {
        const float v = rv[threadIdx.x + s];
        const int idx = ri[threadIdx.x + s];
        if (v > rv[threadIdx.x] || (v == rv[threadIdx.x] && idx < ri[threadIdx.x])) {
          rv[threadIdx.x] = v;
          ri[threadIdx.x] = idx;
        }
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) p.token_out[b] = rbad ? -1 : ri[0];
    __syncthreads();
  }
  if (threadIdx.x == 0) *p.counter = 0u;
}
