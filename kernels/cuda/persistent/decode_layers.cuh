// Every decoder layer of a batch-1 decode step in one persistent kernel (decode_layers.persistent).
//
// Why: in the kernel-per-projection chain each boundary drains the DRAM (the next kernel can only
// load what fits in its first registers before it waits), and the attention leaves it idle; that
// is most of what keeps W2 under 80% of the copy bandwidth (bench/results/2026-11-30-timeline/).
// Here one block per SM stays resident for the whole step. Its last warp is a producer: one lane
// walks the block's weight tiles of every layer in order and copies each into a ring of STAGES
// shared-memory stages with bulk (TMA) copies, waiting only for a free stage — never for the
// activations, which weights do not depend on. The other warps consume: for each op they wait
// on a counter until the op they depend on is complete on every block, stage its input vector,
// then take tiles from the ring in order. So the DRAM keeps streaming across what were kernel
// boundaries, for as long as the ring holds. On the H200 the consumers are the limit instead (the
// producer idles ~80% of a step: tile work plus five dependency waits per layer), so it beats the
// chain only where layers are large (bench/results/2026-12-01-persistent/); the compile measures
// it per model.
//
// Work of one layer, in order (the step's tasks are numbered op after op, layer after layer, and
// task j belongs to block j mod gridDim.x, so each op spreads over all blocks):
//   QKV   tiles of RQKV rows of [q|k|v] = W_qkv RMSNorm(h)           (after DOWN of the layer before)
//   ATTN  kv_heads x SPLITS tasks: q/k RMSNorm + rope, k/v into the cache, flash-decoding over
//         the task's share of the positions in chunks of 32 rows; the last split of a KV head to
//         finish merges the partials                                   (after QKV)
//   O     tiles of RO rows of h += W_o attn                            (after every ATTN merge)
//   GU    tiles of RGU gate and RGU up rows of act = silu(W_g x') * (W_u x'), x' = RMSNorm(h)  (after O)
//   DOWN  tiles of RDOWN rows of h += W_down act                       (after GU)
// Counters ([L][5] tasks done, then per-KV-head split counters, then blocks done) start at zero;
// the last block to finish resets them, so the next launch (stream order) finds them zero.
// Every block must be resident at once (one per SM: the host launches at most the SM count and
// the shared memory keeps it to one per SM), or a waiting block could hold an SM another needs.
// Activations written by other blocks are read through L2 (__ldcg): L1 is not coherent.
//
// Dynamic shared memory: the ring (STAGES x p.stage_bytes), x' (the largest input, floats), the
// op's norm weights (H 16-bit values).
// Parameters: BLOCK threads (BLOCK / 32 - 1 consumer warps and the producer warp), STAGES ring
// stages of p.stage_bytes, SPLITS attention splits per KV head, HD head dim, GROUP query heads per
// KV head, RQKV / RO / RGU / RDOWN rows per tile (the host picks them so a tile fills a stage).
#pragma once
#include "attention/decode_fused.cuh"
#include "common/async_copy.cuh"
#include "common/mbarrier.cuh"
#include "common/params.h"
#include "common/pdl.cuh"
#include "common/reduce.cuh"
#include "common/types.cuh"
#include "common/vec.cuh"

#define PL_QKV 0
#define PL_ATTN 1
#define PL_O 2
#define PL_GU 3
#define PL_DOWN 4
#define PL_OPS 5
#define PL_ATT_ROWS 32

// Developer timeline (AC_TIMELINE): where a block's time goes, summed over the step in SM clocks
// and recorded as marks relative to the block's start (mark = start + total, so the CSV's mark
// minus start is the total): 0 consumers waiting on counters, 1 on the ring, 2 staging inputs,
// 3 in attention tasks, 4 the producer waiting for free stages, 5 the consumers' tile work.
#ifdef AC_TIMELINE
struct PlClock {
  long long t[6] = {0, 0, 0, 0, 0, 0};
};
#define PL_T0() const long long pl_t0_ = clock64()
#define PL_ADD(c, k) c.t[k] += clock64() - pl_t0_
#else
struct PlClock {};
#define PL_T0() \
  do {          \
  } while (0)
