// Embedding gather: one block per token.
#pragma once
#include "common/params.h"
#include "common/pdl.cuh"
#include "common/types.cuh"
#include "common/vec.cuh"

template <int BLOCK, typename W>
__device__ void embed_ref(const EmbedParams& p) {
  // At the head of a decode step the next kernel (the first projection) may be scheduled now and
  // stream its weights while this one gathers; it waits for this grid before reading the row.
  pdl_launch_dependents();
  pdl_wait();  // without CUDA graphs the previous step's argmax may still be writing the id
  const long long i = blockIdx.x;
  const long long id = p.tokens[i];
  float* out = p.out + i * p.hidden;
  // The host validates its ids; a decode step chained on the device reads the previous step's
  // argmax, -1 when its logits held NaN/Inf: poison the row instead of reading outside the table.
  if (id < 0 || id >= p.vocab) {
    for (long long j = threadIdx.x; j < p.hidden; j += BLOCK) out[j] = __int_as_float(0x7fc00000);
    return;
  }
  const W* row = static_cast<const W*>(p.table) + id * p.hidden;
  if constexpr (sizeof(W) == 2) {
    // 16-byte loads, all of a thread's chunks issued before its first store: the one-value loop
    // waited a round trip per BLOCK values (3.9 us for Qwen3-1.7B's 2048 at the head of every
    // decode step, bench/results/2026-12-02-carveout-first/timeline/).
    constexpr int PER = 4;
    const long long chunks = p.hidden / 8;
    const bool vec = p.hidden % 8 == 0 && reinterpret_cast<unsigned long long>(row) % 16 == 0 &&
                     reinterpret_cast<unsigned long long>(out) % 16 == 0;
    if (vec) {
      for (long long c0 = 0; c0 < chunks; c0 += PER * BLOCK) {
        u32x4 v[PER] = {};
#pragma unroll
        for (int u = 0; u < PER; ++u)
          if (const long long c = c0 + u * BLOCK + threadIdx.x; c < chunks) v[u] = load_stream16(row + c * 8);
#pragma unroll
        for (int u = 0; u < PER; ++u)
          if (const long long c = c0 + u * BLOCK + threadIdx.x; c < chunks) {
            float f[8];
            unpack8(v[u], W{}, f);
            float4* o = reinterpret_cast<float4*>(out + c * 8);
            o[0] = make_float4(f[0], f[1], f[2], f[3]);
            o[1] = make_float4(f[4], f[5], f[6], f[7]);
          }
      }
      return;
    }
  }
  for (long long j = threadIdx.x; j < p.hidden; j += BLOCK) out[j] = to_f32(row[j]);
}
