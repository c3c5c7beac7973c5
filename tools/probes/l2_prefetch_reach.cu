// Does a bulk L2 prefetch (cp.async.bulk.prefetch.L2, what the decode experiments used to ask L2
// for the next weights) leave lines that a later read from every SM hits, and how soon? Each
// sample: a 512 MiB read evicts the buffer from L2, then a preparation, then a timed read of the
// first S bytes of the buffer by every SM (4 blocks of 256 threads per SM, ld.global.nc 16 B loads
// as the GEMVs stream weights; the read's own %globaltimer span, first block start to last block
// end). Preparations:
//   cold      none (DRAM)
//   warm      the same read once before (L2 as a read leaves it)
//   touch16   16 blocks read the bytes with plain loads, then 30 us idle
//   pf16      16 blocks ask L2 for the bytes in 16 KiB bulk prefetches, then 30 us idle
//   pf_all    every SM asks for its share the same way, then 30 us idle
//   pf_now    every SM asks, and the read starts right after (no idle time)
//   lines_all every SM's threads ask L2 for each 128-byte line (prefetch.global.L2), then 30 us idle
//   lines16   16 blocks do the same
//   cpasync_all every SM copies the bytes into a shared scratch nothing reads (cp.async.cg), then 30 us idle
//   cpasync16 16 blocks do the same
//   nvcc -O3 -arch=sm_90 -std=c++17 -I kernels/cuda -o build-sync/l2_prefetch_reach tools/probes/l2_prefetch_reach.cu
//   build-sync/l2_prefetch_reach
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "common/vec.cuh"
#include "cuda_tool.h"

constexpr int THREADS = 256, PER_THREAD = 8;  // read: 32 KiB per block per round
constexpr long long FLUSH_BYTES = 512ll << 20, MAX_BYTES = 48ll << 20, CHUNK = 16 << 10;

__device__ unsigned long long g_start, g_end;

__device__ __forceinline__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// A block's share of `bytes`: 16-byte aligned (bulk prefetches and 16-byte loads need it); the
// last shares may be short or empty.
__device__ __forceinline__ long long block_share(long long bytes) {
  return ((bytes + gridDim.x - 1) / gridDim.x + 15) / 16 * 16;
}

// Every block reads its contiguous share of src[0, bytes) with all of a round's loads in flight;
// the wrapping sum goes to out so no load is dropped. timed: the span into g_start / g_end.
__global__ void __launch_bounds__(THREADS) read_k(const char* src, long long bytes, unsigned* out, int timed) {
  __syncthreads();
  const unsigned long long t0 = now_ns();
  const long long base = block_share(bytes) * blockIdx.x, share = min(block_share(bytes), bytes - base);
  unsigned s = 0;
  for (long long off = 0; off < share; off += THREADS * PER_THREAD * 16) {
    u32x4 v[PER_THREAD];
#pragma unroll
    for (int i = 0; i < PER_THREAD; ++i) {
      const long long o = off + (long long)(i * THREADS + threadIdx.x) * 16;
      v[i] = o < share ? load_stream16(src + base + o) : u32x4{0, 0, 0, 0};
    }
#pragma unroll
    for (int i = 0; i < PER_THREAD; ++i) s += v[i].a ^ v[i].b ^ v[i].c ^ v[i].d;
  }
  out[blockIdx.x * THREADS + threadIdx.x] = s;
  __syncthreads();
  if (timed && threadIdx.x == 0) {
    atomicMin(&g_start, t0);
    atomicMax(&g_end, now_ns());
  }
}

// Block b asks L2 for its share of src[0, bytes) in CHUNK-byte bulk prefetches (thread 0).
__global__ void prefetch_k(const char* src, long long bytes) {
  if (threadIdx.x != 0) return;
  const long long base = block_share(bytes) * blockIdx.x, share = min(block_share(bytes), bytes - base);
  for (long long o = 0; o < share; o += CHUNK) {
    const unsigned n = (unsigned)(share - o < CHUNK ? share - o : CHUNK);
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(src + base + o), "r"(n) : "memory");
  }
}

