// Batch-1 decode attention and the output projection in one kernel (sm_90): grid (kv_heads,
// CLUSTER, n * COPIES), clusters as attn_decode.cluster's. Each of a KV head's COPIES clusters
// computes the whole attention of its query group and multiplies it by its 1/COPIES of W_o's
// slice for the group (rows of the hidden dimension, the group's GROUP * HD columns), split once
// more among the cluster's blocks, adding the products into the residual stream with atomics
// (split-K over KV heads, as the output GEMV's split-K). Why: at W2's contexts the attention moves
// almost no bytes and is latency-bound (3.8-4.4 us per layer on the H200), and the output GEMV
// after it pays a kernel boundary and its own staging before it streams W_o. Here each block's
// W_o tile is copied into shared memory (cp.async; when: LATE below, by default once the query
// is in), so W_o streams while the attention runs; after the merge, the tile is multiplied from
// shared memory. The attention (a.out) is still written, as by the cluster kernel.
// Redundant attention in the COPIES clusters costs L2 reads of K/V, not DRAM bytes; only copy 0
// writes the step's k and v to the cache.
#pragma once
#include "attention/decode_cluster.cuh"
#include "common/vec.cuh"

// Bytes of dynamic shared memory before the W_o tile (the attention's split), 16-byte aligned; the
// host's attn_o_smem_bytes (backends/cuda/family.h) counts the same (the JIT text and the host
// share no header).
__host__ __device__ constexpr int attn_o_tile_offset(int split, int hd, int group) {
  return (2 * split * (hd + 8) * 2 + group * split * 4 + 15) / 16 * 16;
}

// LATE 0: the tile's copies are issued before the wait on the QKV projection (W_o streams during
// its tail, but the query's loads after the wait return behind the tile's bytes); LATE 1: after
// the query, the new key and the cached rows are in (W_o streams during the attention's passes);
// LATE 2: as 1, with the tile's rows asked into L2 before the wait (bulk prefetches: DRAM works
// during the QKV projection's tail, nothing returns to the SM ahead of the query).
template <int BLOCK, int SPLIT, int HD, int GROUP, int CLUSTER, int COPIES, int LATE, typename W>
__device__ void attn_o_cluster(const AttnOParams& po) {
  constexpr int GH = GROUP * HD;  // the group's attention outputs: W_o's columns for this KV head
  static_assert(GH % 64 == 0, "each of a row's 8 threads takes whole 16-byte chunks");
  constexpr int TPAD = GH + 8;  // 16 bytes of padding per tile row: 8 rows' chunks hit other banks
  constexpr int TPR = 8;        // threads per tile row
  constexpr int CH = GH / 8 / TPR;  // 16-byte chunks per thread and row
  static_assert(BLOCK % TPR == 0, "a thread keeps its columns for every row");
  const FusedAttnParams& p = po.a;
  extern __shared__ __align__(16) unsigned char attn_smem[];
  unsigned short(*tile)[TPAD] =
      reinterpret_cast<unsigned short(*)[TPAD]>(attn_smem + attn_o_tile_offset(SPLIT, HD, GROUP));
  __shared__ float m_s[GROUP], l_s[GROUP];
  __shared__ float part[GH];                 // this block's unnormalised P·V, read by the whole cluster
  __shared__ __align__(16) float og[GH];     // the merged attention outputs of the group

  const long long kvh = blockIdx.x, t = blockIdx.z / COPIES, copy = blockIdx.z % COPIES;
  const unsigned rank = cluster_rank();
  const long long R = po.hidden / (CLUSTER * COPIES);  // tile rows
  const long long row0 = (copy * CLUSTER + rank) * R;
  const W* wsrc = static_cast<const W*>(po.wo) + row0 * (p.heads * HD) + kvh * GH;
  // Independent of the QKV projection: one more cp.async group, after the cached K/V rows.
  const auto copy_tile = [&] {
    for (long long i = threadIdx.x; i < R * (GH / 8); i += BLOCK) {
      const long long r = i / (GH / 8), c = i % (GH / 8);
      cp_async16(&tile[r][8 * c], wsrc + r * (p.heads * HD) + 8 * c);
    }
    cp_async_commit();
  };
  const bool fits = attn_cluster_partials<BLOCK, SPLIT, HD, GROUP, CLUSTER, LATE ? 0 : 1, W>(
      p, t, copy == 0, m_s, l_s, part, [&] {
        if (LATE == 0) copy_tile();
        if (LATE == 2)
          for (long long r = threadIdx.x; r < R; r += BLOCK)
            asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(wsrc + r * (p.heads * HD)), "r"(GH * 2)
                         : "memory");
      }, [&] {
        if (LATE) copy_tile();
      });
  // Every block merges every output of the group (its share also to a.out): one round of remote
  // loads, no second barrier before the tile product.
  const unsigned share = GH / CLUSTER;
  for (int i = threadIdx.x; i < GH; i += BLOCK) {
    const float o = fits ? cluster_merged_output<HD, CLUSTER>(m_s, l_s, part, i) : __int_as_float(0x7fc00000);
    og[i] = o;
    if (copy == 0 && (unsigned)i / share == rank) p.out[(t * p.heads + kvh * GROUP) * HD + i] = o;
  }
  cp_async_wait_all();
  AC_TIMELINE_MARK(5);  // merged, tile landed
  // No block may leave (its shared memory) while another still reads from it; also makes og and
  // the tile visible to every thread of the block.
  cluster_sync_all();

  // The tile product: TPR threads per row, thread j of a row taking chunks j, j + TPR, ... (so a
  // warp's loads of one row are contiguous); its og values are the same for every row. Two rows
  // per thread at a time and four accumulators each: a block is a few warps per SM, so the
  // product is latency-bound unless each warp keeps independent work in flight.
  const int part_id = threadIdx.x % TPR;
  float a[CH * 8];
