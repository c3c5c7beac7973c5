// What running code that is not in the instruction caches costs on the GPU, under the conditions
// of a decode step. Every step streams ~1-8 GB of weights through a 60 MiB L2, so the code of each
// kernel in the chain is evicted before its next launch and its first pass fetches from DRAM while
// the other kernels load it. A GEMV's loop is small; attention (tens of KB of straight-line code
// in the unrolled per-row paths) runs most of its instructions once per launch.
// A probe kernel (64 blocks of 128 threads, as the attention's grid) runs N independent-chain FMAs
// of straight-line code (16 bytes each) twice in one loop; thread 0 of each block times both
// passes with clock64. Pass 0 pays for fetching the code, pass 1 runs it from the SM's caches.
// Conditions: warm (the probe just ran: its code in L2), flushed (a 512 MiB read before it evicts
// the code from L2), and under load: the probe launched while a reader streams 4 GiB on another
// stream, its code in L2 (the reader's loads marked evict-first) or not (plain loads, after a flush).
//   nvcc -O3 -arch=sm_90 -o build-sync/icache_cold tools/icache_cold.cu   (here; carry build-sync/)
//   build-sync/icache_cold                                                 (on the GPU machine)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "cuda_tool.h"

constexpr int PROBE_BLOCKS = 64, PROBE_THREADS = 128;

template <int N>
__global__ void __launch_bounds__(PROBE_THREADS) probe(long long* cycles, float* out, float x, float y) {
  float a[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) a[i] = threadIdx.x * 0.001f + i;
  long long t[3];
  __syncthreads();
  t[0] = clock64();
#pragma unroll 1
  for (int pass = 0; pass < 2; ++pass) {
#pragma unroll
    for (int i = 0; i < N; ++i) asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+f"(a[i % 8]) : "f"(x), "f"(y));
    __syncthreads();
    t[pass + 1] = clock64();
  }
  if (threadIdx.x == 0) {
    cycles[2 * blockIdx.x] = t[1] - t[0];
    cycles[2 * blockIdx.x + 1] = t[2] - t[1];
  }
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < 8; ++i) s += a[i];
  if (s == 1234.5f) out[threadIdx.x] = s;  // practically never: keeps the FMAs live
}

// Grid-stride read of n 16-byte words, `rounds` times over; EVICT_FIRST: marked to leave L2
// first (ld.global.cs), so that what was in L2 before (the probe's code) stays.
template <bool EVICT_FIRST>
__global__ void __launch_bounds__(1024) stream_read(const uint4* __restrict__ src, size_t n, int rounds, unsigned* out) {
  unsigned acc = 0;
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  for (int r = 0; r < rounds; ++r)
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += 4 * stride) {
      uint4 v[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) v[u] = i + u * stride < n ? (EVICT_FIRST ? __ldcs(src + i + u * stride) : src[i + u * stride]) : make_uint4(0, 0, 0, 0);
#pragma unroll
      for (int u = 0; u < 4; ++u) acc ^= v[u].x + v[u].y + v[u].z + v[u].w;
    }
  if (acc == 0x12345678u) out[0] = acc;
}

__global__ void fill(unsigned* p, size_t n) {
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    p[i] = (unsigned)(i * 2654435761u) | 0x01010101u;
}

struct Stat {
  double pass0, pass1, pass0_max;
};

template <int N>
void run(const char* cond, const char* label, long long* dcycles, float* dout, const uint4* src, size_t words, int sms,
         double ghz, cudaStream_t s0, cudaStream_t s1) {
  const int reps = 21;
  std::vector<double> p0, p1, p0max;
  std::vector<long long> h(2 * PROBE_BLOCKS);
  const std::string c = cond;
  unsigned* sink = reinterpret_cast<unsigned*>(dout);
  for (int r = 0; r < reps; ++r) {
    if (c == "warm" || c == "loaded-l2") {
      probe<N><<<PROBE_BLOCKS, PROBE_THREADS, 0, s0>>>(dcycles, dout, 1.0001f, 0.5f);  // its code into L2
    } else {
      stream_read<false><<<sms * 2, 1024, 0, s0>>>(src, words / 8, 1, sink);  // 512 MiB: the code out of L2
    }
    CK(cudaStreamSynchronize(s0));
    // Loaded: 4 GiB (~1 ms) on one stream, the probe on the other a few microseconds after it starts.
    if (c == "loaded-l2") stream_read<true><<<sms, 1024, 0, s1>>>(src, words, 1, sink);
    if (c == "loaded-dram") stream_read<false><<<sms, 1024, 0, s1>>>(src, words, 1, sink);
    probe<N><<<PROBE_BLOCKS, PROBE_THREADS, 0, s0>>>(dcycles, dout, 1.0001f, 0.5f);
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(h.data(), dcycles, h.size() * sizeof(long long), cudaMemcpyDeviceToHost));
    std::vector<long long> a, b;
    for (int i = 0; i < PROBE_BLOCKS; ++i) a.push_back(h[2 * i]), b.push_back(h[2 * i + 1]);
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    p0.push_back(a[a.size() / 2]);
    p0max.push_back(a.back());
    p1.push_back(b[b.size() / 2]);
  }
  auto med = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const double c0 = med(p0), c1 = med(p1), cm = med(p0max);
  const double kb = N * 16.0 / 1024.0;
  std::printf("%-6s %-11s %3.0f KB  pass0 %7.0f cyc %6.2f us (slowest block %6.2f us)  pass1 %7.0f cyc %6.2f us  "
              "cold cost %6.2f us = %5.1f ns/KB\n",
              label, cond, kb, c0, c0 / ghz / 1e3, cm / ghz / 1e3, c1, c1 / ghz / 1e3, (c0 - c1) / ghz / 1e3,
              (c0 - c1) / ghz / kb);
}

int main() {
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  int khz = 0;
  CK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
  const double ghz = khz / 1e6;
  const size_t bytes = size_t(4) << 30, words = bytes / 16;
  uint4* src;
  long long* dcycles;
  float* dout;
  CK(cudaMalloc(&src, bytes));
  CK(cudaMalloc(&dcycles, 2 * PROBE_BLOCKS * sizeof(long long)));
  CK(cudaMalloc(&dout, 4096));
  fill<<<sms * 8, 256>>>(reinterpret_cast<unsigned*>(src), bytes / 4);
  CK(cudaDeviceSynchronize());
  cudaStream_t s0, s1;
  CK(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  std::printf("%s, %d SMs, L2 %d MiB, SM clock %.2f GHz (cycles -> us at this clock)\n", prop.name, sms,
              prop.l2CacheSize >> 20, ghz);
  for (const char* cond : {"warm", "flushed", "loaded-l2", "loaded-dram"}) {
    run<64>(cond, "N64", dcycles, dout, src, words, sms, ghz, s0, s1);
    run<256>(cond, "N256", dcycles, dout, src, words, sms, ghz, s0, s1);
    run<1024>(cond, "N1024", dcycles, dout, src, words, sms, ghz, s0, s1);
    run<2048>(cond, "N2048", dcycles, dout, src, words, sms, ghz, s0, s1);
    run<4096>(cond, "N4096", dcycles, dout, src, words, sms, ghz, s0, s1);
  }
  CK(cudaGetLastError());
  return 0;
}
