// The read ceiling: how fast the GPU streams bytes it only reads, with the load the GEMVs stream
// their weights with (load_stream16), one contiguous tile per block as a GEMV's grid reads them.
// A decode step's weights are only read, and on the H200 reads stream 1.05-1.09x the device copy
// bandwidth (read + write counted) that issue 9's floor uses, by lease (tools/read_ceiling.cu:
// one 16-128 KiB tile per block, four 16-byte loads in flight per thread; bench/results/
// 2026-12-01-read-ceiling/ and 2026-12-01-read-ceiling-in-bench/), so `bench` measures both.
#pragma once
#include "common/params.h"
#include "common/vec.cuh"

template <int BLOCK>
__device__ void read_probe(const ReadProbeParams& p) {
  constexpr int UNROLL = 4;
  const char* base = static_cast<const char*>(p.src) + (long long)blockIdx.x * p.words_per_block * 16;
  unsigned acc = 0;
  for (long long i = threadIdx.x; i < p.words_per_block; i += UNROLL * BLOCK) {
    u32x4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
      v[u] = i + u * BLOCK < p.words_per_block ? load_stream16(base + (i + u * BLOCK) * 16) : u32x4{0u, 0u, 0u, 0u};
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) acc += v[u].a + v[u].b + v[u].c + v[u].d;
  }
  __shared__ unsigned part[BLOCK / 32];
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned t = 0;
    for (int w = 0; w < BLOCK / 32; ++w) t += part[w];
    p.out[blockIdx.x] = t;
  }
}
