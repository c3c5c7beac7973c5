// Kernel parameter structs, shared by the host launchers (C++) and the device templates (NVRTC):
// plain types only, so both sides agree on the layout. Shapes are noted per field.
#pragma once

struct EmbedParams {
  const void* table;   // [vocab, hidden] W
  const int* tokens;   // [n]
  float* out;          // [n, hidden]
  long long n, hidden;
  long long vocab;     // ids outside [0, vocab) give a NaN row (a chained decode step fed -1)
};

struct RmsNormParams {
  const float* x;      // [rows, dim]
  const void* gamma;   // [dim] W
  float* out;          // [rows, dim]
  long long rows, dim;
  float eps;
};

struct LinearParams {
  const float* x;      // [*, in]; row t of the output reads row (rows ? rows[t] : t)
  const int* rows;     // [n] or null
  const void* w;       // [out_dim, in] W
  const void* bias;    // [out_dim] W or null
  float* out;          // [n, out_dim]
  long long n, in, out_dim;
};

struct RopeParams {
  const float* x;        // [n, heads * head_dim]
  float* out;            // [n, heads * head_dim] (may alias x)
  const int* positions;  // [n]
  const float* inv_freq; // [head_dim / 2]
  long long n, heads, head_dim;
};

struct KvWriteParams {
  const float* k;        // [n, kv_dim]
  const float* v;        // [n, kv_dim]
  float* k_cache;        // [slots, max_seq, kv_dim]
  float* v_cache;        // [slots, max_seq, kv_dim]
  const int* positions;  // [n]
  const int* slots;      // [n]
  long long n, kv_dim, max_seq;
};

struct AttentionParams {
  const float* q;        // [n, heads * head_dim]
  const float* k_cache;  // [slots, max_seq, kv_heads * head_dim]
  const float* v_cache;
  float* out;            // [n, heads * head_dim]
  const int* positions;  // [n]; token t attends to positions [0, positions[t]] of its slot
  const int* slots;      // [n]
  long long n, heads, kv_heads, head_dim, max_seq;
  float scale;
  long long window;      // > 0: only the last `window` of those positions (sliding window); 0: all
};

// RMSNorm of f32 rows written in gamma's 16-bit dtype W: the prefill GEMMs' input, normed and
// rounded in one pass.
struct NormCastParams {
  const float* x;      // [rows, dim]
  const void* gamma;   // [dim] W
  void* out;           // [rows, dim] W
  long long rows, dim;
  float eps;
};

// gemm.wgmma (gemm/wgmma.cuh): C = A B^T, A the step's 16-bit rows, B a weight as stored.
// A TMA tensor map (the driver's CUtensorMap: 128 opaque bytes, 128-byte aligned), encoded on the
// host (backends/cuda/gemm_wgmma.cpp) and read by cp.async.bulk.tensor from the kernel's parameters.
struct alignas(128) TmaMap {
  unsigned long long opaque[16];
};

struct GemmW16Params {
  const void* a;  // [m, k] W, row stride lda
  const void* b;  // [n, k] W, row stride ldb
  void* c;        // [m, n], row stride ldc: W (EPI 0, 3) or f32 (EPI 1 stores, EPI 2 adds)
  long long m, n, k, lda, ldb, ldc;
  const void* b2;      // EPI 3: the up projection [n, k] W, row stride ldb (b: the gate projection)
  TmaMap ta, tb, tb2;  // LOAD 1: the maps of A, B and B2 (boxes of 64 k x 128 rows and 64 k x BN (EPI 3: BN / 2)
                       // rows, 128-byte swizzle)
};

// silu(gate) * up over 16-bit rows (W), rounded to W: the prefill's down projection input.
struct Swiglu16Params {
  const void* gate;    // [count] W
  const void* up;      // [count] W
  void* out;           // [count] W
  long long count;
};

