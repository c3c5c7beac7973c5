// One kernel per decode attention: grid (kv_heads, max_splits, n), one block per (KV head, split
// of the positions, token). Decode attention is latency-bound (a few KiB of K/V per block), so
// the kernel is arranged to wait on as few dependent memory round trips as possible:
//   1. before waiting for the QKV projection (programmatic dependent launch), the block starts
//      copying its split's cached K/V rows (earlier steps wrote them) and its rope row into shared
//      memory with cp.async, asks L2 for the q/k norm weights, and lets the next kernel launch;
//   2. after the wait it normalises and rotates its query group (q_norm + rope); the block whose
//      split holds the token's own position also does the new key, writes k and v to the bf16
//      cache and puts them in its last shared row;
//   3. scores, softmax and P·V over the whole split at once (splits of at most 32 rows: one warp
//      per query head, attn_warp_pass);
//   4. one split: the result is written directly; otherwise the last block of a (token, KV head)
//      to finish merges the splits' partials (no separate combine kernel).
// Steps 1-3 are the helpers below, shared with attn_decode.cluster (decode_cluster.cuh), which
// merges within a thread block cluster instead of step 4.
#pragma once
#include "attention/partials.cuh"
#include "common/async_copy.cuh"
#include "common/params.h"
#include "common/pdl.cuh"
#include "common/reduce.cuh"
#include "common/types.cuh"

// What step 2 needs besides the QKV projection's output, staged in shared memory in step 1: this
// position's rope row (cos, sin).
template <int HD>
struct AttnRow {
  float cs[HD / 2], sn[HD / 2];
};

// One head's HD values as one warp holds them: lane l has the rotation pairs (j, j + HD / 2) for
// j = l + 32 i, i < PAIRS (lanes past HD / 2 hold zeros).
template <int HD>
struct HeadRegs {
  static constexpr int PAIRS = (HD / 2 + 31) / 32;
  float a[PAIRS], b[PAIRS];
};

// All of a head's loads at once (one dependent round trip to L2, not one per loop iteration): a
// head of the QKV projection's output (f32), or its norm weights (16-bit).
template <int HD, typename T>
__device__ __forceinline__ void load_head(const T* src, HeadRegs<HD>& h, int lane) {
#pragma unroll
  for (int i = 0; i < HeadRegs<HD>::PAIRS; ++i) {
    const int j = lane + 32 * i;
    h.a[i] = j < HD / 2 ? to_f32(src[j]) : 0.0f;
    h.b[i] = j < HD / 2 ? to_f32(src[j + HD / 2]) : 0.0f;
  }
}

// Per-head RMSNorm (when `norm`, by the weights nw as load_head holds them) and rope of a loaded
// head, in place, times `scale`; cs/sn hold cos and sin of this position.
template <int HD>
__device__ __forceinline__ void norm_rope_regs(HeadRegs<HD>& h, bool norm, const HeadRegs<HD>& nw, float eps,
                                               const float* cs, const float* sn, float scale, int lane) {
  constexpr int PAIRS = HeadRegs<HD>::PAIRS;
  float inv = 1.0f;
  if (norm) {
    float ss = 0.0f;
#pragma unroll
    for (int i = 0; i < PAIRS; ++i) ss += h.a[i] * h.a[i];
#pragma unroll
    for (int i = 0; i < PAIRS; ++i) ss += h.b[i] * h.b[i];
    ss = warp_sum(ss);
    inv = rsqrtf(ss / (float)HD + eps);  // no slow-path call: values live across it would spill
  }
#pragma unroll
  for (int i = 0; i < PAIRS; ++i) {
    const int j = lane + 32 * i;
    if (j >= HD / 2) break;
    const float a = norm ? nw.a[i] * (h.a[i] * inv) : h.a[i];
    const float b = norm ? nw.b[i] * (h.b[i] * inv) : h.b[i];
    h.a[i] = (a * cs[j] - b * sn[j]) * scale;
    h.b[i] = (b * cs[j] + a * sn[j]) * scale;
  }
}