#define PL_ADD(c, k) \
  do {               \
  } while (0)
#endif

// Tasks per op of one layer and where each op's numbering starts within the layer.
struct PlShape {
  long long n[PL_OPS], pre[PL_OPS], per_layer;
};

template <int SPLITS, int RQKV, int RO, int RGU, int RDOWN>
__device__ __forceinline__ PlShape pl_shape(const PersistentParams& p, long long hd) {
  PlShape s;
  const long long qkvd = (p.heads + 2 * p.kv_heads) * hd;
  s.n[PL_QKV] = (qkvd + RQKV - 1) / RQKV;
  s.n[PL_ATTN] = p.kv_heads * SPLITS;
  s.n[PL_O] = (p.H + RO - 1) / RO;
  s.n[PL_GU] = (p.I + RGU - 1) / RGU;
  s.n[PL_DOWN] = (p.H + RDOWN - 1) / RDOWN;
  long long acc = 0;
  for (int o = 0; o < PL_OPS; ++o) {
    s.pre[o] = acc;
    acc += s.n[o];
  }
  s.per_layer = acc;
  return s;
}

// This block's first task of an op whose tasks are numbered from `base` in the step.
__device__ __forceinline__ long long pl_first(long long base) {
  const long long G = gridDim.x;
  return ((long long)blockIdx.x - base % G + G) % G;
}

// The consumers (threads [0, T)) wait until counter c reaches target (c null: nothing to wait for).
template <int T>
__device__ __forceinline__ void pl_wait(const unsigned* c, unsigned target, PlClock& ck) {
  PL_T0();
  if (c && threadIdx.x == 0)
    while (ld_acquire_u32(c) < target) {
    }
  bar_sync_first(T);
  PL_ADD(ck, 0);
}

// After the consumers' global writes: counter c += n, ordered after all of them. One thread
// releases after the barrier (release is cumulative: it covers what the barrier ordered before
// it, as a grid-wide barrier does); a fence in every thread was one of the costs removed between
// runs 2 and 3 of bench/results/2026-12-01-persistent/ (-9% on Qwen3-1.7B together).
// Thread 32 signals (thread 0 polls the next op's counter meanwhile: the release waits for this
// block's writes to land, so the two round trips overlap).
template <int T>
__device__ __forceinline__ void pl_signal(unsigned* c, unsigned n) {
  bar_sync_first(T);
  if (threadIdx.x == (T > 32 ? 32 : 0)) red_release_add(c, n);
}

// Producer: the block's tiles of one op into the ring, in task order (w1: GU's up rows, placed R
// rows after the gate rows). Only waits for a stage the consumers have released.
template <int R, int MATS, int STAGES, typename W>
__device__ __forceinline__ void pl_produce(const W* w0, const W* w1, long long N, long long K, long long base, long long n,
                                           unsigned char* ring, long long sb, unsigned long long* full,
                                           unsigned long long* empty, int& stage, unsigned& phase, PlClock& ck) {
  for (long long i = pl_first(base); i < n; i += gridDim.x) {
    {
      PL_T0();
      mbar_wait(&empty[stage], phase ^ 1u);
      PL_ADD(ck, 4);
    }
    const long long row0 = i * R;
    const long long nr = N - row0 < R ? N - row0 : R;
    const unsigned bytes = (unsigned)(nr * K * (long long)sizeof(W));
    mbar_arrive_expect_tx(&full[stage], MATS * bytes);
    unsigned char* dst = ring + stage * sb;
    bulk_load(dst, w0 + row0 * K, bytes, &full[stage]);
    if (MATS == 2) bulk_load(dst + R * K * (long long)sizeof(W), w1 + row0 * K, bytes, &full[stage]);
    if (++stage == STAGES) {
      stage = 0;
      phase ^= 1u;
    }
  }
}

__host__ __device__ constexpr int pl_pow2(int n) { return n <= 1 ? 1 : 2 * pl_pow2((n + 1) / 2); }

