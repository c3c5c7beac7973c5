// How fast the GPU streams bytes it only reads, against the device-to-device copy bandwidth that
// issue 9's floor is measured with (read + write counted), in the same process. A decode step's
// kernels only read their weights, so if reads stream faster than a copy, the GEMVs that reach
// "100% of the copy bandwidth" in the compile report still have headroom; if not, they are at
// the ceiling and the step's remaining loss is between and around the kernels.
// Variants: blocks per SM (a grid-stride loop over a fixed grid) or one tile per block (as a
// GEMV's grid: many blocks, each reading a contiguous piece once), 16-byte loads in flight per
// thread (UNROLL), and the load's cache hint (plain ld.global or ld.global.nc.L1::no_allocate).
// Each reads a buffer several times the L2 and sums it (the sum is written, so nothing is
// dropped); median of event-timed repeats; the buffer holds non-zero random-ish bits.
// Last, a few large blocks (32 to 264: about one per SM or fewer) reading grid-stride: how fast
// part of the chip streams, over the buffer and over its first 16 MiB.
//   nvcc -O3 -arch=sm_90 -o build-sync/read_ceiling tools/probes/read_ceiling.cu   (here; carry build-sync/)
//   build-sync/read_ceiling [MiB]                                            (on the GPU machine)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cuda_tool.h"

template <bool NC>
__device__ __forceinline__ uint4 load16(const uint4* p) {
  uint4 v;
  if constexpr (NC)
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
  else
    asm volatile("ld.global.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}

// Grid-stride: thread i reads 16-byte words i, i + stride, ... UNROLL of them in flight.
template <int UNROLL, bool NC>
__global__ void read_stride(const uint4* __restrict__ src, size_t n, unsigned* out) {
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  unsigned acc = 0;
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + (UNROLL - 1) * stride < n; i += UNROLL * stride) {
    uint4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) v[u] = load16<NC>(src + i + u * stride);
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) acc ^= v[u].x + v[u].y + v[u].z + v[u].w;
  }
  for (; i < n; i += stride) {
    const uint4 v = load16<NC>(src + i);
    acc ^= v.x + v.y + v.z + v.w;
  }
  if (acc == 0x12345678u) out[0] = acc;  // practically never: keeps the loads live
}

// One tile per block, as a GEMV's grid: block b reads words [b * TILE, (b + 1) * TILE), each
// thread UNROLL words in flight per step.
template <int UNROLL, bool NC>
__global__ void read_tiles(const uint4* __restrict__ src, size_t words_per_block, unsigned* out) {
  const uint4* p = src + blockIdx.x * words_per_block;
  unsigned acc = 0;
  for (size_t i = threadIdx.x; i < words_per_block; i += UNROLL * blockDim.x) {
    uint4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
      v[u] = i + u * blockDim.x < words_per_block ? load16<NC>(p + i + u * blockDim.x) : make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) acc ^= v[u].x + v[u].y + v[u].z + v[u].w;
  }
  if (acc == 0x12345678u) out[0] = acc;
}


