// Batch-1 decode attention merged within a thread block cluster (sm_90): grid
// (kv_heads, CLUSTER, n), the CLUSTER blocks of a (KV head, token) one cluster. Each block takes
// an equal share of the token's positions (ceil(len / CLUSTER) rows, at most SPLIT) and runs
// attn_decode.fused's steps 1-3 on it; the partials then stay in each block's shared memory and
// the blocks merge them over the cluster's distributed shared memory, each finishing
// GROUP * HD / CLUSTER of the outputs. That replaces the fused kernel's merge — partials written
// to global memory, a fence, an atomic counter, and the last block reading every split back from
// L2 — which is a third of the attention's time on the critical path of a layer at W2's
// contexts (bench/results/2026-11-30-ablation/). The executor runs one variant per range of
// contexts (decode_attention_range: short SPLITs to attn_long_from, longer ones to 2048 positions
// and beyond); contexts of more rows than CLUSTER * SPLIT are the fused kernel's, and a launch
// past that writes NaN.
#pragma once
#include "attention/decode_fused.cuh"

__device__ __forceinline__ unsigned cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}

// Every thread of every block of the cluster: what each wrote to its shared memory before is
// visible to the others after. The barrier's .aligned form requires converged warps; a warp still
// split by a branch (likely rows == 0's `threadIdx.x < GROUP`) is undefined there, and on the H200
// a GROUP 5 point's block left while the other still read its shared memory ("cluster target
// block not present"), so the warp reconverges first.
__device__ __forceinline__ void cluster_sync_all() {
  __syncwarp();
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// The float at `local` (a shared-memory address of this block) in block `rank` of the cluster.
__device__ __forceinline__ float cluster_load(const float* local, unsigned rank) {
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(local));
  unsigned remote;
  float v;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(a), "r"(rank));
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(remote) : "memory");
  return v;
}

// Steps 1-3 of attn_decode.fused on this block's share of token t's positions, through the
// cluster barrier after P.V: the block's max and sum per query head in m_s, l_s and its
// unnormalised P.V in part (GROUP * HD), readable by the whole cluster. `early()` runs between the
// cached rows' copies and the wait for the QKV projection, `ready()` once the query and the rows
// are in shared memory (attn_o.cluster issues its weight tile at one of them); PENDING is how many
// cp.async groups committed after the rows' may still be in flight when the rows are used.
// Without `clustered` (a constant: attn_decode.parts) the blocks are no cluster: blockIdx.y is
// the block's share and the closing barrier is the block's own. Returns whether the CLUSTER
// blocks hold the whole context (fits).
template <int BLOCK, int SPLIT, int HD, int GROUP, int CLUSTER, int PENDING, typename W, typename Early, typename Ready>
__device__ __forceinline__ bool attn_cluster_partials(const FusedAttnParams& p, long long t, bool write_kv, float* m_s,
                                                      float* l_s, float* part, Early early, Ready ready,
                                                      bool clustered = true) {
  static_assert((GROUP * HD) % BLOCK == 0, "outputs divide among the threads");
  static_assert(HD % 8 == 0, "16-byte rows");
  constexpr int KPAD = HD + 8;
  constexpr int OUTS = GROUP * HD / BLOCK;
  extern __shared__ __align__(16) unsigned char attn_smem[];  // as attn_decode.fused
  unsigned short(*ks)[KPAD] = reinterpret_cast<unsigned short(*)[KPAD]>(attn_smem);
  unsigned short(*vs)[KPAD] = ks + SPLIT;
  float(*sc)[SPLIT] = reinterpret_cast<float(*)[SPLIT]>(attn_smem + 2 * SPLIT * KPAD * 2);
  __shared__ __align__(16) float qs[GROUP][HD];  // read as float4 by attn_warp_pass
  __shared__ AttnRow<HD> row;

  const long long kvh = blockIdx.x;
  const unsigned rank = clustered ? cluster_rank() : blockIdx.y;
  const long long pos = p.positions[t];
  const long long len = pos + 1;
  const long long per = (len + CLUSTER - 1) / CLUSTER;
  const bool fits = per <= SPLIT;
  // This block's rows [begin, end) (none for the last blocks of a short sequence, or past SPLIT).
  const long long begin = rank * per;
  const long long end = !fits || begin >= len ? begin : (begin + per < len ? begin + per : len);
  const int rows = (int)(end - begin);
  const long long written = end < pos ? end : pos;  // rows before it were written by earlier steps
  const int cached = (int)(written > begin ? written - begin : 0);
  const long long slot = p.slots[t];
  unsigned short* kbase = p.k_cache + (slot * p.kv_heads + kvh) * p.max_seq * HD;
  unsigned short* vbase = p.v_cache + (slot * p.kv_heads + kvh) * p.max_seq * HD;

  attn_prefetch_rows<BLOCK, HD, KPAD, W>(ks, vs, kbase, vbase, begin, cached, row, p, pos);
  early();
  pdl_wait();
  attn_query_and_new_kv<BLOCK, HD, GROUP, KPAD, W, PENDING>(p, t, kvh, rows > 0 && end == len, write_kv, rows, qs, ks,
                                                            vs, row, kbase, vbase, pos);
  ready();
  // Block-uniform. At most 32 rows (W2's contexts on 8-block clusters): one warp per query head;
  // W2 decode 1.0-1.1% faster than attn_split_pass there (bench/results/2026-12-01-warp-pass/).
  if (HD % 64 == 0 && rows <= 32) {
    if constexpr (HD % 64 == 0) attn_warp_pass<BLOCK, HD, GROUP, KPAD>(qs, ks, vs, m_s, l_s, rows, part);
  } else {
    float acc[OUTS];
    if (rows > 0) {
      // Blocks of more than 256 rows (the long range's longest splits) use four accumulators per
      // dot product and P·V sum (attn_split_pass's ILP 4): as measured with them.
      attn_split_pass<BLOCK, SPLIT, HD, GROUP, (SPLIT > 256 ? 4 : 1), KPAD>(qs, ks, vs, sc, m_s, l_s, rows, acc);
    } else {
#pragma unroll
      for (int o = 0; o < OUTS; ++o) acc[o] = 0.0f;
      if (threadIdx.x < GROUP) {
        m_s[threadIdx.x] = AC_NEG_INF;
        l_s[threadIdx.x] = 0.0f;
      }
    }
#pragma unroll
    for (int o = 0; o < OUTS; ++o) part[threadIdx.x + o * BLOCK] = acc[o];
  }
  if (clustered) cluster_sync_all();
  else __syncthreads();
  AC_TIMELINE_MARK(4);  // P.V of every block of the cluster (of this block: attn_decode.parts)
  return fits;
}