// Sums each of a lane's P values (P a power of two <= 32) over the warp, scattered: after halving
// the values log2(P) times between lane pairs, lane l holds row pl_scatter_row<P>(l)'s sum when
// l % (32 / P) == 0. P - 1 + log2(32 / P) shuffles instead of 5 P.
template <int P>
__device__ __forceinline__ float pl_warp_scatter_sum(float (&a)[P], int lane) {
#pragma unroll
  for (int half = P / 2, o = 16; half >= 1; half /= 2, o /= 2) {
    const bool upper = (lane & o) != 0;
#pragma unroll
    for (int i = 0; i < half; ++i) {
      const float keep = upper ? a[half + i] : a[i];
      const float send = upper ? a[i] : a[half + i];
      a[i] = keep + __shfl_xor_sync(0xffffffffu, send, o);
    }
  }
  float v = a[0];
#pragma unroll
  for (int o = 16 / P; o >= 1; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
template <int P>
__device__ __forceinline__ int pl_scatter_row(int lane) {
  int r = 0;
#pragma unroll
  for (int half = P / 2, o = 16; half >= 1; half /= 2, o /= 2)
    if (lane & o) r += half;
  return r;
}

// Consumers: the dot products of one staged tile (ROWS rows of K) with x' (xs), each warp's sums
// per row into red[warp * ROWS + r]. Thread t takes 16-byte chunks t, t + T, ... of every row:
// a warp reads 512 contiguous bytes per row per step (no bank conflicts) and each x' chunk once.
template <int CW, int ROWS, typename W>
__device__ __forceinline__ void pl_tile_dot(const unsigned char* stage, const float* xs, long long K, float* red) {
  constexpr int P = pl_pow2(ROWS);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const long long kc = K / 8;
  float acc[P];
#pragma unroll
  for (int r = 0; r < P; ++r) acc[r] = 0.0f;
  const uint4* ws = reinterpret_cast<const uint4*>(stage);
  const float4* x4 = reinterpret_cast<const float4*>(xs);
  for (long long c = threadIdx.x; c < kc; c += CW * 32) {
    const float4 lo = x4[2 * c], hi = x4[2 * c + 1];
    const float xv[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
      const uint4 w = ws[r * kc + c];
      float f[8];
      unpack8(u32x4{w.x, w.y, w.z, w.w}, W{}, f);
#pragma unroll
      for (int i = 0; i < 8; ++i) acc[r] = fmaf(f[i], xv[i], acc[r]);
    }
  }
  const float v = pl_warp_scatter_sum<P>(acc, lane);
  const int r = pl_scatter_row<P>(lane);
  if (lane % (32 / P) == 0 && r < ROWS) red[warp * ROWS + r] = v;
}

// Consumers: the block's tiles of one GEMV op. Waits for `dep`, stages x' = gamma * x (1/rms
// applied to the outputs), then per tile: wait for its stage, dot products, release the stage,
// one barrier, and threads [0, R) finish a row each through the epilogue (OP: PL_QKV store,
// PL_O / PL_DOWN add into the residual stream, PL_GU SwiGLU). Signals `done` with its tile count.
template <int CW, int R, int MATS, int OP, int STAGES, typename W>
__device__ __forceinline__ void pl_consume(const PersistentParams& p, const unsigned* dep, unsigned target, unsigned* done,
                                           const float* x, const W* gamma, long long K, long long N, float* out,
                                           long long base, long long n, const unsigned char* ring,
                                           unsigned long long* full, unsigned long long* empty, int& stage,
                                           unsigned& phase, float* xs, unsigned short* gs, float* red, float* scratch,
                                           PlClock& ck) {
  constexpr int T = CW * 32;
  constexpr int ROWS = R * MATS;
  const long long i0 = pl_first(base);
  if (i0 >= n) return;
  // The norm weights do not depend on the wait: each thread copies the 16-byte chunks it will
  // scale by into gs (so no barrier is needed for them), while the counter is still pending.
  const long long kc = K / 8;
  if (gamma) {
    for (long long j = threadIdx.x; j < kc; j += T) cp_async16(gs + 8 * j, gamma + 8 * j);
    cp_async_commit();
  }
  pl_wait<T>(dep, target, ck);
  PL_T0();
  if (gamma) cp_async_wait_all();
  float ss = 0.0f;
  const float4* x4 = reinterpret_cast<const float4*>(x);
  float4* xs4 = reinterpret_cast<float4*>(xs);
#pragma unroll 4
  for (long long j = threadIdx.x; j < kc; j += T) {  // 8 values per step, the loads of 4 steps in flight
    float4 a = __ldcg(x4 + 2 * j), b = __ldcg(x4 + 2 * j + 1);
    ss += a.x * a.x + a.y * a.y + a.z * a.z + a.w * a.w + b.x * b.x + b.y * b.y + b.z * b.z + b.w * b.w;
    if (gamma) {
      const uint4 g = *reinterpret_cast<const uint4*>(gs + 8 * j);
      float f[8];
      unpack8(u32x4{g.x, g.y, g.z, g.w}, W{}, f);
      a = make_float4(a.x * f[0], a.y * f[1], a.z * f[2], a.w * f[3]);
      b = make_float4(b.x * f[4], b.y * f[5], b.z * f[6], b.w * f[7]);
    }
    xs4[2 * j] = a;
    xs4[2 * j + 1] = b;
  }
  ss = warp_sum(ss);
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = ss;
  bar_sync_first(T);  // xs and the partial sums of squares are ready
  PL_ADD(ck, 2);
  float inv = 1.0f;
  if (gamma) {
    float t = 0.0f;
#pragma unroll
    for (int w = 0; w < CW; ++w) t += scratch[w];
    inv = 1.0f / sqrtf(t / (float)K + p.eps);
  }
  int buf = 0;
  unsigned count = 0;
  for (long long i = i0; i < n; i += gridDim.x) {
    {
      PL_T0();
      mbar_wait(&full[stage], phase);
      PL_ADD(ck, 1);
    }
    PL_T0();
    float* rb = red + buf * (CW * ROWS);
    pl_tile_dot<CW, ROWS, W>(ring + stage * p.stage_bytes, xs, K, rb);
    __syncwarp();
    if (threadIdx.x % 32 == 0) mbar_arrive(&empty[stage]);
    if (++stage == STAGES) {
      stage = 0;
      phase ^= 1u;
    }
    bar_sync_first(T);  // every warp's sums are in rb (the other buffer is the next tile's)
    const long long row = i * R + threadIdx.x;
    if (threadIdx.x < R && row < N) {
      float v = 0.0f, u = 0.0f;
#pragma unroll
      for (int w = 0; w < CW; ++w) {
        v += rb[w * ROWS + threadIdx.x];
        if (MATS == 2) u += rb[w * ROWS + R + threadIdx.x];
      }
      v *= inv;
      u *= inv;
      if (OP == PL_QKV) out[row] = v;
      // One tile owns each row, so the add needs no atomicity; as a reduction it is fire and
      // forget, where reading h first put an L2 round trip on every tile's critical path.
      if (OP == PL_O || OP == PL_DOWN) atomicAdd(out + row, v);
      if (OP == PL_GU) out[row] = v / (1.0f + expf(-v)) * u;
    }
    buf ^= 1;
    ++count;
    PL_ADD(ck, 5);
  }
  pl_signal<T>(done, count);
}

// A head of the QKV output (f32, written by other blocks: through L2) as load_head holds it.
template <int HD>
__device__ __forceinline__ void pl_load_head(const float* src, HeadRegs<HD>& h, int lane) {
#pragma unroll
  for (int i = 0; i < HeadRegs<HD>::PAIRS; ++i) {
    const int j = lane + 32 * i;
    h.a[i] = j < HD / 2 ? __ldcg(src + j) : 0.0f;
    h.b[i] = j < HD / 2 ? __ldcg(src + j + HD / 2) : 0.0f;
  }
}

template <int HD, int GROUP>
struct PlAttnSmem {
  unsigned short ks[PL_ATT_ROWS][HD + 8], vs[PL_ATT_ROWS][HD + 8];  // a chunk's cached rows (16 bytes of padding)
  float qs[GROUP][HD];
  unsigned short knew[HD], vnew[HD];  // the step's own key and value (position pos)
  int last;
};

// Consumers: the block's attention tasks of one layer (see the header).
template <int CW, int SPLITS, int HD, int GROUP, typename W>
__device__ __forceinline__ void pl_attention(const PersistentParams& p, const PersistentLayer& ly, const unsigned* dep,
                                             unsigned target, unsigned* done, unsigned* split_ctr, long long base,
                                             long long n, PlAttnSmem<HD, GROUP>& s, PlClock& ck) {
  constexpr int T = CW * 32, DPL = HD / 32, CH = HD / 8;
  static_assert(HD == 32 || HD == 64 || HD == 128, "each lane holds HD / 32 of P.V's dimensions (1, 2 or 4)");
  static_assert(GROUP <= CW, "one consumer warp per query head");
  const long long i0 = pl_first(base);
  if (i0 >= n) return;
#ifdef AC_TIMELINE
  const long long att0 = clock64(), wait0 = ck.t[0];
#endif
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const long long pos = p.positions[0], len = pos + 1, slot = p.slots[0];
  const long long per = (len + SPLITS - 1) / SPLITS;
  const long long q_dim = p.heads * HD, kv_dim = p.kv_heads * HD;
  const float* cs = p.rope_cos + pos * (HD / 2);
  const float* sn = p.rope_sin + pos * (HD / 2);
  bool waited = false;
  for (long long i = i0; i < n; i += gridDim.x) {
    const long long kvh = i / SPLITS, sp = i % SPLITS;
    const long long begin = sp * per;
    const long long end = begin + per < len ? begin + per : len;
    const bool holds_new = end > begin && end == len;
    const unsigned short* kbase = ly.k_cache + (slot * p.kv_heads + kvh) * p.max_seq * HD;
    const unsigned short* vbase = ly.v_cache + (slot * p.kv_heads + kvh) * p.max_seq * HD;
    // The cached rows (earlier steps wrote them) of the chunk from cb, into shared memory.
    auto issue = [&](long long cb) {
      const long long ce_ = cb + PL_ATT_ROWS < end ? cb + PL_ATT_ROWS : end;
      const long long ce = ce_ < pos ? ce_ : pos;
      const int rows = ce > cb ? (int)(ce - cb) : 0;
      for (int j = threadIdx.x; j < rows * CH; j += T) {
        const int r = j / CH, c = j % CH;
        cp_async16(&s.ks[r][8 * c], kbase + (cb + r) * HD + 8 * c);
        cp_async16(&s.vs[r][8 * c], vbase + (cb + r) * HD + 8 * c);
      }
      cp_async_commit();
    };
    if (end > begin) issue(begin);  // before the wait: independent of this step's QKV
    if (!waited) {
      pl_wait<T>(dep, target, ck);
      waited = true;
    }
    const long long h0 = kvh * GROUP;
    if (warp < GROUP) {
      HeadRegs<HD> q, qn;
      pl_load_head<HD>(p.qkv + (h0 + warp) * HD, q, lane);
      if (ly.q_norm) load_head<HD>(static_cast<const W*>(ly.q_norm), qn, lane);
      norm_rope_regs<HD>(q, ly.q_norm != nullptr, qn, p.eps, cs, sn, p.scale, lane);
#pragma unroll
      for (int k = 0; k < HeadRegs<HD>::PAIRS; ++k) {
        const int j = lane + 32 * k;
        if (j < HD / 2) {
          s.qs[warp][j] = q.a[k];
          s.qs[warp][j + HD / 2] = q.b[k];
        }
      }
    }
    if (holds_new && warp == CW - 1) {
      HeadRegs<HD> k, v, kn;
      pl_load_head<HD>(p.qkv + q_dim + kvh * HD, k, lane);
      pl_load_head<HD>(p.qkv + q_dim + kv_dim + kvh * HD, v, lane);
      if (ly.k_norm) load_head<HD>(static_cast<const W*>(ly.k_norm), kn, lane);
      norm_rope_regs<HD>(k, ly.k_norm != nullptr, kn, p.eps, cs, sn, 1.0f, lane);
      store_new_kv<HD>(k, v, s.knew, s.vnew, true, ly.k_cache + (slot * p.kv_heads + kvh) * p.max_seq * HD + pos * HD,
                       ly.v_cache + (slot * p.kv_heads + kvh) * p.max_seq * HD + pos * HD, lane);
    }
    // Flash-decoding over the task's rows in chunks (one lane per row), online softmax per warp.
    float m = AC_NEG_INF, l = 0.0f, acc[DPL];
#pragma unroll
    for (int j = 0; j < DPL; ++j) acc[j] = 0.0f;
    for (long long cb = begin; cb < end; cb += PL_ATT_ROWS) {
      if (cb != begin) {
        bar_sync_first(T);  // every warp is done with the previous chunk's rows
        issue(cb);
      }
      cp_async_wait_all();
      bar_sync_first(T);  // the chunk's rows, the query heads and the new row are in shared memory
      const int nr = (int)(end - cb < PL_ATT_ROWS ? end - cb : PL_ATT_ROWS);
      if (warp < GROUP) {
        const float sc = lane < nr ? attn_score_row<HD>(s.qs[warp], cb + lane == pos ? s.knew : s.ks[lane]) : AC_NEG_INF;
        const float mn = fmaxf(m, warp_max(sc));
        const float corr = m == AC_NEG_INF ? 0.0f : expf(m - mn);
        const float e = lane < nr ? expf(sc - mn) : 0.0f;
        l = l * corr + warp_sum(e);
#pragma unroll
        for (int j = 0; j < DPL; ++j) acc[j] *= corr;
        for (int r = 0; r < nr; ++r) {
          const float pr = __shfl_sync(0xffffffffu, e, r);
          const unsigned short* vr = (cb + r == pos ? s.vnew : s.vs[r]) + lane * DPL;
          if constexpr (DPL == 1) {
            acc[0] = fmaf(pr, __uint_as_float((unsigned)vr[0] << 16), acc[0]);
          } else {
            unsigned vw[DPL / 2];
            if constexpr (DPL == 2) {
              vw[0] = *reinterpret_cast<const unsigned*>(vr);
            } else {
              const uint2 t2 = *reinterpret_cast<const uint2*>(vr);
              vw[0] = t2.x;
              vw[1] = t2.y;
            }
#pragma unroll
            for (int j = 0; j < DPL / 2; ++j) {
              acc[2 * j] = fmaf(pr, __uint_as_float(vw[j] << 16), acc[2 * j]);
              acc[2 * j + 1] = fmaf(pr, __uint_as_float(vw[j] & 0xffff0000u), acc[2 * j + 1]);
            }
          }
        }
        m = mn;
      }
    }
    if (SPLITS == 1) {
      if (warp < GROUP)
#pragma unroll
        for (int j = 0; j < DPL; ++j) p.attn[(h0 + warp) * HD + lane * DPL + j] = acc[j] / l;
      pl_signal<T>(done, 1u);
      continue;
    }
    if (warp < GROUP) {  // this split's partial (an empty split: max -inf, sum 0)
      const long long hq = h0 + warp;
#pragma unroll
      for (int j = 0; j < DPL; ++j) p.part_o[(hq * SPLITS + sp) * HD + lane * DPL + j] = acc[j];
      if (lane == 0) {
        p.part_ml[(hq * SPLITS + sp) * 2] = m;
        p.part_ml[(hq * SPLITS + sp) * 2 + 1] = l;
      }
    }
    bar_sync_first(T);
    if (threadIdx.x == 0) s.last = atom_acq_rel_add(split_ctr + kvh, 1u) == (unsigned)(SPLITS - 1);
    bar_sync_first(T);
    if (!s.last) continue;
    if (warp < GROUP) {  // the last split of this KV head merges every split of its query heads
      const long long hq = h0 + warp;
      const float ms = lane < SPLITS ? __ldcg(p.part_ml + (hq * SPLITS + lane) * 2) : AC_NEG_INF;
      const float ls = lane < SPLITS ? __ldcg(p.part_ml + (hq * SPLITS + lane) * 2 + 1) : 0.0f;
      const float mx = warp_max(ms);
      const float w = ms == AC_NEG_INF ? 0.0f : expf(ms - mx);
      const float total = warp_sum(w * ls);
      float o[DPL];
#pragma unroll
      for (int j = 0; j < DPL; ++j) o[j] = 0.0f;
#pragma unroll
      for (int s2 = 0; s2 < SPLITS; ++s2) {
        const float ws = __shfl_sync(0xffffffffu, w, s2);
#pragma unroll
        for (int j = 0; j < DPL; ++j) o[j] = fmaf(ws, __ldcg(p.part_o + (hq * SPLITS + s2) * HD + lane * DPL + j), o[j]);
      }
#pragma unroll
      for (int j = 0; j < DPL; ++j) p.attn[hq * HD + lane * DPL + j] = o[j] / total;
    }
    if (threadIdx.x == 0) split_ctr[kvh] = 0u;  // every split of this head has arrived
    pl_signal<T>(done, 1u);
  }
#ifdef AC_TIMELINE
  ck.t[3] += clock64() - att0 - (ck.t[0] - wait0);
#endif
}

__host__ __device__ constexpr int pl_max4(int a, int b, int c, int d) {
  return (a > b ? a : b) > (c > d ? c : d) ? (a > b ? a : b) : (c > d ? c : d);
}

template <int BLOCK, int STAGES, int SPLITS, int HD, int GROUP, int RQKV, int RO, int RGU, int RDOWN, typename W>
__device__ void decode_layers_persistent(const PersistentParams& p) {
  constexpr int CW = BLOCK / 32 - 1;  // consumer warps; the last warp is the producer
  constexpr int T = CW * 32;
  constexpr int RED = pl_max4(RQKV, RO, 2 * RGU, RDOWN);
  static_assert(SPLITS <= 32, "the merge holds one split per lane");
  extern __shared__ __align__(128) unsigned char pl_smem[];
  __shared__ __align__(8) unsigned long long full[STAGES], empty[STAGES];
  __shared__ __align__(16) PlAttnSmem<HD, GROUP> att;
  __shared__ float red[2 * CW * RED];
  __shared__ float scratch[CW];
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], CW);
    }
    mbar_init_fence();
  }
  __syncthreads();
  const PlShape sh = pl_shape<SPLITS, RQKV, RO, RGU, RDOWN>(p, HD);
  const long long qkvd = (p.heads + 2 * p.kv_heads) * HD, q_dim = p.heads * HD;
  unsigned char* ring = pl_smem;
  float* xs = reinterpret_cast<float*>(pl_smem + STAGES * p.stage_bytes);
  const long long xmax = p.H > q_dim ? (p.H > p.I ? p.H : p.I) : (q_dim > p.I ? q_dim : p.I);
  unsigned short* gs = reinterpret_cast<unsigned short*>(xs + xmax);  // [H] the norm weights of an op
  int stage = 0;
  unsigned phase = 0;
  PlClock ck;
