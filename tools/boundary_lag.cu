// How long a kernel boundary of the decode chain takes under load, and what the next kernel's
// early loads do to it. The chain's kernels (programmatic dependent launch) let the next kernel's
// blocks issue their first weight loads before `griddepcontrol.wait`; the timelines put 1.0-1.9 µs
// between a kernel's last block end and the next one's first released wait, and session 20's probe
// (tools/l2_hit_behind_misses.cu) found every L2 round trip 3x slower once ~17 MB are in flight.
// Question: does the boundary itself (the grid's completion, its stores or split-K atomics drained)
// and the next kernel's input staging grow with the bytes the next kernel has in flight?
// A chain of pairs, launched with PDL: A (528 blocks, 4 per SM, as the GEMVs) streams 64 KiB per
// block, then writes 16 outputs per block (plain stores, or `red.add` into 2048 outputs as the
// split-K residual adds); B (528 blocks) issues P bytes of weight loads per block, waits, reads A's
// outputs (one L2 round trip, a barrier: a GEMV's staging), then uses its loads. %globaltimer per
// block; per pair: lag = B's first wait return - A's last block end, staging = B's x arrival - its
// wait return (block mean), span = B's last block end - A's last block end; each the mean over pairs.
//   nvcc -O3 -arch=sm_90 -std=c++17 -I kernels/cuda -o build-sync/boundary_lag tools/boundary_lag.cu
//   build-sync/boundary_lag
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "common/pdl.cuh"
#include "common/vec.cuh"
#include "cuda_tool.h"

constexpr int THREADS = 256, A_LOADS = 16, OUTS = 2048, PAIRS = 24, MAX_P_LOADS = 8;

__device__ __forceinline__ unsigned long long gtime() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ unsigned mix(u32x4 v) { return v.a ^ v.b ^ v.c ^ v.d; }

struct Times {
  unsigned long long* a_end;                        // [blocks]
  unsigned long long *b_wait, *b_x, *b_end;          // [blocks]
};

// A_EARLY: A issues its first half before its own wait (as the chain's GEMVs do), so the next
// pair's A has loads in flight during this pair's B; without it only B's P bytes are.
template <bool ATOMIC, bool A_EARLY>
__global__ void __launch_bounds__(THREADS) kernel_a(const uint4* w, float* out, unsigned long long* a_end, unsigned* sink) {
  const uint4* wb = w + (long long)blockIdx.x * THREADS * A_LOADS + threadIdx.x;
  u32x4 v[A_LOADS / 2];  // the GEMVs' weight load (common/vec.cuh)
  if (!A_EARLY) pdl_wait();
#pragma unroll
  for (int i = 0; i < A_LOADS / 2; ++i) v[i] = load_stream16(wb + i * THREADS);
  pdl_launch_dependents();
  if (A_EARLY) pdl_wait();  // the previous pair's B
  unsigned s = 0;
#pragma unroll
  for (int i = 0; i < A_LOADS / 2; ++i) s += mix(v[i]);
#pragma unroll
  for (int i = 0; i < A_LOADS / 2; ++i) v[i] = load_stream16(wb + (A_LOADS / 2 + i) * THREADS);
#pragma unroll
  for (int i = 0; i < A_LOADS / 2; ++i) s += mix(v[i]);
  __shared__ unsigned part[THREADS];
  part[threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.x < 16) {
    const float y = float(part[threadIdx.x] & 0xffu) * 1e-3f;
    if (ATOMIC) atomicAdd(out + (blockIdx.x * 16 + threadIdx.x) % OUTS, y);  // result unused: red.add
    else out[blockIdx.x * 16 + threadIdx.x] = y;
  }
  __syncthreads();
  if (threadIdx.x == 0) a_end[blockIdx.x] = gtime();
  if (s == 0x12345678u) *sink = s;
}

template <int P_LOADS>
__global__ void __launch_bounds__(THREADS) kernel_b(const uint4* w, const float* x, Times t, unsigned* sink) {
  const uint4* wb = w + (long long)blockIdx.x * THREADS * MAX_P_LOADS + threadIdx.x;
  u32x4 v[P_LOADS > 0 ? P_LOADS : 1];
#pragma unroll
  for (int i = 0; i < P_LOADS; ++i) v[i] = load_stream16(wb + i * THREADS);
  pdl_launch_dependents();
  pdl_wait();
  const unsigned long long tw = gtime();
  const float4 xa = reinterpret_cast<const float4*>(x)[threadIdx.x];
  const float4 xb = reinterpret_cast<const float4*>(x)[THREADS + threadIdx.x];
  __shared__ float xs[THREADS];
  xs[threadIdx.x] = xa.x + xa.y + xa.z + xa.w + xb.x + xb.y + xb.z + xb.w;  // cannot issue before x arrives
  __syncthreads();
  const unsigned long long tx = gtime();
  unsigned s = __float_as_uint(xs[(threadIdx.x + 1) % THREADS]);
#pragma unroll
  for (int i = 0; i < P_LOADS; ++i) s += mix(v[i]);
  __shared__ unsigned part[THREADS];
  part[threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    t.b_wait[blockIdx.x] = tw;
    t.b_x[blockIdx.x] = tx;
    t.b_end[blockIdx.x] = gtime();
  }
  if (part[THREADS - 1 - threadIdx.x] == 0x12345678u) *sink = s;
}