// Step 1 (independent of the previous kernel): cp.async of the `cached` K/V rows from `begin`
// into the block's shared rows (committed, not waited for), this position's rope row, and the
// q/k norm weights asked into L2.
template <int BLOCK, int HD, int KPAD, typename W>
__device__ __forceinline__ void attn_prefetch_rows(unsigned short (*ks)[KPAD], unsigned short (*vs)[KPAD],
                                                   const unsigned short* kbase, const unsigned short* vbase,
                                                   long long begin, int cached, AttnRow<HD>& row,
                                                   const FusedAttnParams& p, long long pos) {
  constexpr int CHUNKS = HD / 8;
  for (int i = threadIdx.x; i < cached * CHUNKS; i += BLOCK) {
    const int r = i / CHUNKS, c = i % CHUNKS;
    cp_async16(&ks[r][8 * c], kbase + (begin + r) * HD + 8 * c);
    cp_async16(&vs[r][8 * c], vbase + (begin + r) * HD + 8 * c);
  }
  cp_async_commit();
  // The output projection's blocks may launch now and issue their first weight loads while this
  // latency-bound kernel runs (the grid is small: it is resident before they are). Measured on
  // the H200: W2 0.2-0.8% faster than signalling after P.V (bench/results/2026-11-30-early-launch/).
  pdl_launch_dependents();
  for (int j = threadIdx.x; j < HD / 2; j += BLOCK) {
    row.cs[j] = p.rope_cos[pos * (HD / 2) + j];
    row.sn[j] = p.rope_sin[pos * (HD / 2) + j];
  }
  // The q/k norm weights are loaded after the wait, with the head (registers): ask L2 for them now.
  // Staged in shared memory here instead, they made batch-8 decode 0.2-8% slower
  // (bench/results/2026-12-01-warp-pass/): this barrier then waited for DRAM.
  if (threadIdx.x < 2 * (HD * 2 + 127) / 128) {
    const int lines = (HD * 2 + 127) / 128, i = threadIdx.x;
    const char* w = static_cast<const char*>(i < lines ? p.q_norm : p.k_norm);
    if (w) asm volatile("prefetch.global.L2 [%0];" ::"l"(w + 128 * (i % lines)));
  }
  __syncthreads();
}

// The step's own key (normalised and rotated) and value, as a warp holds them, in bf16 into a
// shared-memory row each and, with `to_cache`, into their rows of the cache.
template <int HD>
__device__ __forceinline__ void store_new_kv(const HeadRegs<HD>& k, const HeadRegs<HD>& v, unsigned short* ks_row,
                                             unsigned short* vs_row, bool to_cache, unsigned short* k_cache_row,
                                             unsigned short* v_cache_row, int lane) {
#pragma unroll
  for (int i = 0; i < HeadRegs<HD>::PAIRS; ++i) {
    const int j = lane + 32 * i;
    if (j < HD / 2) {
      const unsigned short ka = from_f32<ac_bf16>(k.a[i]).bits, kb = from_f32<ac_bf16>(k.b[i]).bits;
      const unsigned short va = from_f32<ac_bf16>(v.a[i]).bits, vb = from_f32<ac_bf16>(v.b[i]).bits;
      ks_row[j] = ka;
      ks_row[j + HD / 2] = kb;
      vs_row[j] = va;
      vs_row[j + HD / 2] = vb;
      if (to_cache) {
        k_cache_row[j] = ka;
        k_cache_row[j + HD / 2] = kb;
        v_cache_row[j] = va;
        v_cache_row[j + HD / 2] = vb;
      }
    }
  }
}

