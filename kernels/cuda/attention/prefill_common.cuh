// What the prompt-attention kernels (attn_prefill.pipe, attn_prefill.qs) share: the exponential,
// which (query tile, head) a block owns, the positions its rows span, and the copy of one K/V
// tile into a shared-memory stage.
#pragma once
#include "common/async_copy.cuh"
#include "common/params.h"

// 2^x as one MUFU instruction (ex2.approx.ftz): exp2f's ex2.approx (no ftz) adds a range check and
// two multiplies to keep subnormal results (below 2^-126, nothing a probability rounded to bf16
// for P V can carry into the sums).
__device__ __forceinline__ float pipe_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// Causal rows late in a sequence attend the most positions: the executor's order (in_order 0)
// hands the blocks that start first (blocks start in linear block order, x fastest) the last tile
// of every head, then the one before it, so the short tiles fill the last wave. Reversing the
// tiles within each head only (the heads in turn) measured the same as row order on an H100
// (bench/results/2026-12-06-prefill-gemm-search/): a 2048-token prompt's 512 blocks are two waves
// of which the first held eight whole heads, and Nsight Compute saw the SMs busy for 73% of the
// kernel's cycles. in_order 1: tile blockIdx.x of head blockIdx.y. Either way each (tile, head) is
// one block's and gives the same bits. At PAIR 1 a block's x indexes a pair of tiles (the host's
// pair_prefill_tiles: a costly tile with a cheap one) and it runs entry j of the two.
struct PrefillBlock {
  int row0, rows, h;  // the tile's first row and its row count (one sequence; 0: none), its head
  long long kv_row0;  // the first cache row of its (slot, KV head): k_cache + kv_row0 * head_dim
};
template <int PAIR>
__device__ __forceinline__ PrefillBlock prefill_block(const PrefillAttnParams& p, int j) {
  const int bid = blockIdx.y * gridDim.x + blockIdx.x;
  const int tile = (p.in_order ? blockIdx.x : gridDim.x - 1 - bid / gridDim.y) * (PAIR + 1) + j;
  PrefillBlock b;
  b.h = p.in_order ? blockIdx.y : bid % gridDim.y;
  b.row0 = p.tiles[2 * tile];
  b.rows = p.tiles[2 * tile + 1];
  b.kv_row0 = ((long long)p.slots[b.row0] * p.kv_heads + b.h / (p.heads / p.kv_heads)) * p.max_seq;
  return b;
}

// Runs tile(block) for each tile of the block's: one (PAIR 0: the same code as a body without the
// loop), or both of its pair in turn (the tile body ends at a barrier after its last shared-memory
// read, so the next may refill the buffers). A compile-time PAIR: a runtime loop cost the default
// point 6 registers at head dim 128, one block per SM fewer.
template <int PAIR, typename F>
__device__ __forceinline__ void prefill_for_each_tile(const PrefillAttnParams& p, F tile) {
#pragma unroll 1
  for (int j = 0; j <= PAIR; ++j) {
    const PrefillBlock b = prefill_block<PAIR>(p, j);
    if (PAIR == 0 || b.rows > 0) tile(b);
  }
}

// The largest and smallest position among the tile's rows, by thread 0 (the block synchronises
// before reading them).
__device__ __forceinline__ void prefill_span(const PrefillAttnParams& p, const PrefillBlock& b, int* last, int* first) {
  if (threadIdx.x != 0) return;
  int m = -1, f = 0x7fffffff;
  for (int i = 0; i < b.rows; ++i) m = max(m, p.positions[b.row0 + i]), f = min(f, p.positions[b.row0 + i]);
  *last = m;
  *first = f;
}

// K/V positions [k0, k0 + BK) of one KV head (kbase, vbase: its rows) into stage `buf` of the
// double-buffered tiles ks, vs ([2][BK][HD + 8]), zeros past `end` (P is 0 there, and 0 x whatever
// stale bytes hold could be NaN); one cp.async group. (The stage's offset is added per copy, not
// to the pointer before the loop: that cost attn_prefill.pipe 5 registers at head dim 128.)
template <int BLOCK, int BK, int HD>
__device__ __forceinline__ void prefill_stage_kv(unsigned short* ks, unsigned short* vs, int buf, const unsigned short* kbase,
                                                 const unsigned short* vbase, int k0, int end) {
  constexpr int KPAD = HD + 8, CHUNKS = HD / 8, TILE = BK * KPAD;
  for (int i = threadIdx.x; i < BK * CHUNKS; i += BLOCK) {
    const int r = i / CHUNKS, c = i % CHUNKS;
    const bool valid = k0 + r < end;
    const long long off = valid ? (long long)(k0 + r) * HD + 8 * c : 0;
    cp_async16_zfill(ks + buf * TILE + r * KPAD + 8 * c, kbase + off, valid);
    cp_async16_zfill(vs + buf * TILE + r * KPAD + 8 * c, vbase + off, valid);
  }
  cp_async_commit();
}
