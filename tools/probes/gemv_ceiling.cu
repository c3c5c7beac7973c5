// Where gemv.fused loses against the read ceiling (tools/probes/read_ceiling.cu): the family's own device
// function (kernels/cuda/gemv/gemv.cuh, included as the engine's generated bindings include it)
// at one projection's shape, with its parts switched on one at a time (plain store, + RMSNorm
// gamma, + the epilogue), beside a grid-stride prototype (gemv_strided below: one block per
// resident slot, x' staged once per block, the next row tile's first loads issued before this
// tile's epilogue). Each is timed as LAUNCHES back-to-back launches with programmatic dependent
// launch (as in a decode step) rotating over enough weight copies to defeat the L2, median of
// repeats, against a plain read of the same bytes in the same process. A developer's tool, not
// part of the engine:
//   nvcc -O3 -arch=sm_90 -std=c++17 -I kernels/cuda -o build-sync/gemv_ceiling tools/probes/gemv_ceiling.cu
//   build-sync/gemv_ceiling N K EPI     (on the GPU machine; EPI 0 store, 2 SwiGLU, 3 argmax)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cuda_tool.h"
#include "gemv/gemv.cuh"

template <int BLOCK, int ROWS, int UNROLL, int EPI>
__global__ void __launch_bounds__(BLOCK) real_gemv(const GemvParams p) {
  gemv<BLOCK, ROWS, UNROLL, 1, 1, EPI, ac_bf16>(p);
}

// Prototype: gemv.fused at batch 1, split-K 1, with a grid of resident blocks that stride over the
// row tiles (tile = blockIdx.x, += gridDim.x). x' is staged once; each tile's first loads go out
// before the previous tile's epilogue; argmax keys are kept per warp and published once.
// Bounded to 64 registers (1024 / BLOCK blocks per SM), as the plain kernel's points mostly run.
template <int BLOCK, int ROWS, int UNROLL, int EPI>
__global__ void __launch_bounds__(BLOCK, 1024 / BLOCK) gemv_strided(const GemvParams p) {
  using W = ac_bf16;
  constexpr int WARPS = BLOCK / 32, MATS = EPI == EPI_SWIGLU ? 2 : 1, BATCH = 1;
  extern __shared__ float4 xs_raw[];
  float* xs = reinterpret_cast<float*>(xs_raw);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const long long K = p.K, N = p.N, kchunk = (K + 7) / 8 * 8, nchunks = K / 8;
  const long long tiles = (N + WARPS * ROWS - 1) / (WARPS * ROWS);
  const W* w0 = static_cast<const W*>(p.w);
  const W* w1 = static_cast<const W*>(p.w2);
  long long tile = blockIdx.x;
  u32x4 wa[UNROLL][MATS][ROWS], wb[UNROLL][MATS][ROWS];
  gemv_load<ROWS, UNROLL, MATS, W>(wa, w0, w1, (tile * WARPS + warp) * ROWS, N, K, 0, nchunks, 0, lane);
  pdl_launch_dependents();
  pdl_wait();
  __shared__ float ss_part[BATCH][WARPS];
  gemv_stage_x_deferred<BLOCK, BATCH, W>(p, xs, ss_part, kchunk);
  const float inv = p.gamma ? gemv_inv_rms<BLOCK>(p, ss_part[0]) : 1.0f;
  unsigned long long key = 0;
  for (; tile < tiles; tile += gridDim.x) {
    const long long row0 = (tile * WARPS + warp) * ROWS;
    float acc[MATS][ROWS][BATCH];
    gemv_stream<ROWS, UNROLL, MATS, BATCH, W>(acc, wa, wb, w0, w1, row0, N, K, 0, nchunks, xs, kchunk, lane, [] {});
    if (tile + gridDim.x < tiles)
      gemv_load<ROWS, UNROLL, MATS, W>(wa, w0, w1, ((tile + gridDim.x) * WARPS + warp) * ROWS, N, K, 0, nchunks, 0, lane);
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
      const float v = warp_sum(acc[0][r][0]) * inv;
      const float u = MATS == 2 ? warp_sum(acc[MATS - 1][r][0]) * inv : 0.0f;
      const long long row = row0 + r;
      if (lane != 0 || row >= N) continue;
      if (EPI == EPI_ARGMAX) {
        const unsigned long long k = argmax_key(v, row);
        key = k > key ? k : key;
      }
      gemv_epilogue<EPI, 1, W>(p, 0, row, v, u);
    }
  }
  if (EPI == EPI_ARGMAX && lane == 0 && key != 0) atomicMax(p.best, key);
}

__global__ void read_only(const uint4* __restrict__ src, size_t words_per_block, unsigned* out) {
  const uint4* q = src + blockIdx.x * words_per_block;
  unsigned acc = 0;
  for (size_t i = threadIdx.x; i < words_per_block; i += 4 * blockDim.x) {
    u32x4 v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u)
      v[u] = i + u * blockDim.x < words_per_block ? load_stream16(q + i + u * blockDim.x) : u32x4{0, 0, 0, 0};
#pragma unroll
    for (int u = 0; u < 4; ++u) acc ^= v[u].a + v[u].b + v[u].c + v[u].d;
  }
  if (acc == 0x12345678u) out[0] = acc;
}