// Step 2 (after the QKV projection): the query group normalised and rotated into qs; with
// `new_kv`, the token's own key and value too, written to shared row `rows - 1` and, with
// `write_kv`, to the bf16 cache. Ends with the cached rows in shared memory: every cp.async group
// committed by this thread but the last PENDING is complete.
template <int BLOCK, int HD, int GROUP, int KPAD, typename W, int PENDING = 0>
__device__ __forceinline__ void attn_query_and_new_kv(const FusedAttnParams& p, long long t, long long kvh, bool new_kv,
                                                      bool write_kv, int rows, float (*qs)[HD], unsigned short (*ks)[KPAD],
                                                      unsigned short (*vs)[KPAD], const AttnRow<HD>& row,
                                                      unsigned short* kbase, unsigned short* vbase, long long pos) {
  constexpr int WARPS = BLOCK / 32;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const long long q_dim = p.heads * HD, kv_dim = p.kv_heads * HD;
  const float* qkv = p.qkv + t * (q_dim + 2 * kv_dim);
  const long long h0 = kvh * GROUP;
  for (int g = warp; g < GROUP; g += WARPS) {
    HeadRegs<HD> q, qn;
    load_head<HD>(qkv + (h0 + g) * HD, q, lane);
    if (p.q_norm) load_head<HD>(static_cast<const W*>(p.q_norm), qn, lane);
    norm_rope_regs<HD>(q, p.q_norm != nullptr, qn, p.eps, row.cs, row.sn, p.scale, lane);
#pragma unroll
    for (int i = 0; i < HeadRegs<HD>::PAIRS; ++i) {
      const int j = lane + 32 * i;
      if (j < HD / 2) {
        qs[g][j] = q.a[i];
        qs[g][j + HD / 2] = q.b[i];
      }
    }
  }
  if (new_kv && warp == WARPS - 1) {
    HeadRegs<HD> k, v, kn;
    load_head<HD>(qkv + q_dim + kvh * HD, k, lane);
    load_head<HD>(qkv + q_dim + kv_dim + kvh * HD, v, lane);
    if (p.k_norm) load_head<HD>(static_cast<const W*>(p.k_norm), kn, lane);
    norm_rope_regs<HD>(k, p.k_norm != nullptr, kn, p.eps, row.cs, row.sn, 1.0f, lane);
    store_new_kv<HD>(k, v, ks[rows - 1], vs[rows - 1], write_kv, kbase + pos * HD, vbase + pos * HD, lane);
  }
  AC_TIMELINE_MARK(0);  // developer timeline: thread 0's query head done
  cp_async_wait_group<PENDING>();
  __syncthreads();
  AC_TIMELINE_MARK(1);  // the block's query, new row and cached rows ready
}

// Step 3: scores of (query head, row) pairs over the block's `rows` shared rows (at least one),
// softmax per head (its max and sum into m_s, l_s), then P·V: acc[o] is output
// threadIdx.x + o * BLOCK (query head i / HD, dim i % HD), not yet divided by the sum.
// ILP = 1: one accumulator per dot product and per P·V sum (the form measured first); ILP = 4:
// four independent accumulators, so that these latency-bound stages do not wait a shared-memory
// round trip per row. One score per thread: the lanes of a warp read the same query values
// (broadcasts) and neighbouring rows. Scores split over 8 lanes and summed with shuffles (a
// shorter chain, but no broadcasts) were slower: bench/results/2026-12-01-attn-stages/.
template <int BLOCK, int SPLIT, int HD, int GROUP, int ILP, int KPAD>
__device__ __forceinline__ void attn_split_pass(const float (*qs)[HD], const unsigned short (*ks)[KPAD],
                                                const unsigned short (*vs)[KPAD], float (*sc)[SPLIT], float* m_s,
                                                float* l_s, int rows, float (&acc)[GROUP * HD / BLOCK]) {
  constexpr int OUTS = GROUP * HD / BLOCK;
  constexpr int WARPS = BLOCK / 32;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int i = threadIdx.x; i < GROUP * SPLIT; i += BLOCK) {
    const int g = i / SPLIT, r = i % SPLIT;
    float s = AC_NEG_INF;
    if (r < rows) {
      if constexpr (ILP == 1) {
        s = 0.0f;
#pragma unroll 8
        for (int c = 0; c < HD; c += 8) {
          const uint4 kv = *reinterpret_cast<const uint4*>(&ks[r][c]);
          const unsigned w[4] = {kv.x, kv.y, kv.z, kv.w};
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            s = fmaf(qs[g][c + 2 * j], __uint_as_float(w[j] << 16), s);
            s = fmaf(qs[g][c + 2 * j + 1], __uint_as_float(w[j] & 0xffff0000u), s);
          }
        }
      } else {
        float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
#pragma unroll
        for (int c = 0; c < HD; c += 8) {
          const uint4 kv = *reinterpret_cast<const uint4*>(&ks[r][c]);
          s0 = fmaf(qs[g][c + 0], __uint_as_float(kv.x << 16), s0);
          s1 = fmaf(qs[g][c + 1], __uint_as_float(kv.x & 0xffff0000u), s1);
          s2 = fmaf(qs[g][c + 2], __uint_as_float(kv.y << 16), s2);
          s3 = fmaf(qs[g][c + 3], __uint_as_float(kv.y & 0xffff0000u), s3);
          s0 = fmaf(qs[g][c + 4], __uint_as_float(kv.z << 16), s0);
          s1 = fmaf(qs[g][c + 5], __uint_as_float(kv.z & 0xffff0000u), s1);
          s2 = fmaf(qs[g][c + 6], __uint_as_float(kv.w << 16), s2);
          s3 = fmaf(qs[g][c + 7], __uint_as_float(kv.w & 0xffff0000u), s3);
        }
        s = (s0 + s1) + (s2 + s3);
      }
    }
    sc[g][r] = s;
  }
  __syncthreads();
  AC_TIMELINE_MARK(2);  // scores
  for (int g = warp; g < GROUP; g += WARPS) {
    float mx = AC_NEG_INF;
    for (int r = lane; r < rows; r += 32) mx = fmaxf(mx, sc[g][r]);
    mx = warp_max(mx);
    float sum = 0.0f;
    for (int r = lane; r < rows; r += 32) {
      const float e = expf(sc[g][r] - mx);
      sc[g][r] = e;
      sum += e;
    }
    sum = warp_sum(sum);
    if (lane == 0) {
      m_s[g] = mx;
      l_s[g] = sum;
    }
  }
  __syncthreads();
  AC_TIMELINE_MARK(3);  // softmax
