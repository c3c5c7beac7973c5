// How long a load that hits L2 takes on an SM that has weight loads in flight, by the path those
// weight loads take. A decode GEMV block stages its input x' (a few KB written by the previous
// kernel: L2 hits) while its weight loads (DRAM misses) are in flight; session 19 measured the
// staging at 0.65-1.8 µs under the step's load and 2.46 µs when the next weight buffer was issued
// before it (bench/results/2026-12-01-x-staging/). The question: does an L2 hit wait behind the
// same SM's outstanding global loads (ld.global: the LSU / L1TEX path), and not behind bulk copies
// (cp.async.bulk: the copy engine) — i.e. would weights streamed by bulk copies let x' arrive at
// L2 speed?
// Every block of the grid (all SMs, 4 blocks of 256 threads each by default, as the GEMVs) runs ROUNDS rounds;
// a round asks for 32 KiB of a 1.5 GiB buffer (new lines every round: DRAM misses) and for one
// float4 per thread of a 1 MiB buffer read beforehand (L2 hits), and thread 0 records, in SM
// clocks from just before the round's first request, when every thread's x value was usable and
// when all of the round's weights were (block barriers, as a GEMV's staging ends in one). Modes:
//   x_only       no weight loads (L2 latency with the DRAM idle)
//   ldg_x        weights by ld.global.nc (8 x 16 B per thread, the GEMVs' load), then x
//   x_ldg        x first, then the weights
//   bulk_x       weights by two 16 KiB bulk copies into shared memory (thread 0), then x
//   ldg_wait_x   weights by ld.global.nc, all used, then x (nothing of this block in flight)
//   nvcc -O3 -arch=sm_90 -std=c++17 -I kernels/cuda -o build-sync/l2_hit_behind_misses tools/probes/l2_hit_behind_misses.cu
//   build-sync/l2_hit_behind_misses [blocks per SM, 4]   (fewer: fewer bytes in flight on the chip)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "common/mbarrier.cuh"
#include "common/vec.cuh"
#include "cuda_tool.h"

constexpr int THREADS = 256, PER_THREAD = 8, ROUND_BYTES = THREADS * PER_THREAD * 16, ROUNDS = 48;
constexpr int X_SLICES = 256;  // x slices of THREADS float4 (4 KiB each): 1 MiB, L2-resident
enum Mode { X_ONLY, LDG_X, X_LDG, BULK_X, LDG_WAIT_X, MODES };
const char* kModeName[MODES] = {"x_only", "ldg_x", "x_ldg", "bulk_x", "ldg_wait_x"};

