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
#include "backends/cuda/fast_config.h"

typedef struct CUstream_st* CUstream;  // as cuda.h declares it (this header does not include it)

namespace ac::cuda {

// The largest k the device top-k serves (larger ones copy the logits to the host), and the most
// rows per step (a decode batch).
inline constexpr int kGpuTopKMax = 1024, kGpuTopKRows = 8;
// How topk.radix cuts a row: chunks of at least max(k, 4096) values, one block each.
struct TopKShape {
  long long chunk = 0, chunks = 0;
};
TopKShape topk_shape(long long vocab, int k);

// The batch template (1, 2, 4, 8) the fast path compiles and captures for n sequences.
int batch_template(long long n);

// Why the fast path cannot run this graph ("" when it can).
std::string fast_path_unsupported(const Graph& g);
// Why the auto route and the compile do not take the fast path for this graph ("" when they do).
// Today fast_path_unsupported's reasons: every graph the fast path runs is its default, FP8
// projections included (gemv.fp8 at their own points, searched per region). A capability that
// runs but should not be chosen unasked gets its reason here.
std::string fast_path_not_default(const Graph& g);

// How the fast path reads a graph's FP8 projections (Graph::fp8): None (16-bit weights), scales
// per output row (Row: channel or tensor scales, gemv.fp8 SCALE 0) or per 128 x 128 block (Block,
// SCALE 1). `why` (when given) says why it cannot read them ("" when it can).
enum class Fp8Scales { None = -1, Row = 0, Block = 1 };
Fp8Scales fast_fp8_scales(const Graph& g, std::string* why = nullptr);
// Whether the graph's lm_head is FP8 too (in fast_fp8_scales's layout; compile --lm-head fp8).
bool fast_fp8_head(const Graph& g);

// Every kernel variant the fast path launches for a model with this config (all batch sizes),
// so they can be compiled ahead of time and checked without a GPU.
}  // namespace ac::cuda
#include "backends/cuda/family.h"
namespace ac::cuda {
// `fp8`: the graph's FP8 projections (fast_fp8_scales), which run gemv.fp8 under fp8_fast_config(cfg);
// `fp8_head`: its lm_head too (fast_fp8_head).
std::vector<Variant> fast_path_variants(const ModelConfig& c, DType weights, const FastConfig& cfg, const std::string& arch,
                                        Fp8Scales fp8 = Fp8Scales::None, bool fp8_head = false);
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
// (1, 2, 4, 8). A point searched at that batch satisfies gemv.fused's constraint there and runs
// as written; a point chosen at a smaller batch (a latency plan serving a batch) is adapted: rows
// per warp, then the unroll, halve until the constraint's register budget holds (split-K stays
// with the residual epilogue only).
Variant fast_gemv_variant(const GemvChoice& ch, int epi, int batch, DType wt, const std::string& arch);

// Grid, block and dynamic shared memory of a gemv.fused, gemv.fp8 or gemv.mma variant for an [N, K]
// weight.
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
// gemv.fused's K slice per block at split-K `splitk` (kernels/cuda/gemv/gemv.cuh's kchunk): a
// whole number of 16-byte chunks, 8 weights each (16 for gemv.fp8's FP8 weights).
inline long long gemv_kchunk(long long K, long long splitk, long long per_chunk = 8) {
  return ((K + splitk - 1) / splitk + per_chunk - 1) / per_chunk * per_chunk;
}

// gemv.fp8 at a region's point for FP8 projections (`sc`: their scale layout; `cvt`: how the codes
// are widened, FastConfig::fp8_cvt): fast_gemv_variant's adaptation to the batch, every batch
// (gemv.mma reads 16-bit weights).
Variant fast_fp8_gemv_variant(const GemvChoice& ch, int epi, int batch, Fp8Scales sc, DType wt, const std::string& arch,
                              int cvt = 0);
// gemv.mma_fp8 at a region's gemv.mma point for FP8 weights (fast_mma_variant's adaptation), or
// none where it cannot run: K % 64 != 0, f16 gamma, below sm_80.
std::optional<Variant> fast_mma_fp8_variant(const MmaChoice& ch, int terms, int epi, int batch, long long K, Fp8Scales sc,
                                            DType wt, const std::string& arch, int cvt = 0);
// What an FP8 GEMV launches at a batch template: gemv.mma_fp8 where cfg.fp8_batched_mma allows it
// from cfg.mma_min_batch on, else gemv.fp8; either with cfg.fp8_cvt.
Variant fast_fp8_decode_gemv(const FastConfig& cfg, const GemvChoice& gemv, const MmaChoice& mma, int epi, int batch,
                             long long K, Fp8Scales sc, DType wt, const std::string& arch);
// The fast path's configuration for FP8 projections: the projections' slots take their FP8 points
// (qkv_fp8, ...), the lm_head's only with `fp8_head`; mlp.fused, attn_o.cluster, attn_merge_o and
// decode_layers.persistent read 16-bit weights, so they are off.
FastConfig fp8_fast_config(FastConfig cfg, bool fp8_head = false);

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