#pragma unroll
  for (int o = 0; o < OUTS; ++o) {
    const int i = threadIdx.x + o * BLOCK;
    const int g = i / HD, d = i % HD;
    if constexpr (ILP == 1) {
      float a = 0.0f;
      for (int r = 0; r < rows; ++r) a = fmaf(sc[g][r], to_f32(ac_bf16{vs[r][d]}), a);
      acc[o] = a;
    } else {
      float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
      int r = 0;
#pragma unroll 2
      for (; r + 4 <= rows; r += 4) {
        a0 = fmaf(sc[g][r], to_f32(ac_bf16{vs[r][d]}), a0);
        a1 = fmaf(sc[g][r + 1], to_f32(ac_bf16{vs[r + 1][d]}), a1);
        a2 = fmaf(sc[g][r + 2], to_f32(ac_bf16{vs[r + 2][d]}), a2);
        a3 = fmaf(sc[g][r + 3], to_f32(ac_bf16{vs[r + 3][d]}), a3);
      }
      for (; r < rows; ++r) a0 = fmaf(sc[g][r], to_f32(ac_bf16{vs[r][d]}), a0);
      acc[o] = (a0 + a1) + (a2 + a3);
    }
  }
}

// q . k over HD dimensions: q f32 (16-byte aligned), k a bf16 row (16-byte aligned), both in
// shared memory; four accumulators, so the row's loads and FMAs do not wait on one another.
template <int HD>
__device__ __forceinline__ float attn_score_row(const float* q, const unsigned short* k) {
  float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
#pragma unroll
  for (int c = 0; c < HD; c += 8) {
    const uint4 kv = *reinterpret_cast<const uint4*>(k + c);
    const float4 qa = *reinterpret_cast<const float4*>(q + c);
    const float4 qb = *reinterpret_cast<const float4*>(q + c + 4);
    s0 = fmaf(qa.x, __uint_as_float(kv.x << 16), s0);
    s1 = fmaf(qa.y, __uint_as_float(kv.x & 0xffff0000u), s1);
    s2 = fmaf(qa.z, __uint_as_float(kv.y << 16), s2);
    s3 = fmaf(qa.w, __uint_as_float(kv.y & 0xffff0000u), s3);
    s0 = fmaf(qb.x, __uint_as_float(kv.z << 16), s0);
    s1 = fmaf(qb.y, __uint_as_float(kv.z & 0xffff0000u), s1);
    s2 = fmaf(qb.z, __uint_as_float(kv.w << 16), s2);
    s3 = fmaf(qb.w, __uint_as_float(kv.w & 0xffff0000u), s3);
  }
  return (s0 + s1) + (s2 + s3);
}

