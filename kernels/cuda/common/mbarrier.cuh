// Shared-memory barriers with transaction counts and bulk (TMA) copies from global to shared
// memory (sm_90): one thread asks for a whole contiguous range, the copy engine moves it, and the
// barrier's phase completes when the bytes have landed, so a producer warp can keep many copies in
// flight without holding registers or threads.
#pragma once

__device__ __forceinline__ unsigned smem_u32(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

__device__ __forceinline__ void mbar_init(unsigned long long* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count) : "memory");
}

// Makes initialised barriers visible to the copy engine (the async proxy) before first use.
__device__ __forceinline__ void mbar_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }

__device__ __forceinline__ void mbar_arrive(unsigned long long* bar) {
  asm volatile("{\n\t.reg .b64 st;\n\tmbarrier.arrive.shared::cta.b64 st, [%0];\n\t}" ::"r"(smem_u32(bar)) : "memory");
}

// Arrives and announces `bytes` more to land before the phase may complete.
__device__ __forceinline__ void mbar_arrive_expect_tx(unsigned long long* bar, unsigned bytes) {
  asm volatile("{\n\t.reg .b64 st;\n\tmbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;\n\t}" ::"r"(smem_u32(bar)),
               "r"(bytes)
               : "memory");
}

// Blocks until the phase of parity `parity` has completed (a fresh barrier is in phase 0, so
// waiting on parity 1 returns at once: "the previous phase").
__device__ __forceinline__ void mbar_wait(unsigned long long* bar, unsigned parity) {
  const unsigned a = smem_u32(bar);
  unsigned done = 0;
  while (!done)
    asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\tselp.u32 %0, 1, 0, p;\n\t}"
                 : "=r"(done)
                 : "r"(a), "r"(parity)
                 : "memory");
}

// Copies `bytes` (a multiple of 16; both addresses 16-byte aligned) from global to shared memory;
// their arrival counts against `bar`'s transaction count.
__device__ __forceinline__ void bulk_load(void* dst, const void* src, unsigned bytes, unsigned long long* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(smem_u32(dst)),
               "l"(src), "r"(bytes), "r"(smem_u32(bar))
               : "memory");
}

// Copies a 2-D box of a tensor (`map`: a TmaMap in the kernel's __grid_constant__ parameters) whose
// innermost coordinate is c0 and outer c1, laid out and swizzled as the map says, into shared
// memory; elements past the tensor's edges arrive as zeros and count, like the rest of the box,
// against `bar`'s transaction count.
__device__ __forceinline__ void tma_load_2d(void* dst, const void* map, int c0, int c1, unsigned long long* bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(
          smem_u32(dst)),
      "l"(map), "r"(c0), "r"(c1), "r"(smem_u32(bar))
      : "memory");
}

// The same box into the same shared-memory offset of every block of the cluster in `mask` (bit r:
// the block of rank r); each destination's barrier at `bar`'s offset counts the box's bytes.
__device__ __forceinline__ void tma_load_2d_multicast(void* dst, const void* map, int c0, int c1, unsigned long long* bar,
                                                      unsigned short mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%2, "
      "%3}], [%4], %5;" ::"r"(smem_u32(dst)),
      "l"(map), "r"(c0), "r"(c1), "r"(smem_u32(bar)), "h"(mask)
      : "memory");
}

// This block's rank in its cluster.
__device__ __forceinline__ unsigned cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}

// Arrives on the barrier at `bar`'s offset in the shared memory of the cluster's block `rank`.
__device__ __forceinline__ void mbar_arrive_remote(unsigned long long* bar, unsigned rank) {
  asm volatile("{\n\t.reg .b32 ra;\n\tmapa.shared::cluster.u32 ra, %0, %1;\n\tmbarrier.arrive.shared::cluster.b64 _, [ra];\n\t}" ::"r"(
                   smem_u32(bar)),
               "r"(rank)
               : "memory");
}

// Every thread of every block of the cluster, diverged or not: what each wrote to shared memory
// (its barriers' initialisation among it) is seen by the others after it.
__device__ __forceinline__ void cluster_sync_all() {
  asm volatile("barrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;" ::: "memory");
}

// Counters between blocks of one grid: an acquire load (sees what the releasing block wrote
// before its increment) and a barrier over the first `threads` threads only (named barrier 1),
// for kernels whose other warps do not take part.
__device__ __forceinline__ unsigned ld_acquire_u32(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// counter += n with release semantics (what this thread wrote, or saw through a barrier, is
// visible before the new count), without waiting for the result.
__device__ __forceinline__ void red_release_add(unsigned* p, unsigned n) {
  asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(p), "r"(n) : "memory");
}

// counter += n, acquire and release: returns the count before.
__device__ __forceinline__ unsigned atom_acq_rel_add(unsigned* p, unsigned n) {
  unsigned old;
  asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(n) : "memory");
  return old;
}

__device__ __forceinline__ void bar_sync_first(unsigned threads) {
  asm volatile("bar.sync 1, %0;" ::"r"(threads) : "memory");
}
