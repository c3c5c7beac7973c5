#pragma once
// The CUDA fast path (issue 9): decode steps (up to 8 sequences, one token each) run as one
// fused GEMV per projection (RMSNorm prologue; residual, SwiGLU or argmax epilogue), a q/k
// norm + rope + cache-write kernel and flash-decoding attention, captured once per batch size
// in a CUDA graph with programmatic dependent launch; prefill steps use cuBLAS GEMMs with the
// same fused weights and bf16 KV cache.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agentcompile/ir/graph.h"
#include "agentcompile/tuning/executor.h"

typedef struct CUstream_st* CUstream;  // as cuda.h declares it (this header does not include it)

namespace ac::cuda {

struct GemvChoice {
  int block = 256, rows = 1, unroll = 2, splitk = 1;
};
// A point of gemv.mma (the tensor-core GEMV for batch 2-8): rows of it are 16-row tiles (MT).
struct MmaChoice {
  int block = 256, mt = 1, unroll = 2, splitk = 1;
};
// A point of mlp.fused (a layer's MLP in one kernel): kc intermediate rows per unit, rows gate/up
// rows per warp per pass, bps blocks per SM (the grid is bps x SMs, capped by the occupancy and
// the units).
struct MlpChoice {
  int block = 256, kc = 16, rows = 1, unroll = 2, bps = 2;
};

// Parameters of every fused family the fast path launches; a compiled plan will choose them
// per model (issue 7); the defaults are reasonable everywhere.
struct FastConfig {
  // Defaults: the points with the least total time over the three target models in the sweep of
  // bench/results/2026-11-30-gemv-sweep.txt (a plan picks per model). QKV: one row per warp since
  // the batch-1 attention runs in clusters (fewer registers, so the early-launched cluster finds
  // room sooner): W2 -0.8 / -0.7 / -1.3% against rows 2 on the H200
  // (bench/results/2026-11-30-cluster-attention/, "QKV point").
  GemvChoice qkv{256, 1, 4, 1};
  GemvChoice o{128, 2, 1, 4};
  GemvChoice gate_up{256, 1, 2, 1};
  GemvChoice down{256, 2, 2, 4};
  GemvChoice lm_head{256, 4, 1, 1};
  // Batches of at least mma_min_batch (bf16 weights, K % 32 == 0, sm_80+) run gemv.mma instead of
  // gemv.fused: at batch 8 it streams weights at 2.3-3.5 TB/s where gemv.fused manages 0.6-0.8
  // (bench/results/2026-11-30-mma/README.md); since gemv.mma's sweep points, batch 2 too (10.9-14.1%
  // faster per step than gemv.fused there, bench/results/2026-12-01-batch2-mma/).
  // Defaults: the best points of the batch-8 sweep there, common to most of the three models.
  bool batched_mma = true;
  int mma_min_batch = 2;
  int mma_terms = 2;
  MmaChoice qkv_mma{512, 1, 1, 1};
  MmaChoice o_mma{256, 1, 1, 4};
  MmaChoice gate_up_mma{128, 1, 1, 1};
  MmaChoice down_mma{128, 1, 1, 8};
  MmaChoice lm_head_mma{128, 4, 1, 1};
  // Batch templates up to mlp_fused_batch (0: none) run a layer's MLP as one mlp.fused kernel
  // instead of the gate_up and down GEMVs (not yet measured on the GPU: off by default).
  int mlp_fused_batch = 0;
  MlpChoice mlp;
  int qkv_post_block = 128;
  int attn_block = 256, attn_tile = 32, attn_split = 32;
  int attn_ilp = 1;  // attn_decode.fused's ILP (1 or 4: within ±2% of each other end to end on the H200)
  // Decode steps whose longest sequence holds more than attn_long_from positions run the attention
  // with splits of attn_split_long (one more graph per batch size): short splits keep a short
  // context's blocks short, long ones keep a long context's merge short (the long ones may use
  // all of the GPU's shared memory). On the H200 split 256 decoded 21-29% faster than 32 at
  // 2048-2176 positions and 0.3-4.6% at 512-640, 32 was faster for Qwen3 at 128-256 (0.8-2.4%):
  // bench/results/2026-11-30-long-context/. 0: never.
  int attn_split_long = 256, attn_long_from = 384;
  // Batch-1 steps of at most attn_long_from positions run attn_decode.cluster with this many blocks
  // per KV head, merging their partials in a thread block cluster (2, 4 or 8; sm_90 and later),
  // instead of attn_decode.fused's splits of attn_split and their merge through global memory.
  // On the H200 at W2, 8: -5.4 / -8.1 / -2.2% per token (Llama-3.2-1B / Qwen3-1.7B / Qwen3-4B; 4
  // is better for Qwen3-4B, -4.9%); at batch 4-8 it was slower for Qwen3-4B (+17-27%), so batches
  // keep the splits (bench/results/2026-11-30-cluster-attention/). 0: never.
  int attn_cluster = 8;
  // Batch-1 steps past attn_long_from positions run attn_decode.cluster as well, with this many
  // blocks per KV head (2, 4, 8 or 16; 0: never), while CLUSTER blocks of attn_cluster_long_split
  // rows (0: 256) cover the context, then past their reach blocks of 512 rows where the GPU's
  // shared memory holds them (head dims up to 64 or so on sm_90; two more CUDA graphs per batch
  // size); longer steps keep attn_decode.fused's long splits. On the H200, 8 blocks of 256 rows
  // (2048 positions) decoded 5.1-9.0% faster than the long splits at 512-1152 positions for the
  // three target models (16 blocks or shorter splits were slower there), and Llama-3.2-1B's 8
  // blocks of 512 rows 5.0% faster at W3's 2048-2176 positions; head dim 128 fits only 384 rows,
  // which were -5.6% to +2.9% by model and plan there (bench/results/2026-11-30-cluster-long/).
  int attn_cluster_long = 8;
  int attn_cluster_long_split = 0;
  // Batch-1 steps in the short range run the attention and the output projection as one kernel
  // (attn_o.cluster) with this many clusters of attn_cluster blocks per KV head (1, 2 or 4), each
  // computing the whole attention and 1/attn_o of W_o's rows, where the model allows it (no
  // o_proj bias; hidden a multiple of the blocks per KV head; the tile within the shared memory);
  // 0: the attention and the output GEMV as two kernels. Off by default: on the H200 every form
  // was slower at W2 than the two kernels (best, 1 cluster with LATE 1: +0.9% Llama-3.2-1B, +2.0%
  // Qwen3-1.7B; bench/results/2026-12-01-attn-o/); the compile measures attn_o=1 per model.
  int attn_o = 0;
  // Batch-1 steps in the short range run attn_decode.parts (attn_decode.cluster's point without
  // the cluster: each block writes its partial to global memory) and the output projection as
  // gemv.merged (o's point), which merges the partials while staging x': the cluster's barriers
  // and merge leave the end of the attention, which is on a layer's critical path
  // (bench/results/2026-12-02-merge-proxy/). Needs the cluster attention there; attn_o wins.
  int attn_merge_o = 0;
  // attn_o.cluster's LATE: where its W_o tile is copied: 0 before the wait on the QKV projection,
  // 1 once the query is in (the fastest of the three on the H200), 2 as 1 with the tile asked
  // into L2 before the wait.
  int attn_o_late = 1;
  // Batch-1 decode steps run every decoder layer as one persistent kernel (decode_layers.persistent:
  // one block per SM whose producer warp streams the block's weight tiles of every layer into a
  // shared-memory ring across what are kernel boundaries in the chain) instead of the chain of
  // GEMVs and attention kernels; persistent_stage_kb sizes a ring stage (a tile's rows follow from
  // it), persistent_splits is the attention's splits per KV head. Off by default: it loses to the
  // chain on some models; the compile measures it per model (bench/results/2026-12-01-persistent/).
  int persistent = 0;
  int persistent_block = 288, persistent_stages = 5, persistent_splits = 8, persistent_stage_kb = 32;
  // The preferred shared-memory carveout (percent of the unified L1/shared store, 0-100) set on
  // every kernel the fast path launches; -1: none (the driver picks per kernel). On the H200 one
  // carveout for the whole chain decoded W2 faster by model-dependent values (Qwen3-1.7B best at
  // 40, Llama-3.2-1B at 25, Qwen3-4B at 60; 100 was slower everywhere:
  // bench/results/2026-12-01-smem-carveout/); the compile measures a few per model.
  int smem_carveout = -1;
  // Per decode region (plan_carveout_regions(): the five GEMV slots and "attention"): a carveout for that
  // region's kernels instead of smem_carveout (a launch attribute). The driver rounds a preference
  // to a split per kernel at thresholds set by its shared memory, and each decode kernel has
  // splits it runs well under; a GEMV point of another K split (other shared memory) may need
  // another value than the step's to land on a good one (on the H200, Qwen3-1.7B's down projection
  // at 256:4:1:8 was 1.8% slower under the step's 40 and 0.28% faster than the plan's point under
  // 30: bench/results/2026-12-03-carveout-map/). Absent: the step's.
  std::map<std::string, int> region_carveout;
  bool cuda_graph = true;
  bool pdl = true;
  // Top-k sampling selects its k candidates on the device (topk.radix) instead of copying every
  // logit to the host; off: the host selects them (the same candidates).
  bool gpu_top_k = true;
  int top_k_block = 1024;
  // Greedy decode steps are enqueued one ahead of the host (Executor::decode_ahead): a step's
  // token ids are the previous step's argmax, written on the device by the lm_head's epilogue.
  bool decode_ahead = true;
  // A chained decode-ahead step's inputs come from the device: the step before advanced every
  // position by one and wrote its tokens into page-locked host memory itself (argmax_finish), so
  // no copy runs between two steps' graphs; off: one upload before and one download after each.
  bool device_chain = true;
};

// Whether FastConfig::region_carveout may name `name` (one of plan_carveout_regions(), the names
// plans use).
bool valid_carveout_region(const std::string& name);

// Blocks per KV head attn_decode.cluster may run with (0: not at all).
inline bool valid_attn_cluster(int n) { return n == 0 || n == 2 || n == 4 || n == 8 || n == 16; }
// Clusters per KV head attn_o.cluster may run with (0: not at all).
inline bool valid_attn_o(int n) { return n == 0 || n == 1 || n == 2 || n == 4; }

// The largest k the device top-k serves (larger ones copy the logits to the host), and the most
// rows per step (a decode batch).
inline constexpr int kGpuTopKMax = 1024, kGpuTopKRows = 8;
// How topk.radix cuts a row: chunks of at least max(k, 4096) values, one block each.
struct TopKShape {
  long long chunk = 0, chunks = 0;
};
TopKShape topk_shape(long long vocab, int k);

// The decode GEMV regions by the names plans, overrides and the search use, with their points in
// FastConfig (gemv.fused at batch 1, gemv.mma from mma_min_batch on).
struct GemvSlotField {
  const char* name;
  GemvChoice FastConfig::*gemv;
  MmaChoice FastConfig::*mma;
};
inline constexpr GemvSlotField kGemvSlots[] = {{"qkv", &FastConfig::qkv, &FastConfig::qkv_mma},
                                               {"o", &FastConfig::o, &FastConfig::o_mma},
                                               {"gate_up", &FastConfig::gate_up, &FastConfig::gate_up_mma},
                                               {"down", &FastConfig::down, &FastConfig::down_mma},
                                               {"lm_head", &FastConfig::lm_head, &FastConfig::lm_head_mma}};
// The one named `name`; throws Internal for any other name (the names are code, not input).
const GemvSlotField& gemv_slot(const std::string& name);

// The batch template (1, 2, 4, 8) the fast path compiles and captures for n sequences.
int batch_template(long long n);

// Applies a developer override, e.g. AGENTCOMPILE_FAST_CONFIG="o=128:2:1:4,attn_split=64,pdl=0":
// GEMV regions (qkv, o, gate_up, down, lm_head) take block:rows:unroll:splitk, their batched
// tensor-core points (qkv_mma, ...) block:mt:unroll:splitk; mlp block:kc:rows:unroll:bps; attn_block, attn_tile, attn_split, attn_ilp,
// qkv_post_block, top_k_block, attn_cluster and attn_cluster_long (0, 2, 4, 8, 16), attn_cluster_long_split, attn_o
// (0, 1, 2, 4), attn_o_late (0, 1, 2), attn_merge_o (0, 1), smem_carveout (-1 to 100), carveout.<region>
// (plan_carveout_regions(); -1 to 100, -1 removing it), mma_terms,
// mma_min_batch, mlp_fused_batch, batched_mma, gpu_top_k, cuda_graph and pdl take integers. Throws BadInput on
// anything else.
FastConfig apply_fast_config_override(FastConfig cfg, const std::string& spec);

// Why the fast path cannot run this graph ("" when it can).
std::string fast_path_unsupported(const Graph& g);

// Every kernel variant the fast path launches for a model with this config (all batch sizes),
// so they can be compiled ahead of time and checked without a GPU.
}  // namespace ac::cuda
#include "backends/cuda/family.h"
namespace ac::cuda {
std::vector<Variant> fast_path_variants(const ModelConfig& c, DType weights, const FastConfig& cfg, const std::string& arch);
// The decode attention a step of `batch` tokens runs when its longest sequence holds `longest`
// positions: up to attn_long_from (or always, when that is 0) the short range, attn_decode.cluster
// at batch 1 (FastConfig::attn_cluster) or attn_decode.fused's short splits; past it the long
// range, attn_decode.cluster with attn_cluster_long blocks at batch 1 while they cover the
// context (AttnRange::ClusterLong: blocks of 256 rows; ClusterLonger: of 512, where the shared
// memory holds them), else the fused kernel's long splits. Each range is a CUDA graph of
// its own. Also: how many blocks per (KV head, token) a variant launches over a cache of max_seq
// positions.
enum class AttnRange { Short = 0, ClusterLong = 1, ClusterLonger = 2, Long = 3 };
AttnRange decode_attention_range(const ModelConfig& c, const FastConfig& cfg, DType wt, const std::string& arch, int batch,
                                 long long longest);
// The same from the long ranges' reaches (positions covered by each cluster variant, shortest
// first: cluster_long_reaches), for callers that pick a range every step.
std::vector<long long> cluster_long_reaches(const ModelConfig& c, const FastConfig& cfg, DType wt, const std::string& arch);
AttnRange attn_range_of(const FastConfig& cfg, int batch, long long longest, const std::vector<long long>& reaches);
Variant decode_attention_variant(const ModelConfig& c, const FastConfig& cfg, DType wt, const std::string& arch, int batch,
                                 long long longest);
long long decode_attention_blocks(const Variant& v, long long max_seq);
// FastConfig::attn_merge_o's pair for a step of `batch` tokens: attn_decode.parts (the cluster
// attention's point) and gemv.merged (the o point's, PARTS its CLUSTER); none unless it is on, the
// step is a batch-1 step of the short range that runs attn_decode.cluster and attn_o does not
// take it.
struct MergeOPlan {
  Variant attn, o;
};
std::optional<MergeOPlan> merge_o_plan(const ModelConfig& c, const FastConfig& cfg, DType wt, const std::string& arch,
                                       int batch, long long longest, bool o_bias);
// The attn_o.cluster variant a step of `batch` tokens runs instead of its attention and output
// GEMV, with its tile rows and dynamic shared memory; none unless FastConfig::attn_o is on, the
// step is a batch-1 step of the short range on the cluster attention, and the model allows it
// (`o_bias`: the output projection has a bias; the hidden size must divide into CLUSTER * attn_o
// tiles that fit the GPU's shared memory next to the split).
struct AttnOPlan {
  Variant v;
  long long rows = 0;
  size_t smem = 0;
};
std::optional<AttnOPlan> attn_o_plan(const ModelConfig& c, const FastConfig& cfg, DType wt, const std::string& arch, int batch,
                                     long long longest, bool o_bias);

// The decode_layers.persistent point a batch-1 step runs (FastConfig::persistent): the variant,
// bytes per ring stage (the largest tile, rounded up to 128) and the dynamic shared memory (the
// ring, then the largest input vector as floats). Stages shrink until that fits the GPU.
struct PersistentPlan {
  Variant v;
  long long stage_bytes = 0;
  size_t smem = 0;
};
// None when persistent is off or the kernel cannot run the model: below sm_90, a head dim other
// than 32, 64 or 128, more query heads per KV head than consumer warps, biases on the projections
// (`biased`), dimensions not multiples of 8. Throws BadInput for a point outside the family.
std::optional<PersistentPlan> persistent_plan(const ModelConfig& c, const FastConfig& cfg, DType wt, const std::string& arch,
                                              bool biased);

// Epilogues of gemv.fused (kernels/cuda/gemv/gemv.cuh).
constexpr int kEpiStore = 0, kEpiResidual = 1, kEpiSwiglu = 2, kEpiArgmax = 3;

// The gemv.fused variant the fast path launches for a region's choice at a batch template
// (1, 2, 4, 8): at batch > 1 rows per warp, then the unroll, shrink until accumulators and loads
// in flight fit the registers; split-K only with the residual epilogue.
Variant fast_gemv_variant(const GemvChoice& ch, int epi, int batch, DType wt, const std::string& arch);

// Grid, block and dynamic shared memory of a gemv.fused or gemv.mma variant for an [N, K] weight.
struct LaunchShape {
  unsigned grid_x = 1, grid_y = 1, threads = 0;
  size_t smem = 0;
};
LaunchShape gemv_launch_shape(const Variant& v, long long N, long long K);
// After an argmax-epilogue GEMV on stream s: tokens[b] from the keys its blocks published to
// best[b] (-1 for a row with a NaN/Inf logit), best zeroed for the next launch (one block,
// sampling/argmax.cuh argmax_finish; with pdl, it is scheduled while the GEMV runs). With
// positions, the next chained step's inputs too (ArgmaxFinishParams: positions advanced, the
// tokens into slot positions[0] % 2 of host_tokens' two slots of slot_len).
void launch_argmax_finish(unsigned long long* best, int* tokens, long long B, CUstream s, bool pdl,
                          const std::string& arch, int carveout = -1, int* positions = nullptr,
                          int* host_tokens = nullptr, long long slot_len = 0);
// gemv.fused's K slice per block at split-K `splitk` (kernels/cuda/gemv/gemv.cuh's kchunk).
inline long long gemv_kchunk(long long K, long long splitk) { return ((K + splitk - 1) / splitk + 7) / 8 * 8; }

// The gemv.mma variant for a batch template (1, 2, 4, 8), or none (gemv.fused runs) when the
// tensor-core kernel cannot: f16 weights, K % 32 != 0, below sm_80.
std::optional<Variant> fast_mma_variant(const MmaChoice& ch, int terms, int epi, int batch, long long K, DType wt,
                                        const std::string& arch);
// What a decode GEMV launches at a batch template: gemv.mma where cfg.batched_mma allows it from
// cfg.mma_min_batch on, else gemv.fused.
Variant fast_decode_gemv(const FastConfig& cfg, const GemvChoice& gemv, const MmaChoice& mma, int epi, int batch,
                         long long K, DType wt, const std::string& arch);

// The mlp.fused variant for a choice at a batch template (1 or 2), or none when the template is
// above cfg.mlp_fused_batch or the kernel cannot run the shape (H or I not a multiple of 8).
std::optional<Variant> fast_mlp_variant(const FastConfig& cfg, int batch, long long H, long long I, DType wt,
                                        const std::string& arch);

// W_down ([H, I], 16-bit elements) in mlp.fused's layout: [ceil(I / kc)][H][kc], zero past I, so
// each unit of kc intermediate columns is one contiguous stream.
std::vector<uint16_t> tile_mlp_down(const void* w, long long H, long long I, int kc);

// Grid, block and dynamic shared memory of a loaded mlp.fused kernel: bps blocks per SM, capped
// by the occupancy (every block must be resident at once: they wait for each other before adding
// into the residual stream) and by the units of KC intermediate rows.
struct LoadedKernel;
LaunchShape mlp_launch_shape(const LoadedKernel& k, const Variant& v, long long H, long long I, int bps);

// With `share`, the weights come from it when it holds this graph's in this config's layout
// (fast_weights_key), else they are uploaded and left in it.
std::unique_ptr<Executor> make_fast_executor(const Graph& g, const ExecutorLimits& lim, const FastConfig& cfg,
                                             ExecutorShare* share = nullptr);
// The layout the fast path uploads a graph's weights in under `cfg` (ExecutorShare::key): q, k
// and v fused per layer, and W_down also tiled by mlp.fused's unit where that may run.
std::string fast_weights_key(const FastConfig& cfg);

}  // namespace ac::cuda