// Step 3 for blocks of at most 32 rows, one warp per query head and no block barrier inside:
// lane r scores row r (four accumulators), the softmax is two warp reductions in registers, and
// P·V gives each lane HD / 32 neighbouring dimensions, the probabilities broadcast by shuffles.
// attn_split_pass spends a barrier and a shared-memory pass per stage on what one warp holds.
// Writes the unnormalised P·V of head g to out[g * HD + d] (out may be qs: each warp reads only
// its own head, and all its lanes have scored before any writes) and its max and sum to
// m_s[g], l_s[g]; rows == 0 gives max -inf, sum 0 and zeros. Callers synchronise after it.
template <int BLOCK, int HD, int GROUP, int KPAD>
__device__ __forceinline__ void attn_warp_pass(const float (*qs)[HD], const unsigned short (*ks)[KPAD],
                                               const unsigned short (*vs)[KPAD], float* m_s, float* l_s, int rows,
                                               float* out) {
  static_assert(HD % 64 == 0, "each lane's P.V dimensions are whole 32-bit words");
  constexpr int WARPS = BLOCK / 32, DPL = HD / 32;  // dimensions per lane
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int g = warp; g < GROUP; g += WARPS) {
    const float s = lane < rows ? attn_score_row<HD>(qs[g], ks[lane]) : AC_NEG_INF;
    const float mx = warp_max(s);
    const float e = lane < rows ? expf(s - mx) : 0.0f;
    const float l = warp_sum(e);
    AC_TIMELINE_MARK(2);  // warp 0's head: scores and softmax
    float acc[DPL];
#pragma unroll
    for (int j = 0; j < DPL; ++j) acc[j] = 0.0f;
#pragma unroll 4
    for (int r = 0; r < rows; ++r) {
      const float pr = __shfl_sync(0xffffffffu, e, r);
      unsigned v[DPL / 2];  // this lane's dimensions of row r in one shared-memory load
      if constexpr (DPL == 2) {
        v[0] = *reinterpret_cast<const unsigned*>(&vs[r][lane * DPL]);
      } else if constexpr (DPL == 4) {
        const uint2 t = *reinterpret_cast<const uint2*>(&vs[r][lane * DPL]);
        v[0] = t.x, v[1] = t.y;
      } else {
#pragma unroll
        for (int j = 0; j < DPL / 2; j += 4) {
          const uint4 t = *reinterpret_cast<const uint4*>(&vs[r][lane * DPL + 2 * j]);
          v[j] = t.x, v[j + 1] = t.y, v[j + 2] = t.z, v[j + 3] = t.w;
        }
      }
#pragma unroll
      for (int j = 0; j < DPL / 2; ++j) {
        const unsigned w = v[j];
        acc[2 * j] = fmaf(pr, __uint_as_float(w << 16), acc[2 * j]);
        acc[2 * j + 1] = fmaf(pr, __uint_as_float(w & 0xffff0000u), acc[2 * j + 1]);
      }
    }
    AC_TIMELINE_MARK(3);  // warp 0's head: P.V
    __syncwarp();  // every lane has read qs[g] before out (possibly qs[g]) is written
#pragma unroll
    for (int j = 0; j < DPL; ++j) out[g * HD + lane * DPL + j] = acc[j];
    if (lane == 0) {
      m_s[g] = mx;
      l_s[g] = l;
    }
  }
}