__global__ void fill(unsigned* p, size_t n, unsigned salt) {
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    p[i] = ((unsigned)(i * 2654435761u) ^ salt) & 0x3fff3fffu;  // small finite bf16 pairs
}

constexpr int kLaunches = 24, kReps = 9;

// Microseconds per launch: kLaunches back to back, median of kReps.
template <typename F>
static float median_us(F launch) {
  return median_event_ms(launch, kReps, kLaunches) * 1000.0f;
}

template <typename Kernel>
static void launch_pdl(Kernel kernel, unsigned grid, unsigned block, size_t smem, const GemvParams& p) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(grid);
  cfg.blockDim = dim3(block);
  cfg.dynamicSmemBytes = smem;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  CK(cudaLaunchKernelEx(&cfg, kernel, p));
}

int main(int argc, char** argv) {
  const long long N = argc > 1 ? std::atoll(argv[1]) : 128256, K = argc > 2 ? std::atoll(argv[2]) : 2048;
  const int epi = argc > 3 ? std::atoi(argv[3]) : 3;
  const int mats = epi == 2 ? 2 : 1;
  const size_t per_launch = (size_t)N * K * 2 * mats;
  const int copies = (int)std::max<size_t>(2, ((size_t)1 << 30) / per_launch);
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  char* w;
  void* gamma;
  float *x, *out;
  unsigned long long* best;
  unsigned* sink;
  CK(cudaMalloc(&w, per_launch * copies));
  CK(cudaMalloc(&gamma, K * 2));
  CK(cudaMalloc(&x, K * 4));
  CK(cudaMalloc(&out, N * 4));
  CK(cudaMalloc(&best, 64));
  CK(cudaMalloc(&sink, 64));
  CK(cudaMemset(best, 0, 64));
  fill<<<prop.multiProcessorCount * 8, 256>>>(reinterpret_cast<unsigned*>(w), per_launch * copies / 4, 1u);
  fill<<<8, 256>>>(static_cast<unsigned*>(gamma), K / 2, 2u);
  fill<<<8, 256>>>(reinterpret_cast<unsigned*>(x), K, 3u);  // f32 bit patterns: small finite values
  CK(cudaDeviceSynchronize());
  const double read_us = median_us([&](int i) {
    read_only<<<(unsigned)(per_launch / 65536), 256>>>(reinterpret_cast<const uint4*>(w + (i % copies) * per_launch), 4096,
                                                       sink);
  });
  std::printf("%s: N %lld K %lld epi %d, %.1f MB per launch, %d copies; plain read (64 KB per block): %.2f us, %.1f GB/s\n",
              prop.name, N, K, epi, per_launch / 1e6, copies, read_us, per_launch / (read_us * 1e3));
  std::printf("%-30s %6s %10s %9s %9s\n", "variant", "grid", "us", "GB/s", "vs read");
  auto run = [&](const char* name, auto kernel, int block, int rows_per_block, bool with_gamma, bool strided) {
    const size_t smem = (size_t)K * 4;
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    unsigned grid = (unsigned)((N + rows_per_block - 1) / rows_per_block);
    if (strided) {
      int per_sm = 0;
      CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, block, smem));
      grid = std::min<unsigned>(grid, (unsigned)(per_sm * prop.multiProcessorCount));
    }
    std::vector<GemvParams> ps(copies);
    for (int c = 0; c < copies; ++c) {
      GemvParams& p = ps[c];
      p.x = x;
      p.gamma = with_gamma ? gamma : nullptr;
      p.eps = 1e-5f;
      p.w = w + c * per_launch;
      p.w2 = mats == 2 ? w + c * per_launch + per_launch / 2 : nullptr;
      p.out = out;
      p.best = best;
      p.B = 1, p.N = N, p.K = K;
    }
    const double us = median_us([&](int i) { launch_pdl(kernel, grid, block, smem, ps[i % copies]); });
    std::printf("%-24s %-5s %6u %10.2f %9.1f %8.3fx\n", name, with_gamma ? "gamma" : "", grid, us,
                per_launch / (us * 1e3), read_us / us);
  };
#define V(B, R, U, E, G) run("fused " #B ":" #R ":" #U, real_gemv<B, R, U, E>, B, (B / 32) * R, G, false)
#define S(B, R, U, E, G) run("strided " #B ":" #R ":" #U, gemv_strided<B, R, U, E>, B, (B / 32) * R, G, true)
#define POINTS(E)          \
  V(256, 4, 1, E, false);  \
  V(256, 4, 1, E, true);   \
  S(256, 4, 1, E, true);   \
  V(128, 4, 1, E, true);   \
  S(128, 4, 1, E, true);   \
  V(256, 2, 2, E, true);   \
  S(256, 2, 2, E, true);   \
  V(256, 1, 2, E, true);   \
  S(256, 1, 2, E, true);   \
  V(128, 1, 4, E, true);   \
  S(128, 1, 4, E, true);   \
  V(256, 2, 1, E, true);   \
  S(256, 2, 1, E, true);   \
  S(512, 2, 1, E, true);
  if (epi == 0) { POINTS(0) }
  else if (epi == 2) { POINTS(2) }
  else { POINTS(3) }
  CK(cudaDeviceSynchronize());
  return 0;
}