// Every thread asks L2 for its 128-byte lines of the block's share (prefetch.global.L2: per
// thread, no register written).
__global__ void __launch_bounds__(THREADS) prefetch_lines_k(const char* src, long long bytes) {
  const long long base = block_share(bytes) * blockIdx.x, share = min(block_share(bytes), bytes - base);
  for (long long o = (long long)threadIdx.x * 128; o < share; o += THREADS * 128)
    asm volatile("prefetch.global.L2 [%0];" ::"l"(src + base + o));
}

// Every thread copies its 16-byte chunks of the block's share into a 16 KiB shared scratch that
// nothing reads (cp.async: the data comes through L2 as a load's would, no register written).
__global__ void __launch_bounds__(THREADS) copy_touch_k(const char* src, long long bytes) {
  __shared__ __align__(16) char scratch[16 << 10];
  const long long base = block_share(bytes) * blockIdx.x, share = min(block_share(bytes), bytes - base);
  const unsigned dst = (unsigned)__cvta_generic_to_shared(scratch + threadIdx.x * 64);
  int i = 0;
  for (long long o = (long long)threadIdx.x * 16; o < share; o += THREADS * 16, ++i)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst + (i % 4) * 16), "l"(src + base + o));
  asm volatile("cp.async.wait_all;" ::: "memory");
}

__global__ void reset_k() {
  g_start = ~0ull;
  g_end = 0;
}

__global__ void idle_k(unsigned long long ns) {
  const unsigned long long t0 = now_ns();
  while (now_ns() - t0 < ns) {
  }
}

int main() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  char *buf, *flush;
  unsigned* out;
  const int blocks = 4 * sms;
  CK(cudaMalloc(&buf, MAX_BYTES));
  CK(cudaMalloc(&flush, FLUSH_BYTES));
  CK(cudaMalloc(&out, size_t(std::max(blocks, 1024)) * THREADS * sizeof(unsigned)));
  CK(cudaMemset(buf, 0x5a, MAX_BYTES));  // never time a read of zeros' pages
  CK(cudaMemset(flush, 0x3c, FLUSH_BYTES));
  const char* names[] = {"cold", "warm", "touch16", "pf16", "pf_all", "pf_now", "lines_all", "lines16", "cpasync_all", "cpasync16"};
  const int preps = 10;
  std::printf("%d SMs; read: %d blocks of %d threads; median of 15 samples, us (GB/s)\n", sms, blocks, THREADS);
  std::printf("%-8s", "MiB");
  for (const char* n : names) std::printf(" %18s", n);
  std::printf("\n");
  for (long long mib : {4, 8, 16, 24, 32, 48}) {
    const long long bytes = mib << 20;
    std::printf("%-8lld", mib);
    for (int prep = 0; prep < preps; ++prep) {
      std::vector<double> us;
      for (int rep = 0; rep < 15; ++rep) {
        reset_k<<<1, 1>>>();
        read_k<<<1024, THREADS>>>(flush, FLUSH_BYTES, out, 0);
        switch (prep) {
          case 1: read_k<<<blocks, THREADS>>>(buf, bytes, out, 0); break;
          case 2: read_k<<<16, THREADS>>>(buf, bytes, out, 0); break;
          case 3: prefetch_k<<<16, 32>>>(buf, bytes); break;
          case 4:
          case 5: prefetch_k<<<sms, 32>>>(buf, bytes); break;
          case 6: prefetch_lines_k<<<blocks, THREADS>>>(buf, bytes); break;
          case 7: prefetch_lines_k<<<16, THREADS>>>(buf, bytes); break;
          case 8: copy_touch_k<<<blocks, THREADS>>>(buf, bytes); break;
          case 9: copy_touch_k<<<16, THREADS>>>(buf, bytes); break;
        }
        if (prep >= 2 && prep != 5) idle_k<<<1, 32>>>(30000);
        read_k<<<blocks, THREADS>>>(buf, bytes, out, 1);
        CK(cudaDeviceSynchronize());
        unsigned long long a, b;
        CK(cudaMemcpyFromSymbol(&a, g_start, 8));
        CK(cudaMemcpyFromSymbol(&b, g_end, 8));
        us.push_back((b - a) / 1e3);
      }
      std::sort(us.begin(), us.end());
      const double m = us[us.size() / 2];
      std::printf(" %7.2f (%7.0f)", m, bytes / m / 1e3);
    }
    std::printf("\n");
  }
  CK(cudaGetLastError());
  return 0;
}
