// What a dependent kernel boundary costs on the GPU, apart from the kernels' own work: a chain of
// N memory-streaming kernels (each reads a value the previous one wrote, then streams B bytes of
// its own "weights") captured in a CUDA graph, with three ways of ordering them:
//   plain: stream order (a kernel starts when the previous one has finished);
//   pdl:   programmatic dependent launch; the kernel issues its first loads, then griddepcontrol.wait;
//   flag:  launched like pdl, but instead of griddepcontrol.wait its blocks spin on a counter the
//          previous kernel's blocks increment after their writes (release/acquire at gpu scope).
// Per-kernel time = graph time / N, against B / copy bandwidth. A developer's measuring tool, not
// part of the engine (bench/results/2026-11-30-decode-ahead/ has what it measured on the H200):
//   nvcc -O3 -arch=sm_90 -o build-sync/sync_bench tools/probes/sync_bench.cu   (here; carry build-sync/)
//   build-sync/sync_bench 80                                            (on the GPU machine)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cuda_tool.h"

enum Mode { kPlain = 0, kPdl = 1, kFlag = 2 };

__device__ __forceinline__ unsigned ld_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// One block streams `per_block` 16-byte chunks starting at w + blockIdx.x * per_block.
__global__ void __launch_bounds__(256) chain_kernel(const uint4* __restrict__ w, long long per_block,
                                                    const float* in, float* out, unsigned* counters, int idx,
                                                    unsigned wait_for, int mode) {
  const uint4* wb = w + (long long)blockIdx.x * per_block;
  // Loads that do not depend on the previous kernel (like a GEMV's first weight chunk).
  uint4 first = make_uint4(0, 0, 0, 0);
  if (threadIdx.x < per_block) first = __ldcs(wb + threadIdx.x);
  if (mode != kPlain) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  if (mode == kPdl) asm volatile("griddepcontrol.wait;" ::: "memory");
  if (mode == kFlag && idx > 0) {
    if (threadIdx.x == 0)
      while (ld_acquire(counters + idx - 1) < wait_for) {
      }
    __syncthreads();
  }
  float acc = __ldcg(in + (blockIdx.x % 64)) + __uint_as_float(first.x & 0x3f800000u);
  for (long long i = threadIdx.x + 256; i < per_block; i += 256) {
    const uint4 v = __ldcs(wb + i);
    acc += __uint_as_float((v.x ^ v.y ^ v.z ^ v.w) & 0x3f800000u);
  }
  for (int o = 16; o; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  __shared__ float part[8];
  if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    float s = 0;
    for (int i = 0; i < 8; ++i) s += part[i];
    __stcg(out + (blockIdx.x % 64), s * 1e-30f);
    if (mode == kFlag) {
      __threadfence();
      atomicAdd(counters + idx, 1u);
    }
  }
}

int main(int argc, char** argv) {
  const int chain = argc > 1 ? std::atoi(argv[1]) : 80;
  int dev = 0, sms = 0;
  CK(cudaSetDevice(dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  const size_t pool_bytes = size_t(3) << 30;
  uint4* pool;
  CK(cudaMalloc(&pool, pool_bytes));
  // Random-looking bytes, never zeros (zeros can stream faster than real data).
  std::vector<unsigned> host(size_t(1) << 24);
  unsigned x = 12345;
  for (auto& v : host) v = (x = x * 1664525u + 1013904223u);
  for (size_t off = 0; off < pool_bytes; off += host.size() * 4)
    CK(cudaMemcpy(reinterpret_cast<char*>(pool) + off, host.data(), std::min(host.size() * 4, pool_bytes - off),
                  cudaMemcpyHostToDevice));
  float* bufs;
  CK(cudaMalloc(&bufs, sizeof(float) * 64 * (chain + 1)));
  CK(cudaMemset(bufs, 0, sizeof(float) * 64 * (chain + 1)));
  unsigned* counters;
  CK(cudaMalloc(&counters, sizeof(unsigned) * chain));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));

  // Copy bandwidth (read + write) over 1 GiB, for the floor.
  float copy_ms = 1e30f;
  for (int r = 0; r < 5; ++r) {
    CK(cudaEventRecord(e0, s));
    CK(cudaMemcpyAsync(reinterpret_cast<char*>(pool) + (size_t(1) << 30), pool, size_t(1) << 30, cudaMemcpyDeviceToDevice, s));
    CK(cudaEventRecord(e1, s));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    copy_ms = std::min(copy_ms, ms);
  }
  const double copy_gbs = 2.0 * double(size_t(1) << 30) / (copy_ms * 1e6);
  std::printf("sms %d, copy bandwidth %.0f GB/s (read + write, best of 5), chain of %d kernels\n", sms, copy_gbs, chain);
  std::printf("%-6s %10s %7s %10s %10s %8s\n", "mode", "bytes", "blocks", "us/kernel", "floor us", "over us");

  const long long sizes[] = {0, 2 << 20, 8 << 20, 32 << 20};
  const int bps_list[] = {1, 4};
  for (long long bytes : sizes)
    for (int bps : bps_list)
      for (int mode : {kPlain, kPdl, kFlag}) {
        const int blocks = sms * bps;
        const long long per_block = std::max<long long>(256, bytes / 16 / blocks);
        const long long span = per_block * blocks;  // chunks per kernel
        if (span * 16LL * chain > (long long)pool_bytes) continue;
        cudaGraph_t g;
        CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
        CK(cudaMemsetAsync(counters, 0, sizeof(unsigned) * chain, s));
        for (int i = 0; i < chain; ++i) {
          cudaLaunchConfig_t cfg = {};
          cfg.gridDim = dim3(blocks);
          cfg.blockDim = dim3(256);
          cfg.stream = s;
          cudaLaunchAttribute attr[1];
          attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
          attr[0].val.programmaticStreamSerializationAllowed = 1;
          cfg.attrs = attr;
          cfg.numAttrs = (mode != kPlain && i > 0) ? 1 : 0;
          CK(cudaLaunchKernelEx(&cfg, chain_kernel, (const uint4*)(pool + (long long)i * span), per_block,
                                (const float*)(bufs + 64 * i), bufs + 64 * (i + 1), counters, i, unsigned(blocks), mode));
        }
        CK(cudaStreamEndCapture(s, &g));
        cudaGraphExec_t ge;
        CK(cudaGraphInstantiate(&ge, g, 0));
        std::vector<float> t;
        for (int r = 0; r < 23; ++r) {
          CK(cudaEventRecord(e0, s));
          CK(cudaGraphLaunch(ge, s));
          CK(cudaEventRecord(e1, s));
          CK(cudaEventSynchronize(e1));
          float ms;
          CK(cudaEventElapsedTime(&ms, e0, e1));
          if (r >= 3) t.push_back(ms);
        }
        CK(cudaGetLastError());
        std::sort(t.begin(), t.end());
        const double per = 1e3 * t[t.size() / 2] / chain;
        const double floor_us = double(span * 16) / (copy_gbs * 1e3);
        std::printf("%-6s %10lld %7d %10.2f %10.2f %8.2f\n", mode == kPlain ? "plain" : mode == kPdl ? "pdl" : "flag",
                    span * 16, blocks, per, floor_us, per - floor_us);
        CK(cudaGraphExecDestroy(ge));
        CK(cudaGraphDestroy(g));
      }
  return 0;
}