// Output i (query head i / HD, dimension i % HD) of the KV head: the softmax of the cluster's
// blocks' maxima and sums, then their partials weighted by it. Every remote load is independent
// of the others: all in flight at once.
template <int HD, int CLUSTER>
__device__ __forceinline__ float cluster_merged_output(const float* m_s, const float* l_s, const float* part, int i) {
  const int g = i / HD;
  float m[CLUSTER], l[CLUSTER], o[CLUSTER];
#pragma unroll
  for (int r = 0; r < CLUSTER; ++r) {
    m[r] = cluster_load(&m_s[g], (unsigned)r);
    l[r] = cluster_load(&l_s[g], (unsigned)r);
    o[r] = cluster_load(&part[i], (unsigned)r);
  }
  float mx = AC_NEG_INF;
#pragma unroll
  for (int r = 0; r < CLUSTER; ++r) mx = fmaxf(mx, m[r]);
  float sum = 0.0f, out = 0.0f;
#pragma unroll
  for (int r = 0; r < CLUSTER; ++r) {
    const float w = m[r] == AC_NEG_INF ? 0.0f : expf(m[r] - mx);  // empty blocks weigh nothing
    sum = fmaf(w, l[r], sum);
    out = fmaf(w, o[r], out);
  }
  return out / sum;
}

template <int BLOCK, int SPLIT, int HD, int GROUP, int CLUSTER, typename W>
__device__ void attn_decode_cluster(const FusedAttnParams& p) {
  static_assert((GROUP * HD) % CLUSTER == 0, "outputs divide among the cluster's blocks");
  constexpr int PER_BLOCK = GROUP * HD / CLUSTER;  // outputs each block finishes
  __shared__ float m_s[GROUP], l_s[GROUP];
  __shared__ float part[GROUP * HD];  // this block's unnormalised P·V, read by the whole cluster
  const long long t = blockIdx.z, h0 = blockIdx.x * GROUP;
  const unsigned rank = cluster_rank();
  const bool fits =
      attn_cluster_partials<BLOCK, SPLIT, HD, GROUP, CLUSTER, 0, W>(p, t, true, m_s, l_s, part, [] {}, [] {});
  // Block `rank` finishes outputs [rank * PER_BLOCK, (rank + 1) * PER_BLOCK).
  for (int i = (int)rank * PER_BLOCK + (int)threadIdx.x; i < ((int)rank + 1) * PER_BLOCK; i += BLOCK)
    p.out[(t * p.heads + h0 + i / HD) * HD + i % HD] =
        fits ? cluster_merged_output<HD, CLUSTER>(m_s, l_s, part, i) : __int_as_float(0x7fc00000);
  AC_TIMELINE_MARK(5);  // merged
  // No block may leave (its shared memory) while another still reads from it.
  cluster_sync_all();
}