#pragma unroll
  for (int j = 0; j < CH; ++j) {
    const float4 x = *reinterpret_cast<const float4*>(&og[(j * TPR + part_id) * 8]);
    const float4 y = *reinterpret_cast<const float4*>(&og[(j * TPR + part_id) * 8 + 4]);
    a[8 * j + 0] = x.x, a[8 * j + 1] = x.y, a[8 * j + 2] = x.z, a[8 * j + 3] = x.w;
    a[8 * j + 4] = y.x, a[8 * j + 5] = y.y, a[8 * j + 6] = y.z, a[8 * j + 7] = y.w;
  }
  float* resid = po.resid + t * po.hidden + row0;
  const int rows = (int)R;
  for (int base = 0; base < rows * TPR; base += 2 * BLOCK) {  // uniform per warp: the shuffles need every lane
    const int r0 = (base + (int)threadIdx.x) / TPR, r1 = r0 + BLOCK / TPR;
    float s0[4] = {0.0f, 0.0f, 0.0f, 0.0f}, s1[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int j = 0; j < CH; ++j) {
      const int col = (j * TPR + part_id) * 8;
      const uint4 w0 = r0 < rows ? *reinterpret_cast<const uint4*>(&tile[r0][col]) : make_uint4(0, 0, 0, 0);
      const uint4 w1 = r1 < rows ? *reinterpret_cast<const uint4*>(&tile[r1][col]) : make_uint4(0, 0, 0, 0);
      float f0[8], f1[8];
      unpack8(u32x4{w0.x, w0.y, w0.z, w0.w}, W{}, f0);
      unpack8(u32x4{w1.x, w1.y, w1.z, w1.w}, W{}, f1);
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        s0[e % 4] = fmaf(f0[e], a[8 * j + e], s0[e % 4]);
        s1[e % 4] = fmaf(f1[e], a[8 * j + e], s1[e % 4]);
      }
    }
    float x0 = (s0[0] + s0[1]) + (s0[2] + s0[3]), x1 = (s1[0] + s1[1]) + (s1[2] + s1[3]);
#pragma unroll
    for (int off = TPR / 2; off > 0; off /= 2) {
      x0 += __shfl_xor_sync(0xffffffffu, x0, off);
      x1 += __shfl_xor_sync(0xffffffffu, x1, off);
    }
    if (part_id == 0) {
      if (r0 < rows) atomicAdd(resid + r0, x0);
      if (r1 < rows) atomicAdd(resid + r1, x1);
    }
  }
}