template <int BLOCK, int SPLIT, int HD, int GROUP, int ILP, typename W>
__device__ void attn_decode_fused(const FusedAttnParams& p) {
  static_assert(ILP == 1 || ILP == 4, "ILP is 1 or 4");
  static_assert((GROUP * HD) % BLOCK == 0, "outputs divide among the threads");
  static_assert(HD % 8 == 0, "16-byte rows");
  constexpr int KPAD = HD + 8;  // 16 bytes of padding per row: no bank conflicts
  constexpr int OUTS = GROUP * HD / BLOCK;
  constexpr int WARPS = BLOCK / 32;
  // Dynamic shared memory (attn_fused_smem_bytes on the host): K and V rows of the split, then
  // the scores; a long split goes past the 48 KiB static limit.
  extern __shared__ __align__(16) unsigned char attn_smem[];
  unsigned short(*ks)[KPAD] = reinterpret_cast<unsigned short(*)[KPAD]>(attn_smem);
  unsigned short(*vs)[KPAD] = ks + SPLIT;
  float(*sc)[SPLIT] = reinterpret_cast<float(*)[SPLIT]>(attn_smem + 2 * SPLIT * KPAD * 2);
  __shared__ __align__(16) float qs[GROUP][HD];  // read as float4 by attn_warp_pass
  __shared__ AttnRow<HD> row;
  __shared__ float m_s[GROUP], l_s[GROUP];
  __shared__ bool last;

  const long long kvh = blockIdx.x, split = blockIdx.y, t = blockIdx.z;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  // Positions and slots are written by the host before the step: safe to read before the wait.
  const long long pos = p.positions[t];
  const long long len = pos + 1;
  const long long splits = (len + SPLIT - 1) / SPLIT;
  if (split >= splits) return;
  const long long begin = split * SPLIT, end = begin + SPLIT < len ? begin + SPLIT : len;
  const int rows = (int)(end - begin);
  const int cached = (int)((end < pos ? end : pos) - begin);  // rows written by earlier steps
  const long long slot = p.slots[t];
  unsigned short* kbase = p.k_cache + (slot * p.kv_heads + kvh) * p.max_seq * HD;
  unsigned short* vbase = p.v_cache + (slot * p.kv_heads + kvh) * p.max_seq * HD;
  const long long h0 = kvh * GROUP;

  attn_prefetch_rows<BLOCK, HD, KPAD, W>(ks, vs, kbase, vbase, begin, cached, row, p, pos);
  pdl_wait();
  attn_query_and_new_kv<BLOCK, HD, GROUP, KPAD, W>(p, t, kvh, split == splits - 1, true, rows, qs, ks, vs, row, kbase, vbase, pos);
  float acc[OUTS];
  if constexpr (SPLIT <= 32 && HD % 64 == 0) {  // ILP makes no difference here
    attn_warp_pass<BLOCK, HD, GROUP, KPAD>(qs, ks, vs, m_s, l_s, rows, &qs[0][0]);
    __syncthreads();
#pragma unroll
    for (int o = 0; o < OUTS; ++o) acc[o] = (&qs[0][0])[threadIdx.x + o * BLOCK];
  } else {
    attn_split_pass<BLOCK, SPLIT, HD, GROUP, ILP, KPAD>(qs, ks, vs, sc, m_s, l_s, rows, acc);
  }

  // 4. Output, or partials and the merge by the last block of this (token, KV head).
  if (splits == 1) {
#pragma unroll
    for (int o = 0; o < OUTS; ++o) {
      const int i = threadIdx.x + o * BLOCK;
      const int g = i / HD, d = i % HD;
      p.out[(t * p.heads + h0 + g) * HD + d] = acc[o] / l_s[g];
    }
    return;
  }
  attn_store_partial<BLOCK, HD, GROUP>(p, t, h0, split, acc, m_s, l_s);
  const long long ms = p.max_splits;
  __threadfence();
  __syncthreads();
  unsigned* counter = p.counters + t * p.kv_heads + kvh;
  if (threadIdx.x == 0) last = atomicAdd(counter, 1u) == (unsigned)(splits - 1);
  __syncthreads();
  if (!last) return;
  __threadfence();
  // The merge is latency-bound: one warp per query head fetches every split's (max, sum) with
  // independent L2 loads (other blocks wrote them; L1 is not coherent) and reduces them; the
  // weights are kept in shared memory (the scores are no longer needed) when they fit, and each
  // output then sums its partials with many loads in flight.
  for (int g = warp; g < GROUP; g += WARPS) {
    const float* ml = p.part_ml + (t * p.heads + h0 + g) * ms * 2;
    float m = AC_NEG_INF;
    for (long long s = lane; s < splits; s += 32) m = fmaxf(m, __ldcg(ml + 2 * s));
    m = warp_max(m);
    float l = 0.0f;
    for (long long s = lane; s < splits; s += 32) {
      const float w = expf(__ldcg(ml + 2 * s) - m);
      if (s < SPLIT) sc[g][s] = w;
      l = fmaf(w, __ldcg(ml + 2 * s + 1), l);
    }
    l = warp_sum(l);
    if (lane == 0) {
      m_s[g] = m;
      l_s[g] = l;
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < GROUP * HD; i += BLOCK) {
    const int g = i / HD, d = i % HD;
    const float* ml = p.part_ml + (t * p.heads + h0 + g) * ms * 2;
    const float* po = p.part_o + (t * p.heads + h0 + g) * ms * HD + d;
    float o = 0.0f;
    if constexpr (ILP == 1) {
#pragma unroll 8
      for (long long s = 0; s < splits; ++s) {
        const float w = s < SPLIT ? sc[g][s] : expf(__ldcg(ml + 2 * s) - m_s[g]);
        o = fmaf(w, __ldcg(po + s * HD), o);
      }
    } else {  // 16 independent L2 loads in flight: 64 splits at 2048 positions cost 4 round trips
#pragma unroll 16
      for (long long s = 0; s < splits; ++s) {
        const float w = s < SPLIT ? sc[g][s] : expf(__ldcg(ml + 2 * s) - m_s[g]);
        o = fmaf(w, __ldcg(po + s * HD), o);
      }
    }
    p.out[(t * p.heads + h0 + g) * HD + d] = o / l_s[g];
  }
  if (threadIdx.x == 0) *counter = 0u;
}