// A batch-1 GEMV's access pattern over rows of K = 2048 bf16 (4 KB, lm_head's and the 1-2B
// models' hidden size): block of BLOCK threads, ROWS rows per warp, each lane one 16-byte chunk
// of a row per load, D loads in flight per thread (a ring of registers, fully unrolled). ORDER 0
// walks the warp's rows interleaved (chunk step s of rows 0..ROWS-1, then step s + 1: gemv.fused's
// order), ORDER 1 finishes a row before the next. MODE 0 only loads (xor), MODE 1 also stages x
// (8 KB of f32, from L2) in shared memory and does the bf16 FMAs and the warp sums, like the real
// kernel; MODE 2 is MODE 1 with the first D loads issued after x is staged (no overlap).
template <int ROWS, int D, int ORDER, int MODE, int BLOCK>
__global__ void __launch_bounds__(BLOCK) gemv_like(const uint4* __restrict__ w, const float* __restrict__ x,
                                                   float* out) {
  constexpr int CPR = 2048 / 8, CPL = CPR / 32, T = ROWS * CPL;
  static_assert(D <= T, "ring no longer than the work");
  __shared__ float4 xs[2048 / 4];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const long long row0 = ((long long)blockIdx.x * (BLOCK / 32) + warp) * ROWS;
  const uint4* base = w + row0 * CPR + lane;
  auto row_of = [](int t) { return ORDER == 0 ? t % ROWS : t / CPL; };
  auto step_of = [](int t) { return ORDER == 0 ? t / ROWS : t % CPL; };
  uint4 ring[D];
  if (MODE == 1 || MODE == 2) {
    if (MODE == 1) {
#pragma unroll
      for (int t = 0; t < D; ++t) ring[t] = load16<true>(base + row_of(t) * CPR + step_of(t) * 32);
    }
    for (int i = threadIdx.x; i < 2048 / 4; i += BLOCK) xs[i] = reinterpret_cast<const float4*>(x)[i];
    __syncthreads();
    if (MODE == 2) {
#pragma unroll
      for (int t = 0; t < D; ++t) ring[t] = load16<true>(base + row_of(t) * CPR + step_of(t) * 32);
    }
  } else {
#pragma unroll
    for (int t = 0; t < D; ++t) ring[t] = load16<true>(base + row_of(t) * CPR + step_of(t) * 32);
  }
  float acc[ROWS];
#pragma unroll
  for (int r = 0; r < ROWS; ++r) acc[r] = 0.0f;
  unsigned xo = 0;
#pragma unroll
  for (int t = 0; t < T; ++t) {
    const uint4 v = ring[t % D];
    if (t + D < T) ring[t % D] = load16<true>(base + row_of(t + D) * CPR + step_of(t + D) * 32);
    if (MODE == 0) {
      xo ^= v.x + v.y + v.z + v.w;
    } else {
      const int c = step_of(t) * 32 + lane;
      const float4 lo = xs[2 * c], hi = xs[2 * c + 1];
      const unsigned u[4] = {v.x, v.y, v.z, v.w};
      const float xv[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
      float& a = acc[row_of(t)];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        a = fmaf(__uint_as_float(u[i] << 16), xv[2 * i], a);
        a = fmaf(__uint_as_float(u[i] & 0xffff0000u), xv[2 * i + 1], a);
      }
    }
  }
  if constexpr (MODE == 0) {
    if (xo == 0x12345678u) out[0] = 1.0f;
  } else {
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
      float s = acc[r];
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
      if (lane == 0) out[row0 + r] = s;
    }
  }
}

__global__ void fill(unsigned* p, size_t n) {
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    p[i] = (unsigned)(i * 2654435761u) | 0x01010101u;
}

int main(int argc, char** argv) {
  const size_t mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1024;
  const size_t bytes = mib << 20, words = bytes / 16;
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  uint4 *src, *dst;
  unsigned* out;
  CK(cudaMalloc(&src, bytes));
  CK(cudaMalloc(&dst, bytes));
  CK(cudaMalloc(&out, 16));
  fill<<<sms * 8, 256>>>(reinterpret_cast<unsigned*>(src), bytes / 4);
  CK(cudaDeviceSynchronize());
  std::printf("%s, %d SMs, L2 %d MiB, buffer %zu MiB\n", prop.name, sms, prop.l2CacheSize >> 20, mib);
  const int reps = 15;
  const float copy = median_event_ms([&](int) { CK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice)); }, reps);
  const double copy_gbs = 2.0 * bytes / (copy * 1e6);
  std::printf("copy (cudaMemcpyAsync, read+write counted): %.3f ms, %.1f GB/s\n", copy, copy_gbs);
  std::printf("%-10s %-4s %-7s %-6s %9s %9s %8s\n", "grid", "hint", "threads", "unroll", "ms", "GB/s", "vs copy");
  auto report = [&](const char* grid, bool nc, int threads, int unroll, float ms) {
    const double gbs = bytes / (ms * 1e6);
    std::printf("%-10s %-4s %-7d %-6d %9.3f %9.1f %7.3fx\n", grid, nc ? "nc" : "ld", threads, unroll, ms, gbs,
                gbs / copy_gbs);
  };
#define STRIDE(U, NC, PER_SM, T)                                                                                     \
  report("stride" #PER_SM, NC, T, U,                                                                                 \
         median_event_ms([&](int) { read_stride<U, NC><<<sms * PER_SM, T>>>(src, words, out); }, reps))