struct ElementwiseParams {
  const float* a;        // [count]
  const float* b;        // [count]
  float* out;            // [count]
  long long count;
};

struct CastParams {
  const float* x;        // [count]
  void* out;             // [count] OUT
  long long count;
};

// FP8 e4m3 codes [N, K] times their f32 scales into a 16-bit matrix (the CUDA fast path's prefill
// GEMMs): scale of (r, k) at scales[(r / bo) * scale_cols + k / bi].
struct Fp8DequantParams {
  const unsigned char* codes;  // [N, K]
  const float* scales;
  void* out;                   // [N, K] OUT
  long long N, K, bo, bi, scale_cols;
};

struct BiasParams {
  float* out;            // [n, cols], bias added in place
  const void* bias;      // [cols] W
  long long n, cols;
};

struct GatherRowsParams {
  const float* x;        // [*, cols]
  const int* rows;       // [n]
  float* out;            // [n, cols]
  long long n, cols;
};

// Mixture-of-experts MLP, reference (moe/reference.cuh).
struct MoeRouteParams {
  const float* logits;   // [n, experts] router logits
  int* ids;              // [n, top_k] the picked experts, increasing index within a token
  float* weights;        // [n, top_k] their weights
  long long n, experts, top_k;
  int renormalise;
};

struct MoeRouterParams {
  const float* x;        // [n, hidden] the residual rows
  const void* gamma;     // [hidden] W: the post-attention RMSNorm's weight
  const void* w;         // [experts, hidden] W: the router
  float* h;              // [n, hidden] the normalised rows (the experts' input)
  float* logits;         // [n, experts] (moe_router.logits; .fused keeps them in shared memory)
  int* ids;              // [n, top_k] the picked experts, increasing index within a token (.fused)
  float* weights;        // [n, top_k] their weights (.fused)
  long long n, hidden, experts, top_k;
  float eps;
  int renormalise;
  int prefetch;  // 1: ask L2 for the router rows before pdl_wait (only worth it under PDL)
  int* done;     // [n] zeros (moe_router.logits PICK 1): blocks of each token done so far
  int early;     // 1 (decode under PDL): the next kernel (the gate/up GEMV) may launch at once
};

struct MoeCountParams {
  const int* ids;                // [picks] a decode step's picks in one sparse layer
  unsigned long long* counter;   // [2] distinct experts so far, (layer, step) pairs so far
  long long picks;
};

struct MoeGroupedParams {
  const float* h;        // [n, hidden] the normalised rows
  const int* rows;       // [picks] the pick at each sorted position (token * top_k + j)
  const int* pos;        // [picks] each pick's sorted position
  const float* weights;  // [n, top_k] the picks' weights
  void* xg;              // [picks, hidden] W: the rows in sorted order (moe_gather_rows)
  const void* down;      // [picks, hidden] W: the down GEMMs' outputs in sorted order
  float* out;            // [n, hidden] the residual stream (moe_combine_rows adds into it)
  long long n, top_k, hidden;
};

struct MoeExpertParams {
  const float* x;            // gate_up: [n, hidden] inputs; down: [n * top_k, inter] activations
  const int* ids;            // [n, top_k] (moe_route)
  const float* weights;      // [n, top_k] (down)
  const void* const* w1;     // [experts] device pointers: gate_up: the gate weights; down: the down weights
  const void* const* w2;     // [experts] gate_up: the up weights
  float* out;                // gate_up: [n * top_k, inter]; down: [n, hidden]
  long long n, top_k, hidden, inter;
};