// x as the GEMVs' staging reads it (written by the previous kernel, so never in this SM's L1), here
// with .cg so that a line another block of this SM read is not an L1 hit either.
__device__ __forceinline__ float4 ldg_x(const float4* p) {
  float4 v;
  asm volatile("ld.global.cg.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
  return v;
}
// When every thread of the block has v in a register: its store to shared memory cannot issue
// before v has arrived, and the barrier orders the stores before the clock read (a plain use of
// v did not: it was dropped as dead, and the clock read came before the load's result). A GEMV block's staging ends in a barrier too.
__device__ __forceinline__ long long block_clock_after(unsigned v, unsigned* scratch) {
  asm volatile("st.shared.u32 [%0], %1;" ::"r"(smem_u32(scratch + threadIdx.x)), "r"(v) : "memory");  // kept: volatile
  __syncthreads();
  return clock64();
}

template <int MODE>
__global__ void __launch_bounds__(THREADS) probe(const uint4* w, long long w_rounds, const float4* x, long long* lat,
                                                 unsigned* sink) {
  __shared__ alignas(128) uint4 tile[MODE == BULK_X ? THREADS * PER_THREAD : 1];
  __shared__ alignas(8) unsigned long long bar;
  __shared__ unsigned scratch[THREADS];
  if (MODE == BULK_X && threadIdx.x == 0) {
    mbar_init(&bar, 1);
    mbar_init_fence();
  }
  __syncthreads();
  unsigned acc = 0;
  for (int r = 0; r < ROUNDS; ++r) {
    const long long round = ((long long)r * gridDim.x + blockIdx.x) % w_rounds;
    const uint4* wr = w + round * (THREADS * PER_THREAD);
    const float4* xr = x + ((long long)r * gridDim.x + blockIdx.x) % X_SLICES * THREADS + threadIdx.x;
    u32x4 v[PER_THREAD];  // the GEMVs' weight load (common/vec.cuh)
    float4 xv;
    __syncthreads();
    const long long t0 = clock64();
    if (MODE == X_LDG) xv = ldg_x(xr);
    if (MODE == LDG_X || MODE == X_LDG || MODE == LDG_WAIT_X)
#pragma unroll
      for (int i = 0; i < PER_THREAD; ++i) v[i] = load_stream16(wr + i * THREADS + threadIdx.x);
    if (MODE == BULK_X && threadIdx.x == 0) {
      asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // last round's reads before the copy's writes
      mbar_arrive_expect_tx(&bar, ROUND_BYTES);
      bulk_load(tile, wr, ROUND_BYTES / 2, &bar);
      bulk_load(tile + THREADS * PER_THREAD / 2, wr + THREADS * PER_THREAD / 2, ROUND_BYTES / 2, &bar);
    }
    long long tw = 0;
    if (MODE == LDG_WAIT_X) {
      unsigned s = 0;
#pragma unroll
      for (int i = 0; i < PER_THREAD; ++i) s += v[i].a ^ v[i].b ^ v[i].c ^ v[i].d;
      tw = block_clock_after(s, scratch);
      acc += s;
    }
    if (MODE != X_LDG) xv = ldg_x(xr);
    const long long tx = block_clock_after(__float_as_uint(xv.x) ^ __float_as_uint(xv.w), scratch);
    acc += __float_as_uint(xv.y);
    if (MODE == LDG_X || MODE == X_LDG) {
      unsigned s = 0;
#pragma unroll
      for (int i = 0; i < PER_THREAD; ++i) s += v[i].a ^ v[i].b ^ v[i].c ^ v[i].d;
      tw = block_clock_after(s, scratch);
      acc += s;
    }
    if (MODE == BULK_X) {
      mbar_wait(&bar, r & 1);
      const uint4 a = tile[threadIdx.x], b = tile[THREADS * PER_THREAD - 1 - threadIdx.x];
      tw = block_clock_after(a.x ^ b.y, scratch);
      acc += a.x ^ b.y;
    }
    if (threadIdx.x == 0) {
      lat[((long long)blockIdx.x * ROUNDS + r) * 2 + 0] = tx - t0;
      lat[((long long)blockIdx.x * ROUNDS + r) * 2 + 1] = tw ? tw - t0 : 0;
    }
  }
  if (acc == 0x12345678u) *sink = acc;  // keeps every load
}

template <int MODE>
void launch(int blocks, const uint4* w, long long w_rounds, const float4* x, long long* lat, unsigned* sink) {
  probe<MODE><<<blocks, THREADS>>>(w, w_rounds, x, lat, sink);
}
using Launch = void (*)(int, const uint4*, long long, const float4*, long long*, unsigned*);
const Launch kLaunch[MODES] = {launch<X_ONLY>, launch<LDG_X>, launch<X_LDG>, launch<BULK_X>, launch<LDG_WAIT_X>};

__global__ void fill(uint4* p, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    p[i] = make_uint4(unsigned(i) * 2654435761u | 1u, 0x3f9d70a4u, unsigned(i >> 7) | 1u, 0x40490fdbu);
}

double pct(std::vector<long long> v, double q) {
  std::sort(v.begin(), v.end());
  return double(v[size_t(q * double(v.size() - 1))]);
}

int main(int argc, char** argv) {
  const int per_sm = argc > 1 ? std::atoi(argv[1]) : 4;  // blocks per SM: the bytes in flight
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  int clock_khz = 0;
  CK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
  const double ghz = clock_khz / 1e6;
  const int blocks = prop.multiProcessorCount * per_sm;
  const long long w_bytes = 3LL << 29;  // 1.5 GiB: a round's lines are new to L2
  const long long w_rounds = w_bytes / ROUND_BYTES;
  uint4 *w, *xw;
  long long* lat;
  unsigned* sink;
  CK(cudaMalloc(&w, w_bytes));
  CK(cudaMalloc(&xw, X_SLICES * THREADS * 16));
  CK(cudaMalloc(&lat, sizeof(long long) * blocks * ROUNDS * 2));
  CK(cudaMalloc(&sink, 4));
  fill<<<1024, 256>>>(w, w_bytes / 16);
  fill<<<64, 256>>>(xw, X_SLICES * THREADS);
  CK(cudaDeviceSynchronize());
  std::printf("%s, %d SMs, %d blocks x %d threads, %d KiB of weights per block per round, %d rounds; cycles at %.2f GHz\n",
              prop.name, prop.multiProcessorCount, blocks, THREADS, ROUND_BYTES / 1024, ROUNDS, ghz);
  std::printf("%-11s %9s | x usable after, us: %6s %6s %6s | weights usable after, us: %6s %6s %6s\n", "mode",
              "GB/s", "p10", "median", "p90", "p10", "median", "p90");
  for (int pass = 0; pass < 2; ++pass)
    for (int m = 0; m < MODES; ++m) {
      const float4* x = reinterpret_cast<const float4*>(xw);
      // x is L2-resident: the previous launch read it (fill, then every probe).
      const float ms = median_event_ms([&](int) { kLaunch[m](blocks, w, w_rounds, x, lat, sink); }, 5);
      std::vector<long long> h(size_t(blocks) * ROUNDS * 2);
      CK(cudaMemcpy(h.data(), lat, h.size() * sizeof(long long), cudaMemcpyDeviceToHost));
      std::vector<long long> tx, tw;
      for (size_t i = 0; i < h.size(); i += 2) {
        if (i / 2 % ROUNDS < 2) continue;  // the first rounds ramp
        tx.push_back(h[i]);
        if (h[i + 1]) tw.push_back(h[i + 1]);
      }
      const double gbs = m == X_ONLY ? 0.0 : double(blocks) * ROUNDS * ROUND_BYTES / (ms * 1e6);
      std::printf("%-11s %9.0f | %28.2f %6.2f %6.2f |", kModeName[m], gbs, pct(tx, 0.1) / ghz / 1e3,
                  pct(tx, 0.5) / ghz / 1e3, pct(tx, 0.9) / ghz / 1e3);
      if (tw.empty()) std::printf("\n");
      else std::printf(" %32.2f %6.2f %6.2f\n", pct(tw, 0.1) / ghz / 1e3, pct(tw, 0.5) / ghz / 1e3, pct(tw, 0.9) / ghz / 1e3);
    }
  return 0;
}