#define TILES(U, NC, T, TILE_KIB)                                                                                    \
  report("tile" #TILE_KIB "K", NC, T, U, median_event_ms([&](int) {                                                             \
           const size_t per = (size_t)TILE_KIB * 1024 / 16;                                                          \
           read_tiles<U, NC><<<(unsigned)(words / per), T>>>(src, per, out);                                         \
         }, reps))
  STRIDE(1, false, 8, 256);
  STRIDE(4, false, 8, 256);
  STRIDE(8, false, 8, 256);
  STRIDE(4, true, 8, 256);
  STRIDE(8, true, 8, 256);
  STRIDE(4, true, 4, 256);
  STRIDE(8, true, 4, 512);
  STRIDE(4, true, 16, 128);
  STRIDE(16, true, 2, 512);
  TILES(4, false, 256, 64);
  TILES(4, true, 256, 64);
  TILES(8, true, 256, 64);
  TILES(4, true, 256, 128);
  TILES(8, true, 256, 32);
  TILES(2, true, 256, 16);
  TILES(4, true, 128, 32);
#define GEMV(ROWS, D, ORDER, MODE, T)                                                                    \
  report("gemv r" #ROWS " o" #ORDER " m" #MODE, true, T, D, median_event_ms([&](int) {                                  \
           gemv_like<ROWS, D, ORDER, MODE, T><<<(unsigned)(bytes / 4096 / ((T / 32) * ROWS)), T>>>(src, xvec, yvec); \
         }, reps))
  float *xvec, *yvec;
  CK(cudaMalloc(&xvec, 2048 * 4));
  CK(cudaMalloc(&yvec, bytes / 4096 * 4));
  fill<<<8, 256>>>(reinterpret_cast<unsigned*>(xvec), 2048);
  std::printf("gemv-like rows of 2048 bf16 (unroll column: loads in flight per thread; mode 0 loads only, 1 x staged + FMAs, 2 loads after staging)\n");
  GEMV(4, 8, 0, 0, 256);
  GEMV(4, 8, 0, 1, 256);
  GEMV(4, 8, 0, 2, 256);
  GEMV(4, 8, 1, 1, 256);
  GEMV(4, 4, 0, 1, 256);
  GEMV(4, 16, 0, 1, 256);
  GEMV(4, 16, 1, 1, 256);
  GEMV(4, 8, 0, 1, 128);
  GEMV(2, 8, 0, 1, 256);
  GEMV(2, 16, 0, 1, 256);
  GEMV(1, 8, 0, 1, 256);
  GEMV(1, 8, 0, 1, 512);
  GEMV(8, 8, 0, 1, 256);
  GEMV(8, 16, 0, 1, 256);
  GEMV(8, 16, 1, 1, 128);
  // Part of the chip: a grid of a few large blocks (about one per SM), as a kernel that runs one
  // cluster per KV head would stream a layer's QKV weights (16.8 MB for Qwen3-1.7B) — over the
  // whole buffer (the rate) and over its first 16 MiB (with the ramp).
  std::printf("few blocks: grid-stride, nc loads (grid column: blocks; over the buffer, then over 16 MiB of it)\n");
#define FEW(U, BLOCKS, T)                                                                                      \
  do {                                                                                                        \
    report("few" #BLOCKS, true, T, U,                                                                         \
           median_event_ms([&](int) { read_stride<U, true><<<BLOCKS, T>>>(src, words, out); }, reps));         \
    const size_t w16 = (size_t(16) << 20) / 16;                                                               \
    const float ms16 = median_event_ms([&](int) { read_stride<U, true><<<BLOCKS, T>>>(src, w16, out); }, reps); \
    std::printf("%-10s 16 MiB: %.2f us, %.1f GB/s\n", "few" #BLOCKS, ms16 * 1e3, (16.0 * 1048576) / (ms16 * 1e6)); \
  } while (0)
  FEW(8, 32, 1024);
  FEW(8, 64, 1024);
  FEW(4, 64, 1024);
  FEW(16, 64, 512);
  FEW(8, 128, 1024);
  FEW(8, 132, 1024);
  FEW(8, 264, 512);
  CK(cudaDeviceSynchronize());
  return 0;
}