// The fast path's mixture-of-experts MLP (moe/gemv.cuh): the picked experts of each token, one
// launch for all of them. Expert e's matrices are table[e] (gate), table[E + e] (up) and
// table[2E + e] (down), each its own [rows, cols] W tensor.
struct MoeGemvParams {
  const float* x;            // gate_up: [n, hidden] input rows (the post-attention RMSNorm's)
  const int* ids;            // [n, top_k] picked experts (moe_route: increasing index within a token)
  const float* weights;      // [n, top_k] their routing weights
  const void* const* table;  // [3 * experts] device pointers
  float* act;                // [n * top_k, inter]: silu(gate x) * (up x), written by gate_up, read by down
  float* out;                // down: [n, hidden] f32 rows, added to: out += sum_j weights_j (down_j act_j)
  long long n, top_k, experts, hidden, inter;
  float* part;               // moe_down.split: [n * top_k, hidden] each pick's products
  int* done;                 // moe_down.split: [n * blocks] zeros: a token's blocks done per output block
  int early;                 // 1 (decode under PDL): gate_up lets the down projection launch once it has
                             // waited; moe_down.split asks L2 for its rows, then lets the next kernel launch
};

struct ArgmaxParams {
  const float* logits;   // [rows, vocab]
  int* out;              // [rows]
  long long rows, vocab;
};

// The k largest logits of each row (sampling/topk.cuh), k < vocab; grid (chunks, rows).
struct TopKParams {
  const float* logits;   // [rows, vocab]
  float* out_val;        // [rows, k]
  int* out_idx;          // [rows, k]; -1 in a row's first slot: the row holds NaN or Inf
  float* part_val;       // [rows, chunks, k] each chunk's candidates (chunks > 1)
  int* part_idx;         // [rows, chunks, k]
  unsigned* counters;    // [2 * rows]: chunks done, NaN/Inf seen; zero before the first launch, reset by the last block
  long long rows, vocab;
  long long chunk;       // values per chunk, >= k (topk_shape)
  int k;
};

// ---- fast decode families (gemv/, attention/decode.cuh) ----

// y = W x (+ bias) over B rows of x, with an optional RMSNorm of x first and an epilogue
// (gemv/gemv.cuh: EPI_STORE, EPI_RESIDUAL, EPI_SWIGLU, EPI_ARGMAX).
struct GemvParams {
  const float* x;        // [B, K]
  const void* gamma;     // [K] W: RMSNorm weight, or null (no norm)
  float eps;
  const void* w;         // [N, K] W (SWIGLU: the gate projection)
  const void* w2;        // [N, K] W: SWIGLU's up projection, else null
  const void* bias;      // [N] W or null
  float* out;            // [B, N]; RESIDUAL adds into it (it holds the residual stream)
  unsigned long long* best;  // ARGMAX: [B] largest (logit, row) key (gemv/common.cuh argmax_key), zero
                             // before the launch; argmax_finish turns it into the token and zeroes it
  long long B, N, K;
  // gemv.merged only (x' merged from attn_decode.parts's partials: x is their P.V, [B, kv_heads,
  // PARTS, part_group * part_hd]): each partial's (max, sum) per query head, [B, kv_heads, PARTS,
  // part_group]; the query heads per KV head and the head dim.
  const float* part_ml = nullptr;
  long long part_group = 0, part_hd = 0;
  // gemv.fp8 only: the f32 scales of w and w2 (per output row [N], or per 128 x 128 block
  // [ceil(N / 128), ceil(K / 128)]).
  const float* w_scale = nullptr;
  const float* w2_scale = nullptr;
};

// What reads alone stream (probe/read.cuh read_probe, `bench` ceilings): block b reads 16-byte
// words [b * words_per_block, (b + 1) * words_per_block) of src with the GEMVs' weight load and
// writes their wrapping sum (each word's four 32-bit parts added) to out[b], so none is dropped.
struct ReadProbeParams {
  const void* src;
  long long words_per_block;
  unsigned* out;  // [blocks]
};

