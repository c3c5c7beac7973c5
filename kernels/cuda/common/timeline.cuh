// Developer timeline of a decode step (AGENTCOMPILE_TIMELINE, docs/cuda_fast_path.md): compiled in
// only when the host defines AC_TIMELINE, which it does for every variant of a process started with
// that variable. Each block's thread 0 records when the block started, when its wait for the
// previous kernel returned (pdl_wait; 0: it did not wait) and when every thread of the block was
// done, in %globaltimer nanoseconds, with the kernel's tag (set by the loader per module), the
// block's linear index and its SM; a kernel may also mark up to AC_TIMELINE_MARKS points of its
// body (AC_TIMELINE_MARK(i): thread 0's time there, 0 where not reached). The host points
// ac_timeline_buf at a buffer, counts in *ac_timeline_count and reads the records back after one
// step.
#pragma once
#ifdef AC_TIMELINE

#define AC_TIMELINE_MARKS 6
struct AcTimelineRecord {
  unsigned long long start, wait, end;
  unsigned tag, block, sm, pad;
  unsigned long long mark[AC_TIMELINE_MARKS];
};

__device__ AcTimelineRecord* ac_timeline_buf;
__device__ unsigned* ac_timeline_count;
__device__ unsigned ac_timeline_cap;
__device__ unsigned ac_timeline_tag;
__shared__ unsigned long long ac_timeline_wait;
__shared__ unsigned long long ac_timeline_mark[AC_TIMELINE_MARKS];

__device__ __forceinline__ unsigned long long ac_timeline_now() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// One per block, around the kernel's body (the generated binding): the destructor runs after every
// return path of the body.
// The record's slot is taken at the start: its atomic's round trip (about a microsecond under a
// step's load) then overlaps the body instead of holding the block's SM slot after its end, which
// in multi-wave kernels (gate/up) delayed the next wave's blocks by ~0.8 µs each (session 27).
struct AcTimelineScope {
  unsigned long long t0 = 0;
  unsigned slot = ~0u;
  __device__ AcTimelineScope() {
    if (threadIdx.x == 0) {
      t0 = ac_timeline_now();
      if (ac_timeline_buf != nullptr) slot = atomicAdd(ac_timeline_count, 1u);
      ac_timeline_wait = 0;
      for (int i = 0; i < AC_TIMELINE_MARKS; ++i) ac_timeline_mark[i] = 0;
    }
  }
  __device__ ~AcTimelineScope() {
    __syncthreads();
    const unsigned long long t1 = ac_timeline_now();
    if (threadIdx.x != 0 || ac_timeline_buf == nullptr) return;
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    const unsigned i = slot;
    if (i >= ac_timeline_cap) return;
    const unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    AcTimelineRecord r{t0, ac_timeline_wait, t1, ac_timeline_tag, block, sm, 0u, {}};
    for (int k = 0; k < AC_TIMELINE_MARKS; ++k) r.mark[k] = ac_timeline_mark[k];
    ac_timeline_buf[i] = r;
  }
};

#define AC_TIMELINE_WAITED() \
  do {                       \
    if (threadIdx.x == 0) ac_timeline_wait = ac_timeline_now(); \
  } while (0)
#define AC_TIMELINE_MARK(i) \
  do {                      \
    if (threadIdx.x == 0) ac_timeline_mark[i] = ac_timeline_now(); \
  } while (0)
#else
#define AC_TIMELINE_WAITED() \
  do {                       \
  } while (0)
#define AC_TIMELINE_MARK(i) \
  do {                      \
  } while (0)
#endif