#ifdef AC_TIMELINE
  const unsigned long long start_ns = ac_timeline_now();
  // Sums in SM clocks as nanoseconds at the H200's 1980 MHz (marks are a developer's estimate).
  auto record = [&](int k) { ac_timeline_mark[k] = start_ns + (unsigned long long)(ck.t[k] * 1000 / 1980); };
#endif

  if (threadIdx.x >= T) {  // the producer warp: one lane issues every copy
    if (threadIdx.x != T) return;
    for (long long L = 0; L < p.L; ++L) {
      const PersistentLayer& ly = p.layers[L];
      const long long b = L * sh.per_layer;
      pl_produce<RQKV, 1, STAGES, W>(static_cast<const W*>(ly.wqkv), nullptr, qkvd, p.H, b + sh.pre[PL_QKV],
                                     sh.n[PL_QKV], ring, p.stage_bytes, full, empty, stage, phase, ck);
      pl_produce<RO, 1, STAGES, W>(static_cast<const W*>(ly.wo), nullptr, p.H, q_dim, b + sh.pre[PL_O], sh.n[PL_O], ring,
                                   p.stage_bytes, full, empty, stage, phase, ck);
      pl_produce<RGU, 2, STAGES, W>(static_cast<const W*>(ly.wgate), static_cast<const W*>(ly.wup), p.I, p.H,
                                    b + sh.pre[PL_GU], sh.n[PL_GU], ring, p.stage_bytes, full, empty, stage, phase, ck);
      pl_produce<RDOWN, 1, STAGES, W>(static_cast<const W*>(ly.wdown), nullptr, p.H, p.I, b + sh.pre[PL_DOWN],
                                      sh.n[PL_DOWN], ring, p.stage_bytes, full, empty, stage, phase, ck);
    }
#ifdef AC_TIMELINE
    record(4);
#endif
    return;
  }

  pdl_wait();  // the embedding wrote h
  unsigned* ctr = p.counters;
  unsigned* split_ctr = p.counters + p.L * PL_OPS;
  unsigned* blocks_done = split_ctr + p.kv_heads;
  for (long long L = 0; L < p.L; ++L) {
    const PersistentLayer& ly = p.layers[L];
    const long long b = L * sh.per_layer;
    unsigned* c = ctr + L * PL_OPS;
    pl_consume<CW, RQKV, 1, PL_QKV, STAGES, W>(p, L > 0 ? c - PL_OPS + PL_DOWN : nullptr, (unsigned)sh.n[PL_DOWN],
                                               c + PL_QKV, p.h, static_cast<const W*>(ly.attn_norm), p.H, qkvd, p.qkv,
                                               b + sh.pre[PL_QKV], sh.n[PL_QKV], ring, full, empty, stage, phase, xs, gs, red,
                                               scratch, ck);
    pl_attention<CW, SPLITS, HD, GROUP, W>(p, ly, c + PL_QKV, (unsigned)sh.n[PL_QKV], c + PL_ATTN, split_ctr,
                                           b + sh.pre[PL_ATTN], sh.n[PL_ATTN], att, ck);
    pl_consume<CW, RO, 1, PL_O, STAGES, W>(p, c + PL_ATTN, (unsigned)p.kv_heads, c + PL_O, p.attn, nullptr, q_dim, p.H,
                                           p.h, b + sh.pre[PL_O], sh.n[PL_O], ring, full, empty, stage, phase, xs, gs, red,
                                           scratch, ck);
    pl_consume<CW, RGU, 2, PL_GU, STAGES, W>(p, c + PL_O, (unsigned)sh.n[PL_O], c + PL_GU, p.h,
                                             static_cast<const W*>(ly.mlp_norm), p.H, p.I, p.act, b + sh.pre[PL_GU],
                                             sh.n[PL_GU], ring, full, empty, stage, phase, xs, gs, red, scratch, ck);
    pl_consume<CW, RDOWN, 1, PL_DOWN, STAGES, W>(p, c + PL_GU, (unsigned)sh.n[PL_GU], c + PL_DOWN, p.act, nullptr, p.I,
                                                 p.H, p.h, b + sh.pre[PL_DOWN], sh.n[PL_DOWN], ring, full, empty, stage,
                                                 phase, xs, gs, red, scratch, ck);
  }
#ifdef AC_TIMELINE
  if (threadIdx.x == 0)
    for (int k : {0, 1, 2, 3, 5}) record(k);
#endif
  // The last block to finish resets every counter for the next launch (all waits are over).
  __threadfence();
  bar_sync_first(T);
  if (threadIdx.x == 0 && atomicAdd(blocks_done, 1u) == gridDim.x - 1) {
    for (long long i = 0; i < p.L * PL_OPS; ++i) ctr[i] = 0u;
    *blocks_done = 0u;
    __threadfence();
  }
}