// After an ARGMAX GEMV (sampling/argmax.cuh argmax_finish): token_out[b] = the row of best[b]'s
// key (-1 when a logit was NaN/Inf), best[b] = 0 for the next launch.
struct ArgmaxFinishParams {
  unsigned long long* best;  // [B]
  int* token_out;            // [B]
  long long B;
  // A greedy decode step's inputs for the next chained step, on the device (null: not): every
  // position advances by one once the tokens are chosen, and the tokens also go into page-locked
  // host memory, slot positions[0] % 2 of two slot_len-long slots (no copy between two steps).
  int* positions;      // [B]
  int* host_tokens;    // [2 * slot_len], host memory the device writes
  long long slot_len;
};

// A decoder layer's MLP as one decode kernel (mlp.fused): h += W_down (silu(W_gate x') * (W_up x')),
// x' = RMSNorm(h) * gamma, for B tokens.
struct MlpParams {
  float* h;              // [B, H] the residual stream: read for the norm, then added into
  const void* gamma;     // [H] W: the post-attention RMSNorm weight
  float eps;
  const void* w_gate;    // [I, H] W
  const void* w_up;      // [I, H] W
  const void* w_down;    // [ceil(I / KC), H, KC] W: W_down tiled by unit, zero past I (tile_mlp_down)
  unsigned* counters;    // [2] blocks that read h / blocks done (zero before the first launch; the last block resets them)
  long long B, H, I;
};

// After the fused q/k/v projection: per-head RMSNorm of q and k (qwen3), rotary embedding, and
// k, v stored into the bf16 KV cache.
struct QkvPostParams {
  const float* qkv;          // [n, q_dim + 2 * kv_dim] (q | k | v)
  float* q_out;              // [n, q_dim], normalised and rotated
  const void* q_norm;        // [head_dim] W or null
  const void* k_norm;        // [head_dim] W or null
  float eps;
  const int* positions;      // [n]
  const int* slots;          // [n]
  const float* inv_freq;     // [head_dim / 2]
  unsigned short* k_cache;   // [slots, kv_heads, max_seq, head_dim] bf16
  unsigned short* v_cache;
  long long n, heads, kv_heads, head_dim, max_seq;
  // cos / sin of every position (rope_cos_sin: [max_seq, head_dim / 2]), or null: computed from
  // inv_freq in the kernel (the same values, in double precision per element).
  const float* rope_cos;
  const float* rope_sin;
  // qkv_post.rows only: where non-null, q goes here instead of q_out, as bf16 of its value times
  // q16_scale (attn_prefill.pipe's scale * log2 e: the Q fragments that kernel would round itself).
  unsigned short* q16;
  float q16_scale;
};

// Flash-decoding: each block attends one KV head's query group over one split of the positions
// and writes an unnormalised partial; attn_combine merges the splits.
// Prefill attention (attention/prefill_pipe.cuh): query tiles of consecutive rows of one
// sequence, from the host's tile table.
struct PrefillAttnParams {
  const float* q;                 // [n, heads * head_dim], normed and roped (qkv_post)
  const unsigned short* k_cache;  // [slots, kv_heads, max_seq, head_dim] bf16, this step's rows written
  const unsigned short* v_cache;
  float* out;                     // [n, heads * head_dim] f32, where out16 is null
  const int* positions;           // [n]; row t attends positions [0, positions[t]] of its slot
  const int* slots;               // [n]
  const int* tiles;               // [tiles][2]: first row, rows (one slot, at most the block's 16 * warps rows)
  long long n, heads, kv_heads, max_seq;
  float scale;
  void* out16;                    // null, or [n, heads * head_dim] in the variant's W instead of out
  int in_order;                   // 0: the last tiles (longest causal rows) of every head first; 1: tile x, head y
  const unsigned short* q16;      // null, or Q as qkv_post.rows's q16: bf16, already scaled (then q is not read)
};

