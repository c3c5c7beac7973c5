// Embedding gather: one block per token.
#pragma once
#include "common/params.h"
#include "common/types.cuh"

template <int BLOCK, typename W>
__device__ void embed_ref(const EmbedParams& p) {
  const long long i = blockIdx.x;
  const long long id = p.tokens[i];
  // The host validates its ids; a decode step chained on the device reads the previous step's
  // argmax, -1 when its logits held NaN/Inf: poison the row instead of reading outside the table.
  if (id < 0 || id >= p.vocab) {
    for (long long j = threadIdx.x; j < p.hidden; j += BLOCK) p.out[i * p.hidden + j] = __int_as_float(0x7fc00000);
    return;
  }
  const W* row = static_cast<const W*>(p.table) + id * p.hidden;
  for (long long j = threadIdx.x; j < p.hidden; j += BLOCK) p.out[i * p.hidden + j] = to_f32(row[j]);
}