template <typename K, typename... Args>
void launch_pdl(K kernel, int blocks, Args... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(blocks);
  cfg.blockDim = dim3(THREADS);
  cudaLaunchAttribute attr;
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  CK(cudaLaunchKernelEx(&cfg, kernel, args...));
}

// %globaltimer moves in steps of ~0.26 µs on the H200: means over the pairs resolve finer.
double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / double(v.size());
}

template <bool ATOMIC, int P_LOADS, bool A_EARLY>
void run(int blocks, uint4* w, long long w_words, float* out, unsigned* sink) {
  const long long a_words = (long long)blocks * THREADS * A_LOADS, b_words = (long long)blocks * THREADS * MAX_P_LOADS;
  const long long pair_words = a_words + b_words;
  std::vector<unsigned long long*> a_end(PAIRS), bw(PAIRS), bx(PAIRS), be(PAIRS);
  for (int p = 0; p < PAIRS; ++p)
    for (auto* v : {&a_end[p], &bw[p], &bx[p], &be[p]}) CK(cudaMalloc(v, sizeof(unsigned long long) * blocks));
  for (int rep = 0; rep < 2; ++rep) {  // the first pass warms up; the second is reported
    for (int p = 0; p < PAIRS; ++p) {
      const uint4* wa = w + (long long)p * pair_words % (w_words - pair_words);
      launch_pdl(kernel_a<ATOMIC, A_EARLY>, blocks, wa, out, a_end[p], sink);
      launch_pdl(kernel_b<P_LOADS>, blocks, wa + a_words, (const float*)out, Times{a_end[p], bw[p], bx[p], be[p]}, sink);
    }
    CK(cudaDeviceSynchronize());
  }
  std::vector<double> lag, staging, span;
  std::vector<unsigned long long> h[4];
  for (int p = 2; p < PAIRS; ++p) {
    unsigned long long* d[4] = {a_end[p], bw[p], bx[p], be[p]};
    for (int k = 0; k < 4; ++k) {
      h[k].resize(blocks);
      CK(cudaMemcpy(h[k].data(), d[k], sizeof(unsigned long long) * blocks, cudaMemcpyDeviceToHost));
    }
    const double a_last = double(*std::max_element(h[0].begin(), h[0].end()));
    const double b_first_wait = double(*std::min_element(h[1].begin(), h[1].end()));
    double st = 0;
    for (int b = 0; b < blocks; ++b) st += double(h[2][b] - h[1][b]);
    lag.push_back((b_first_wait - a_last) / 1e3);
    staging.push_back(st / blocks / 1e3);
    span.push_back((double(*std::max_element(h[3].begin(), h[3].end())) - a_last) / 1e3);
  }
  std::printf("%-8s %-7s %6d KiB %8.1f MB | %6.2f %6.2f %6.2f\n", ATOMIC ? "red.add" : "store", A_EARLY ? "early" : "late",
              P_LOADS * THREADS * 16 / 1024,
              double(blocks) * P_LOADS * THREADS * 16 / 1e6, mean(lag), mean(staging), mean(span));
  for (int p = 0; p < PAIRS; ++p)
    for (auto* v : {a_end[p], bw[p], bx[p], be[p]}) CK(cudaFree(v));
}

__global__ void fill(uint4* p, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    p[i] = make_uint4(unsigned(i) * 2654435761u | 1u, 0x3f9d70a4u, unsigned(i >> 7) | 1u, 0x40490fdbu);
}

int main() {
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  const int blocks = prop.multiProcessorCount * 4;
  const long long w_bytes = 2LL << 30, w_words = w_bytes / 16;
  uint4* w;
  float* out;
  unsigned* sink;
  CK(cudaMalloc(&w, w_bytes));
  CK(cudaMalloc(&out, sizeof(float) * blocks * 16));
  CK(cudaMemset(out, 0, sizeof(float) * blocks * 16));
  CK(cudaMalloc(&sink, 4));
  fill<<<1024, 256>>>(w, w_words);
  CK(cudaDeviceSynchronize());
  std::printf("%s: pairs of A (%d blocks x 64 KiB, then 16 outputs each) and B (%d blocks, P KiB each before its wait), PDL\n",
              prop.name, blocks, blocks);
  std::printf("%-8s %-7s %10s %11s | %6s %6s %6s   (us, means over %d pairs)\n", "A writes", "A loads", "B early", "in flight", "lag",
              "stage", "span", PAIRS - 2);
  for (int pass = 0; pass < 2; ++pass) {
    run<false, 0, false>(blocks, w, w_words, out, sink);
    run<false, 1, false>(blocks, w, w_words, out, sink);
    run<false, 4, false>(blocks, w, w_words, out, sink);
    run<false, 8, false>(blocks, w, w_words, out, sink);
    run<true, 0, false>(blocks, w, w_words, out, sink);
    run<true, 8, false>(blocks, w, w_words, out, sink);
    run<false, 0, true>(blocks, w, w_words, out, sink);
    run<false, 8, true>(blocks, w, w_words, out, sink);
    run<true, 0, true>(blocks, w, w_words, out, sink);
    run<true, 8, true>(blocks, w, w_words, out, sink);
  }
  return 0;
}
