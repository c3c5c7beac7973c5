// Slice flow between a layer's gate/up GEMV (producer, EPI_SWIGLU_SIGNAL) and its down GEMV
// (consumer, EPI_RESIDUAL_AWAIT, split over K): a down block needs only the gate/up rows of its
// own K slice, so instead of waiting for the whole gate/up grid (griddepcontrol.wait) it waits for
// a counter of that slice's finished rows and starts while gate/up's last blocks still run (its
// grid is more than one wave: the multi-wave tail, bench/results/2026-11-30-timeline/).
//   - A producer block, after its outputs are stored, adds its rows to the counters of the slices
//     they fall in (fence, then atomic: a release); after staging its input (the residual
//     stream, which the consumer adds into) it counts itself in flow[flow_slices].
//   - A consumer block spins (acquire loads, nanosleep) on its slice's counter, stages its input
//     from L2 (ld.cg: this SM's L1 may hold lines of the buffer from the previous layer), and
//     before adding into the residual stream waits until every producer block has staged it.
//   - The last consumer block to finish resets every counter; the next layer's producer runs only
//     after this consumer grid completed (the kernels between wait for their predecessors).
// No deadlock: a dependent grid launches only once every block of the primary has started (each
// signals launch_dependents after its first loads), so no producer block waits for a slot that a
// spinning consumer holds.
#pragma once
#include "common/params.h"
#include "common/pdl.cuh"

__device__ __forceinline__ unsigned flow_load_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// Thread 0 waits until *counter >= target; the block continues together. A wait of seconds (the
// real ones take microseconds) means a counter that will never get there: the kernel traps, so
// the launch fails with an error instead of hanging the GPU.
__device__ __forceinline__ void flow_wait(const unsigned* counter, unsigned target) {
  if (threadIdx.x == 0)
    for (unsigned spins = 0; flow_load_acquire(counter) < target; ++spins) {
      if (spins == (1u << 24)) __trap();
      __nanosleep(32);
    }
  __syncthreads();
}

// Producer, after every warp stored its outputs: rows [r0, r1) of the output are done. Every
// thread fences its own stores before the barrier (as gemv_argmax_finish), then one thread counts.
__device__ __forceinline__ void flow_signal_rows(const GemvParams& p, long long r0, long long r1) {
  __threadfence();
  __syncthreads();
  if (threadIdx.x != 0) return;
  if (r1 > p.N) r1 = p.N;
  for (long long s = r0 / p.flow_slice; r0 < r1; ++s) {
    const long long end = (s + 1) * p.flow_slice < r1 ? (s + 1) * p.flow_slice : r1;
    atomicAdd(p.flow + s, (unsigned)(end - r0));
    r0 = end;
  }
}

// Producer, after its input is staged (the consumer may now write the residual stream).
__device__ __forceinline__ void flow_signal_staged(const GemvParams& p) {
  if (threadIdx.x != 0) return;
  __threadfence();
  atomicAdd(p.flow + p.flow_slices, 1u);
}

// Consumer, before its first load of x: the rows of K slice `slice` are all done.
__device__ __forceinline__ void flow_wait_slice(const GemvParams& p, long long slice) {
  const long long begin = slice * p.flow_slice;
  const long long rows = p.K - begin < p.flow_slice ? p.K - begin : p.flow_slice;
  if (rows > 0) flow_wait(p.flow + slice, (unsigned)rows);  // a split past K has no rows
  AC_TIMELINE_WAITED();  // the developer timeline's "wait" is this one
}

// Consumer, after its outputs were added: the last block of the grid resets the counters.
__device__ __forceinline__ void flow_finish(const GemvParams& p) {
  __syncthreads();
  if (threadIdx.x != 0) return;
  __threadfence();
  const unsigned blocks = gridDim.x * gridDim.y;
  if (atomicAdd(p.flow + p.flow_slices + 1, 1u) != blocks - 1) return;
  for (unsigned s = 0; s < p.flow_slices + 2; ++s) p.flow[s] = 0u;
}
