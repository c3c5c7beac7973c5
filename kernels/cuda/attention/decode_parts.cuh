// Batch-1 decode attention that hands its partials to the output projection (attn_decode.parts):
// attn_decode.cluster's blocks without the cluster. Each of the PARTS blocks of a (KV head,
// token) runs steps 1-3 on its equal share of the positions and writes its unnormalised P·V and
// its maximum and sum per query head to global memory; gemv.merged (gemv/gemv.cuh, PARTS > 0)
// merges them while it stages x', which it reads from L2 anyway. That takes the cluster's two
// barriers and its DSMEM merge off the end of the attention, which is fully on a layer's critical
// path (bench/results/2026-12-02-delay-sensitivity/; the timing proxy of
// bench/results/2026-12-02-merge-proxy/: -1.5% per Qwen3-1.7B W2 token with O's 8x staging bytes).
// Layout: part_o [n, kv_heads, PARTS, GROUP * HD], part_ml [n, kv_heads, PARTS, GROUP] (max, sum);
// a context of more rows than PARTS * SPLIT gets NaN maxima, so its merged outputs are NaN, as
// attn_decode.cluster's.
#pragma once
#include "attention/decode_cluster.cuh"

template <int BLOCK, int SPLIT, int HD, int GROUP, int PARTS, typename W>
__device__ void attn_decode_parts(const FusedAttnParams& p) {
  static_assert((GROUP * HD) % 4 == 0, "whole float4 of partials");
  __shared__ float m_s[GROUP], l_s[GROUP];
  __shared__ __align__(16) float part[GROUP * HD];
  const long long t = blockIdx.z;
  const bool fits = attn_cluster_partials<BLOCK, SPLIT, HD, GROUP, PARTS, 0, W>(p, t, true, m_s, l_s, part, [] {}, [] {},
                                                                                 false);
  const long long unit = (t * p.kv_heads + blockIdx.x) * PARTS + blockIdx.y;
  float4* dst = reinterpret_cast<float4*>(p.part_o + unit * (GROUP * HD));
  for (int i = threadIdx.x; i < GROUP * HD / 4; i += BLOCK) dst[i] = reinterpret_cast<const float4*>(part)[i];
  if (threadIdx.x < GROUP)
    reinterpret_cast<float2*>(p.part_ml)[unit * GROUP + threadIdx.x] =
        make_float2(fits ? m_s[threadIdx.x] : __int_as_float(0x7fc00000), l_s[threadIdx.x]);
  AC_TIMELINE_MARK(5);  // partials written
}
