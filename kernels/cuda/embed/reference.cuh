// Embedding gather: one block per token.
#pragma once
#include "common/params.h"
#include "common/types.cuh"

template <int BLOCK, typename W>
__device__ void embed_ref(const EmbedParams& p) {
  const long long i = blockIdx.x;
  const W* row = static_cast<const W*>(p.table) + (long long)p.tokens[i] * p.hidden;
  for (long long j = threadIdx.x; j < p.hidden; j += BLOCK) p.out[i * p.hidden + j] = to_f32(row[j]);
}
