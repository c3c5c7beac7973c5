// A split's unnormalised partial attention, where the merge reads it (attn_combine in
// decode.cuh, the last block of attn_decode.fused): for query head h of token t, its HD outputs
// at part_o[((t * heads + h) * max_splits + split) * HD + d] and its running max and sum at
// part_ml[((t * heads + h) * max_splits + split) * 2 + {0, 1}].
#pragma once

// The GROUP query heads from h0, as the split kernels hold them: output i = threadIdx.x + o * BLOCK
// (head i / HD, dim i % HD) in acc[o]; max m[g] and sum l[g] in shared memory. P: the kernel's
// params (part_o, part_ml, heads, max_splits).
template <int BLOCK, int HD, int GROUP, typename P>
__device__ __forceinline__ void attn_store_partial(const P& p, long long t, long long h0, long long split,
                                                   const float (&acc)[GROUP * HD / BLOCK], const float* m, const float* l) {
  const long long ms = p.max_splits;
#pragma unroll
  for (int o = 0; o < GROUP * HD / BLOCK; ++o) {
    const int i = threadIdx.x + o * BLOCK;
    const int g = i / HD, d = i % HD;
    p.part_o[((t * p.heads + h0 + g) * ms + split) * HD + d] = acc[o];
  }
  if (threadIdx.x < GROUP) {
    const long long j = ((t * p.heads + h0 + threadIdx.x) * ms + split) * 2;
    p.part_ml[j] = m[threadIdx.x];
    p.part_ml[j + 1] = l[threadIdx.x];
  }
}