struct DecodeAttnParams {
  const float* q;                 // [n, heads * head_dim]
  const unsigned short* k_cache;  // [slots, kv_heads, max_seq, head_dim] bf16
  const unsigned short* v_cache;
  float* part_o;                  // [n, heads, max_splits, head_dim]
  float* part_ml;                 // [n, heads, max_splits, 2] (running max, sum)
  float* out;                     // [n, heads * head_dim] (attn_combine)
  const int* positions;           // [n]; token t attends positions [0, positions[t]]
  const int* slots;               // [n]
  long long n, heads, kv_heads, max_seq, max_splits;
  float scale;
};

// Decode attention fused with what precedes and follows it: q/k RMSNorm + rope, the KV-cache
// write of the step's token, the split-K attention, and the merge of the splits by the last
// block of each (token, KV head) to finish. For decode steps only (one token per sequence).
struct FusedAttnParams {
  const float* qkv;          // [n, q_dim + 2 * kv_dim] (q | k | v) from the QKV projection
  const void* q_norm;        // [head_dim] W or null
  const void* k_norm;        // [head_dim] W or null
  float eps;
  const float* rope_cos;     // [max_seq, head_dim / 2] cos(position * inv_freq), as the reference
  const float* rope_sin;     // [max_seq, head_dim / 2]
  unsigned short* k_cache;   // [slots, kv_heads, max_seq, head_dim] bf16
  unsigned short* v_cache;
  float* part_o;             // [n, heads, max_splits, head_dim]
  float* part_ml;            // [n, heads, max_splits, 2]
  unsigned* counters;        // [n, kv_heads], zero before the first launch; reset by the merging block
  float* out;                // [n, heads * head_dim]
  const int* positions;      // [n]
  const int* slots;          // [n]
  long long n, heads, kv_heads, max_seq, max_splits;
  float scale;
};

// attn_o.cluster (attention/decode_cluster_o.cuh): the cluster attention and the output
// projection with its residual add in one kernel.
struct AttnOParams {
  struct FusedAttnParams a;  // a.out still receives the attention's outputs
  const void* wo;            // [hidden, heads * head_dim] W
  float* resid;              // [n, hidden] the residual stream: += wo . attention output
  long long hidden;          // a multiple of CLUSTER * COPIES
};

// ---- the persistent decode family (persistent/decode_layers.cuh) ----

// One decoder layer's weights and KV cache, as decode_layers.persistent reads them.
struct PersistentLayer {
  const void* attn_norm;     // [H] W
  const void* wqkv;          // [q_dim + 2 * kv_dim, H] W (q | k | v rows)
  const void* q_norm;        // [head_dim] W or null
  const void* k_norm;        // [head_dim] W or null
  const void* wo;            // [H, q_dim] W
  const void* mlp_norm;      // [H] W
  const void* wgate;         // [I, H] W
  const void* wup;           // [I, H] W
  const void* wdown;         // [H, I] W
  unsigned short* k_cache;   // [slots, kv_heads, max_seq, head_dim] bf16
  unsigned short* v_cache;
};

// Every decoder layer of a batch-1 decode step in one kernel (decode_layers.persistent): the
// residual stream h in, h out (the final norm and lm_head follow as their own kernel).
struct PersistentParams {
  const PersistentLayer* layers;  // [L] in device memory
  float* h;                  // [H] the residual stream
  float* qkv;                // [q_dim + 2 * kv_dim] a layer's raw q | k | v
  float* attn;               // [q_dim] a layer's attention output
  float* act;                // [I] a layer's silu(gate) * up
  float* part_o;             // [heads, SPLITS, head_dim] the attention's partials
  float* part_ml;            // [heads, SPLITS, 2] (max, sum)
  unsigned* counters;        // [L * 5 + kv_heads + 1], zero before the first launch; reset by the last block
  const float* rope_cos;     // [max_seq, head_dim / 2]
  const float* rope_sin;
  const int* positions;      // [1]
  const int* slots;          // [1]
  long long L, H, I, heads, kv_heads, max_seq;
  long long stage_bytes;     // bytes per ring stage (multiple of 128), at least the largest tile
  float eps, scale;
};
