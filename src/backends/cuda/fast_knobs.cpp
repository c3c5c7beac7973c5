// The fast path's knob declarations. Adding a knob: its FastConfig member (the default is the
// initialiser), one declaration here, and the kernel code that reads it; plan.json, the override
// and the plan's values from its routes follow from the declaration. Plain data: no CUDA header,
// so the plan fuzzer reads cuda_fast blocks with these very declarations.
#include "backends/cuda/fast_knobs.h"

namespace ac::cuda {

namespace {

using K = BoundKnob<FastConfig>;

// The carveouts the compile tries, percent: one for every kernel of the step, then each route's
// own. On the H200 the best step value differed by model (Qwen3-1.7B 40, Llama-3.2-1B 25, Qwen3-4B
// 60: 1.3-1.7% faster W2 decode; 100 was 3-9% slower: bench/results/2026-12-01-smem-carveout/).
// The driver rounds the preference to a split per kernel, at kernel-dependent thresholds, and each
// kernel runs well only under some splits: 40 was the one value giving all of Qwen3-1.7B's a good
// one, 1.5-2.5% faster than 30-38 and 41-50 (bench/results/2026-12-03-carveout-map/), so the
// trials are few. 80 for the routes: Qwen3-1.7B's output projection and gate/up under their own
// 80 were 0.26% faster together than under 60 and the step's 40
// (bench/results/2026-12-03-region-carveout/).
// A function, not a namespace-scope vector: the table is built during static initialisation
// (plan_config.cpp registers it as the program starts), when such a vector of this file may not be
// initialised yet; the CLI binary's link order gave the step tuning an empty list (a crash).
std::vector<int> carveouts() { return {25, 40, 60, 80}; }

constexpr KnobInPlan kRequired = KnobInPlan::Required, kOptional = KnobInPlan::Optional, kWithParent = KnobInPlan::WithParent;

// The search picks the knob as `param` of family op.name's routes in `region`, from its domain.
KnobSearch picked_as(const FamilyDomain& domain, const std::string& op, const std::string& name, const std::string& param,
                     const std::string& region) {
  return {"cuda:" + op + "." + name, param, region, domain(op, name, param)};
}

// A GEMV slot's points. gemv.<slot>.{block,rows,unroll,splitk}: gemv.fused's (batch 1), required in
// plans, override <slot>=block:rows:unroll:splitk; gemv_mma.<slot>.*: gemv.mma's (batches from
// mma_min_batch on; rows are its 16-row tiles, MT), absent from older plans, override
// <slot>_mma=block:mt:unroll:splitk; gemv_fp8.<slot>.*: gemv.fp8's (FP8 projections at every batch;
// the lm_head's only where it is FP8), absent from older plans, override <slot>_fp8=block:rows:unroll:splitk;
// gemv_mma_fp8.<slot>.*: gemv.mma_fp8's (FP8 projections from mma_min_batch on), override
// <slot>_mma_fp8=block:mt:unroll:splitk. The search picks each as its family's parameter in the
// slot's region.
void gemv_knobs(std::vector<K>& out, const GemvSlotField& s, const FamilyDomain& domain) {
  const std::string slot = s.name;
  std::vector<std::string> readers = {"gemv.fused"};
  if (slot == "o") readers.push_back("gemv.merged");  // attn_merge_o's output projection runs o's point
  struct Field {
    const char *leaf, *param;          // plan key, gemv.fused's parameter (and the override's part)
    const char *mma_part, *mma_param;  // gemv.mma's: rows are its 16-row tiles, MT
    long long lo, hi;
    int GemvChoice::*gemv;
    int MmaChoice::*mma;
  };
  const Field fields[] = {{"block", "BLOCK", "block", "BLOCK", 32, 1024, &GemvChoice::block, &MmaChoice::block},
                          {"rows", "ROWS", "mt", "MT", 1, 64, &GemvChoice::rows, &MmaChoice::mt},
                          {"unroll", "UNROLL", "unroll", "UNROLL", 1, 64, &GemvChoice::unroll, &MmaChoice::unroll},
                          {"splitk", "SPLITK", "splitk", "SPLITK", 1, 64, &GemvChoice::splitk, &MmaChoice::splitk}};
  // A gemv.fused-shaped point (block:rows:unroll:splitk) of family `fam`, at member `point`.
  auto fused_shaped = [&](const std::string& prefix, const std::string& override_key, KnobInPlan in_plan,
                          std::vector<std::string> read, const char* fam, const std::string& when, GemvChoice FastConfig::*point) {
    for (const Field& f : fields)
      out.push_back(bind(Knob(prefix + slot + "." + f.leaf)
                             .range(f.lo, f.hi)
                             .in_plan(in_plan)
                             .override_as(override_key, f.leaf)
                             .read_by(read)
                             .picked_by(picked_as(domain, "gemv", fam, f.param, s.region))
                             .described(slot + " projection's gemv." + fam + " " + f.param + " (" + when + ")"),
                         point, f.gemv));
  };
  fused_shaped("gemv.", slot, kRequired, readers, "fused", "batch 1", s.gemv);
  // A gemv.mma-shaped point (block:mt:unroll:splitk) of family `fam`, at member `point`.
  auto mma_shaped = [&](const std::string& prefix, const std::string& override_key, const char* fam, const std::string& when,
                        MmaChoice FastConfig::*point) {
    for (const Field& f : fields)
      out.push_back(bind(Knob(prefix + slot + "." + f.leaf)
                             .range(f.lo, f.hi)
                             .in_plan(kWithParent)
                             .override_as(override_key, f.mma_part)
                             .read_by({std::string("gemv.") + fam})
                             .picked_by(picked_as(domain, "gemv", fam, f.mma_param, s.region))
                             .described(slot + " projection's gemv." + fam + " " + f.mma_param + " (" + when + ")"),
                         point, f.mma));
  };
  mma_shaped("gemv_mma.", slot + "_mma", "mma", "batches from mma_min_batch on", s.mma);
  if (s.fp8) fused_shaped("gemv_fp8.", slot + "_fp8", kWithParent, {"gemv.fp8"}, "fp8", "FP8 weights, every batch", s.fp8);
  if (s.mma_fp8) mma_shaped("gemv_mma_fp8.", slot + "_mma_fp8", "mma_fp8", "FP8 weights, batches from mma_min_batch on", s.mma_fp8);
  if (s.prefill_algo) {  // a library route: no kernel family reads it
    std::vector<int> ranks;
    for (int r = 0; r < kLtAlgorithms; ++r) ranks.push_back(r);
    out.push_back(bind(Knob("prefill_algo." + slot)
                           .range(-1, kLtAlgorithms - 1)
                           .none_at(-1)
                           .in_plan(kOptional)
                           .picked_by({kLtFamily, "ALGO", s.region, ranks})
                           .described(slot + " projection's GEMM in prompt steps of at least " + std::to_string(kLtFromTokens) +
                                      " tokens: cuBLASLt's heuristic algorithm of this rank (-1: cublasGemmEx)"),
                       s.prefill_algo));
  }
  if (s.prefill_gemm) {  // our own GEMM route: prefill_gemm.<slot>.{route,bn,stages,pipe,load,cluster,sched}, override <slot>_gemm=route:bn:...
    const std::string region = s.region, key = slot + "_gemm";
    auto own = [&](const char* leaf, Knob k, int OwnGemmChoice::*f, const std::string& doc) {
      out.push_back(bind(std::move(k.in_plan(kWithParent).override_as(key, leaf).read_by({"gemm.wgmma", "gemm.mma"})
                                       .described(slot + " projection's GEMM in prompt steps: " + doc)),
                         s.prefill_gemm, f));
    };
    own("route",
        Knob("prefill_gemm." + slot + ".route")
            .one_of({kGemmLibrary, kGemmWgmma, kGemmMma})
            .picked_by({"cuda:gemm.wgmma", kPickedFamily, region, {kGemmWgmma}})
            .picked_by({"cuda:gemm.mma", kPickedFamily, region, {kGemmMma}}),
        &OwnGemmChoice::route, "the library's (0), gemm.wgmma (1) or gemm.mma (2)");
    own("bn",
        Knob("prefill_gemm." + slot + ".bn").one_of({64, 128, 256})
            .picked_by(picked_as(domain, "gemm", "wgmma", "BN", region))
            .picked_by(picked_as(domain, "gemm", "mma", "BN", region)),
        &OwnGemmChoice::bn, "our GEMM's BN");
    own("stages",
        Knob("prefill_gemm." + slot + ".stages").one_of({3, 4, 5})
            .picked_by(picked_as(domain, "gemm", "wgmma", "STAGES", region))
            .picked_by(picked_as(domain, "gemm", "mma", "STAGES", region)),
        &OwnGemmChoice::stages, "our GEMM's STAGES");
    own("pipe", Knob("prefill_gemm." + slot + ".pipe").range(0, 1).picked_by(picked_as(domain, "gemm", "wgmma", "PIPE", region)),
        &OwnGemmChoice::pipe, "gemm.wgmma's PIPE");
    own("load", Knob("prefill_gemm." + slot + ".load").range(0, 1).picked_by(picked_as(domain, "gemm", "wgmma", "LOAD", region)),
        &OwnGemmChoice::load, "gemm.wgmma's LOAD");
    own("cluster",
        Knob("prefill_gemm." + slot + ".cluster").one_of({1, 2}).picked_by(picked_as(domain, "gemm", "wgmma", "CLUSTER", region)),
        &OwnGemmChoice::cluster, "gemm.wgmma's CLUSTER");
    own("sched", Knob("prefill_gemm." + slot + ".sched").range(0, 1).picked_by(picked_as(domain, "gemm", "wgmma", "SCHED", region)),
        &OwnGemmChoice::sched, "gemm.wgmma's SCHED");
  }
}

// A region's own carveout (FastConfig::region_carveout, -1: the step's): plan region_carveout.<region>,
// override carveout.<region>; the decode-step tuning sets it as the region's route's carveout.
K region_carveout_knob(const std::string& region, const std::string& route_region) {
  return {Knob("region_carveout." + region)
              .range(0, 100)
              .none_at(-1)
              .in_plan(kOptional)
              .override_as("carveout." + region)
              .picked_by({"", "smem_carveout", route_region, carveouts()})
              .described("the " + region + " kernels' shared-memory carveout (percent) instead of smem_carveout"),
          [region](const FastConfig& c) {
            auto it = c.region_carveout.find(region);
            return it == c.region_carveout.end() || it->second < 0 ? -1 : it->second;
          },
          [region](FastConfig& c, int v) {
            if (v < 0) c.region_carveout.erase(region);
            else c.region_carveout[region] = v;
          }};
}

}  // namespace

std::vector<BoundKnob<FastConfig>> fast_knob_declarations(const FamilyDomain& domain) {
  std::vector<K> k;
  for (const GemvSlotField& s : kGemvSlots) gemv_knobs(k, s, domain);
  const std::string attn = kAttentionRegion;
  k.push_back(bind(Knob("qkv_post_block").range(32, 1024).in_plan(kRequired).read_by({"qkv_post.fused"})
                       .described("block of the q/k norm, rope and cache-write kernel"),
                   &FastConfig::qkv_post_block));
  k.push_back(bind(Knob("attn_block").range(32, 1024).in_plan(kRequired)
                       .read_by({"attn_decode.fused", "attn_decode.split", "attn_decode.cluster"})
                       .picked_by(picked_as(domain, "attn_decode", "fused", "BLOCK", attn))
                       .picked_by(picked_as(domain, "attn_decode", "cluster", "BLOCK", attn))
                       .picked_by(picked_as(domain, "attn_decode", "split", "BLOCK", attn))  // older records
                       .described("decode attention's block (shrunk until the group's outputs divide among it)"),
                   &FastConfig::attn_block));
  k.push_back(bind(Knob("attn_tile").range(1, 1024).in_plan(kRequired).read_by({"attn_decode.split"})
                       .picked_by(picked_as(domain, "attn_decode", "split", "TILE", attn))
                       .described("attn_decode.split's tile of positions"),
                   &FastConfig::attn_tile));
  k.push_back(bind(Knob("attn_split").range(1, 1 << 20).in_plan(kRequired)
                       .read_by({"attn_decode.fused", "attn_decode.split", "attn_combine.split"})
                       .picked_by(picked_as(domain, "attn_decode", "fused", "SPLIT", attn))
                       .picked_by(picked_as(domain, "attn_decode", "split", "SPLIT", attn))
                       .described("positions per split of the short-context decode attention"),
                   &FastConfig::attn_split));
  k.push_back(bind(Knob("attn_ilp").one_of({1, 4}).in_plan(kOptional).read_by({"attn_decode.fused"})
                       .picked_by(picked_as(domain, "attn_decode", "fused", "ILP", attn))
                       .described("attn_decode.fused's instruction-level parallelism"),
                   &FastConfig::attn_ilp));
  k.push_back(bind(Knob("attn_split_long").range(1, 1 << 20).in_plan(kOptional).read_by({"attn_decode.fused"})
                       .described("positions per split past attn_long_from"),
                   &FastConfig::attn_split_long));
  k.push_back(bind(Knob("attn_long_from").range(0, 1 << 30).in_plan(kOptional).read_by({"attn_decode.fused", "attn_decode.cluster"})
                       .described("positions past which a step runs the long-context attention (0: never)"),
                   &FastConfig::attn_long_from));
  k.push_back(bind(Knob("attn_cluster").one_of({0, 2, 4, 8, 16}).in_plan(kOptional)
                       .read_by({"attn_decode.cluster", "attn_o.cluster", "attn_decode.parts"})
                       .picked_by(picked_as(domain, "attn_decode", "cluster", "CLUSTER", attn))
                       .described("blocks per KV head of the batch-1 short-context cluster attention (0: the splits)"),
                   &FastConfig::attn_cluster));
  k.push_back(bind(Knob("attn_cluster_long").one_of({0, 2, 4, 8, 16}).in_plan(kOptional).read_by({"attn_decode.cluster"})
                       .described("blocks per KV head of the batch-1 cluster attention past attn_long_from (0: the long splits)"),
                   &FastConfig::attn_cluster_long));
  // Batch-1 decode steps as one persistent kernel: on the H200 it won where a layer's weights are
  // large (Qwen3-4B, -6%) and lost where they are small (Llama-3.2-1B, Qwen3-1.7B, +6%:
  // bench/results/2026-12-01-persistent/), so each model measures it.
  k.push_back(bind(Knob("persistent").range(0, 1).none_at(0).in_plan(kOptional).read_by({"decode_layers.persistent"})
                       .tried_per_step({1})
                       .described("batch-1 decode steps as one persistent kernel instead of the kernel chain"),
                   &FastConfig::persistent));
  // The attention and the output projection as one kernel: on the H200 it lost on the target
  // models (+0.9 to +2.0% at W2; two or four clusters per KV head lost more:
  // bench/results/2026-12-01-attn-o/), so only the one-cluster form is measured, where its tiles fit.
  k.push_back(bind(Knob("attn_o").one_of({0, 1, 2, 4}).none_at(0).in_plan(kOptional).read_by({"attn_o.cluster"})
                       .tried_per_step({1})
                       .described("clusters per KV head of the fused attention and output projection (0: two kernels)"),
                   &FastConfig::attn_o));
  k.push_back(bind(Knob("attn_merge_o").range(0, 1).none_at(0).in_plan(kOptional).read_by({"attn_decode.parts", "gemv.merged"})
                       .described("the output projection merges the attention's partials (attn_decode.parts + gemv.merged)"),
                   &FastConfig::attn_merge_o));
  k.push_back(bind(Knob("smem_carveout").range(0, 100).none_at(-1).in_plan(kOptional).tried_per_step(carveouts())
                       .described("every kernel's preferred shared-memory carveout, percent (-1: the driver's choice)"),
                   &FastConfig::smem_carveout));
  for (const GemvSlotField& s : kGemvSlots) k.push_back(region_carveout_knob(s.name, s.region));
  k.push_back(region_carveout_knob(attn, attn));
  k.push_back(bind(Knob("cuda_graph").in_plan(kOptional).described("decode steps replay a captured CUDA graph"), &FastConfig::cuda_graph));
  k.push_back(bind(Knob("pdl").in_plan(kOptional).described("programmatic dependent launch between the step's kernels"), &FastConfig::pdl));
  // The prompt attention's point: searched in a prompt step's attention region (absent from older plans).
  // The search's family is cuda:attn_prefill.pipe with QS as a third parameter: 0 is pipe itself,
  // m > 0 attn_prefill.qs at MT m (the same BLOCK and BK).
  k.push_back(bind(Knob("prefill_flash_block").one_of({64, 128, 256}).in_plan(kOptional).read_by({"attn_prefill.pipe", "attn_prefill.qs"})
                       .picked_by(picked_as(domain, "attn_prefill", "pipe", "BLOCK", attn))
                       .described("attn_prefill.pipe's (or .qs's) BLOCK (16 query rows per warp and m-tile)"),
                   &FastConfig::prefill_flash_block));
  k.push_back(bind(Knob("prefill_flash_bk").one_of({16, 32, 64}).in_plan(kOptional).read_by({"attn_prefill.pipe", "attn_prefill.qs"})
                       .picked_by(picked_as(domain, "attn_prefill", "pipe", "BK", attn))
                       .described("attn_prefill.pipe's (or .qs's) BK (positions per K/V tile)"),
                   &FastConfig::prefill_flash_bk));
  k.push_back(bind(Knob("prefill_flash_qs").one_of({0, 1, 2}).none_at(0).in_plan(kOptional).read_by({"attn_prefill.pipe", "attn_prefill.qs"})
                       .picked_by({"cuda:attn_prefill.pipe", "QS", attn, {0, 1, 2}})
                       .described("the prompt attention with Q in registers (attn_prefill.pipe, 0) or in shared memory with "
                                  "this many 16-row tiles per warp (attn_prefill.qs MT)"),
                   &FastConfig::prefill_flash_qs));
  k.push_back(bind(Knob("prefill_flash_pair").range(0, 1).none_at(0).in_plan(kOptional).read_by({"attn_prefill.pipe", "attn_prefill.qs"})
                       .picked_by(picked_as(domain, "attn_prefill", "pipe", "PAIR", attn))
                       .described("each prompt-attention block runs a costly causal query tile and a cheap one in turn (1) "
                                  "instead of one tile (0)"),
                   &FastConfig::prefill_flash_pair));
  // Developer overrides only (no plan sets them).
  k.push_back(bind(Knob("batched_mma").read_by({"gemv.mma"}).described("batches run gemv.mma where it can"), &FastConfig::batched_mma));
  k.push_back(bind(Knob("mma_min_batch").read_by({"gemv.mma"}).described("the smallest batch that runs gemv.mma"),
                   &FastConfig::mma_min_batch));
  k.push_back(bind(Knob("mma_terms").read_by({"gemv.mma", "gemv.mma_fp8"}).described("gemv.mma's TERMS"), &FastConfig::mma_terms));
  k.push_back(bind(Knob("fp8_batched_mma")
                       .read_by({"gemv.mma_fp8"})
                       .described("FP8 weights at batches from mma_min_batch on run gemv.mma_fp8 (1) instead of gemv.fp8 (0)"),
                   &FastConfig::fp8_batched_mma));
  k.push_back(bind(Knob("fp8_cvt").range(0, 1).read_by({"gemv.fp8", "gemv.mma_fp8"})
                       .described("FP8 GEMVs widen the e4m3 codes by cvt instructions (0) or by bit moves and a bf16x2 "
                                  "multiply (1): the CVT of gemv.fp8 and gemv.mma_fp8"),
                   &FastConfig::fp8_cvt));
  k.push_back(bind(Knob("prefill_flash").range(0, 1).read_by({"attn_prefill.pipe", "qkv_post.rows"})
                       .described("prefill steps run attn_prefill.pipe (1) instead of the decode attention per row (0)"),
                   &FastConfig::prefill_flash));
  k.push_back(bind(Knob("prefill_wgmma").range(0, 1).read_by({"gemm.wgmma"})
                       .described("a prompt step's projection GEMMs run gemm.wgmma (1) instead of cuBLAS (0), on sm_90"),
                   &FastConfig::prefill_wgmma));
  k.push_back(bind(Knob("prefill_wgmma_bn").one_of({64, 128, 256}).read_by({"gemm.wgmma"}).described("gemm.wgmma's BN in prompt steps"),
                   &FastConfig::prefill_wgmma_bn));
  k.push_back(bind(Knob("prefill_wgmma_stages").one_of({3, 4, 5}).read_by({"gemm.wgmma"})
                       .described("gemm.wgmma's STAGES in prompt steps"),
                   &FastConfig::prefill_wgmma_stages));
  k.push_back(bind(Knob("prefill_wgmma_pipe").range(0, 1).read_by({"gemm.wgmma"})
                       .described("gemm.wgmma's consumers keep one stage's wgmma in flight (1) instead of waiting for each (0)"),
                   &FastConfig::prefill_wgmma_pipe));
  k.push_back(bind(Knob("prefill_wgmma_load").range(0, 1).read_by({"gemm.wgmma"})
                       .described("gemm.wgmma's stages filled by one thread's TMA copies (1) instead of a warpgroup's "
                                  "cp.async (0)"),
                   &FastConfig::prefill_wgmma_load));
  k.push_back(bind(Knob("prefill_wgmma_cluster").one_of({1, 2}).read_by({"gemm.wgmma"})
                       .described("gemm.wgmma's CLUSTER: row-tile pairs sharing B by TMA multicast (2, at LOAD 1) or none (1)"),
                   &FastConfig::prefill_wgmma_cluster));
  k.push_back(bind(Knob("prefill_wgmma_sched").range(0, 1).read_by({"gemm.wgmma"})
                       .described("gemm.wgmma's SCHED: persistent blocks, consumers taking tiles in turns (1, at LOAD 1, "
                                  "CLUSTER 1, BN up to 128) or a block per tile (0)"),
                   &FastConfig::prefill_wgmma_sched));
  k.push_back(bind(Knob("prefill_mma").range(0, 1).read_by({"gemm.mma"})
                       .described("a prompt step's projection GEMMs run gemm.mma (1) instead of cuBLAS (0), on sm_80+ "
                                  "where gemm.wgmma does not take them"),
                   &FastConfig::prefill_mma));
  k.push_back(bind(Knob("prefill_mma_bn").one_of({64, 128}).read_by({"gemm.mma"}).described("gemm.mma's BN in prompt steps"),
                   &FastConfig::prefill_mma_bn));
  k.push_back(bind(Knob("prefill_mma_stages").one_of({3, 4}).read_by({"gemm.mma"}).described("gemm.mma's STAGES in prompt steps"),
                   &FastConfig::prefill_mma_stages));
  k.push_back(bind(Knob("prefill_swiglu_epilogue").range(0, 1).read_by({"gemm.wgmma", "gemm.mma"})
                       .described("on our own GEMM route, gate/up and SwiGLU in one launch (1) instead of two GEMMs and "
                                  "swiglu.w16 (0)"),
                   &FastConfig::prefill_swiglu_epilogue));
  k.push_back(bind(Knob("prefill_flash_in_order").range(0, 1).read_by({"attn_prefill.pipe"})
                       .described("attn_prefill.pipe's blocks in row order (1) instead of the last tiles of every head "
                                  "first (0)"),
                   &FastConfig::prefill_flash_in_order));
  k.push_back(bind(Knob("prefill_w16").range(0, 1).read_by({"rms_norm.cast", "swiglu.w16"})
                       .described("prefill GEMMs read 16-bit inputs written by the pass before; residual adds in the GEMMs"),
                   &FastConfig::prefill_w16));
  k.push_back(bind(Knob("prefill_q16").range(0, 1).read_by({"attn_prefill.pipe", "qkv_post.rows"})
                       .described("qkv_post.rows hands attn_prefill.pipe bf16 Q, scaled and rounded (1) or f32 Q (0)"),
                   &FastConfig::prefill_q16));
  // A sparse layer's expert GEMVs' point: the compile times each value in whole decode steps (the
  // experts a step reads depend on the router's picks, which a region's timing would not see).
  k.push_back(bind(Knob("moe_block").one_of({128, 256}).in_plan(kOptional).read_by({"moe_gate_up.gemv", "moe_down.gemv"})
                       .tried_per_step({128, 256})
                       .described("block of a sparse layer's expert GEMVs"),
                   &FastConfig::moe_block));
  k.push_back(bind(Knob("moe_rows").one_of({1, 2, 4}).in_plan(kOptional).read_by({"moe_gate_up.gemv", "moe_down.gemv"})
                       .tried_per_step({1, 2, 4})
                       .described("rows per warp of a sparse layer's expert GEMVs"),
                   &FastConfig::moe_rows));
  k.push_back(bind(Knob("moe_ilp").range(0, 1).read_by({"moe_gate_up.gemv", "moe_down.gemv", "moe_down.split"})
                       .described("a sparse layer's expert GEMVs with more loads in flight and the down projection's "
                                  "picks reduced once (1)"),
                   &FastConfig::moe_ilp));
  k.push_back(bind(Knob("moe_direct").range(0, 1).read_by({"moe_gate_up.gemv", "moe_down.gemv"})
                       .described("a sparse layer's expert GEMVs read their input rows through L1 instead of staging them "
                                  "in shared memory (1)"),
                   &FastConfig::moe_direct));
  k.push_back(bind(Knob("moe_down_split").range(0, 1).read_by({"moe_down.gemv", "moe_down.split"})
                       .described("decode steps run a sparse layer's down projection with a grid row per pick (1)"),
                   &FastConfig::moe_down_split));
  k.push_back(bind(Knob("moe_router_split").range(0, 2).read_by({"moe_router.fused", "moe_router.logits", "moe_route.warp"})
                       .described("a sparse layer's router in one block per token (0) or over blocks of experts, then the "
                                  "picks (1), or with the picks by each token's last block (2)"),
                   &FastConfig::moe_router_split));
  k.push_back(bind(Knob("moe_router_ilp").range(0, 2).read_by({"moe_router.logits"})
                       .described("the split router's loads of an expert's row in flight per lane: one (0), four (1), "
                                  "eight (2)"),
                   &FastConfig::moe_router_ilp));
  k.push_back(bind(Knob("moe_pick_redux").range(0, 1).read_by({"moe_router.logits"})
                       .described("at moe_router_split 2, the picks from probabilities computed once, each round by "
                                  "warp-wide integer reductions (1)"),
                   &FastConfig::moe_pick_redux));
  k.push_back(bind(Knob("moe_router_norm").range(0, 1).read_by({"moe_router.logits"})
                       .described("the split router loads its gamma before waiting and reads the residual row once (1)"),
                   &FastConfig::moe_router_norm));
  k.push_back(bind(Knob("moe_gate_up_occ").range(0, 1).read_by({"moe_gate_up.gemv"})
                       .described("a sparse layer's gate/up GEMV with registers bounded for a full SM of its blocks (1)"),
                   &FastConfig::moe_gate_up_occ));
  k.push_back(bind(Knob("moe_pdl").range(0, 1).read_by({"moe_router.fused", "moe_router.logits", "moe_route.warp",
                                                      "moe_gate_up.gemv", "moe_down.gemv"})
                       .described("decode steps launch a sparse layer's kernels with programmatic dependent launch (1)"),
                   &FastConfig::moe_pdl));
  k.push_back(bind(Knob("moe_early").range(0, 1).read_by({"moe_router.fused", "moe_router.logits", "moe_gate_up.gemv", "moe_down.split"})
                       .described("under moe_pdl, a sparse layer's kernels let the next one launch early and the down "
                                  "projection asks L2 for its rows before waiting (1)"),
                   &FastConfig::moe_early));
  k.push_back(bind(Knob("moe_prefill_grouped").range(0, 1).read_by({"moe_gather.rows", "swiglu.w16", "moe_combine.rows"})
                       .described("prompt steps of at least 64 tokens run a sparse layer's experts as grouped GEMMs (1) "
                                  "instead of the expert GEMVs (0)"),
                   &FastConfig::moe_prefill_grouped));
  k.push_back(bind(Knob("mlp_fused_batch").read_by({"mlp.fused"})
                       .described("batch templates up to this run a layer's MLP as one mlp.fused kernel (0: none)"),
                   &FastConfig::mlp_fused_batch));
  for (auto [part, m] : {std::pair{"block", &MlpChoice::block}, std::pair{"kc", &MlpChoice::kc}, std::pair{"rows", &MlpChoice::rows},
                         std::pair{"unroll", &MlpChoice::unroll}, std::pair{"bps", &MlpChoice::bps}})
    k.push_back(bind(Knob(std::string("mlp.") + part).override_as("mlp", part).read_by({"mlp.fused"})
                         .described(std::string("mlp.fused's ") + part),
                     &FastConfig::mlp, m));
  std::vector<int> long_splits = domain("attn_decode", "cluster", "SPLIT");
  long_splits.insert(long_splits.begin(), 0);
  k.push_back(bind(Knob("attn_cluster_long_split").one_of(long_splits).read_by({"attn_decode.cluster"})
                       .described("rows per block of the first long-context cluster range (0: 256, halved until they fit)"),
                   &FastConfig::attn_cluster_long_split));
  k.push_back(bind(Knob("attn_o_late").one_of({0, 1, 2}).read_by({"attn_o.cluster"})
                       .described("attn_o.cluster's LATE: where its W_o tile is copied"),
                   &FastConfig::attn_o_late));
  for (auto [name, m] : {std::pair{"persistent_block", &FastConfig::persistent_block},
                         std::pair{"persistent_stages", &FastConfig::persistent_stages},
                         std::pair{"persistent_splits", &FastConfig::persistent_splits},
                         std::pair{"persistent_stage_kb", &FastConfig::persistent_stage_kb}})
    k.push_back(bind(Knob(name).read_by({"decode_layers.persistent"}).described(std::string("decode_layers.persistent's ") + name), m));
  k.push_back(bind(Knob("gpu_top_k").read_by({"topk.radix"}).described("top-k sampling selects its candidates on the device"),
                   &FastConfig::gpu_top_k));
  k.push_back(bind(Knob("top_k_block").one_of({256, 512, 1024}).read_by({"topk.radix"}).described("topk.radix's block"),
                   &FastConfig::top_k_block));
  k.push_back(bind(Knob("decode_ahead").described("greedy decode steps are enqueued one ahead of the host"), &FastConfig::decode_ahead));
  k.push_back(bind(Knob("device_chain").described("a chained decode-ahead step takes its inputs from the device"),
                   &FastConfig::device_chain));
  return k;
}

const GemvSlotField& gemv_slot(const std::string& name) {
  for (const GemvSlotField& s : kGemvSlots)
    if (name == s.name) return s;
  throw_internal("fast path", "no GEMV region named " + name);
}

bool valid_carveout_region(const std::string& name) {
  if (name == kAttentionRegion) return true;
  for (const GemvSlotField& s : kGemvSlots)
    if (name == s.name) return true;
  return false;
}

}  // namespace ac::cuda
