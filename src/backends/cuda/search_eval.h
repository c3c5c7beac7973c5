#pragma once
// The CUDA backend's search: the fast path's parameters (FastConfig) chosen by measurement,
// through the same Evaluator interface and staged validation as the CPU search.
//   GEMV slots (decode regions attn_in -> qkv, attn_out -> o, mlp_in -> gate_up, mlp_out -> down,
//   head -> lm_head): every valid gemv.fused point at batch 1 (or --max-batch), compiled with
//   NVRTC, checked against the f32 CPU composition (RMSNorm prologue, store/residual/SwiGLU/argmax
//   epilogue; 2 seeds, outputs poisoned or residual-seeded), timed as a CUDA graph of 24
//   back-to-back launches over weight copies that defeat the L2 (median of the repeats).
//   attention (decode): BLOCK x SPLIT of attn_decode.fused, the kernel alone at the summary's
//   batch and context (as the executor binds it): checked against the f32 CPU reference (q/k
//   norm, rope, attention with GQA sharing; 3 contexts, outputs and unwritten cache rows poisoned;
//   relative L2 <= 1e-5, the written K/V row <= 1e-2) and timed like the GEMVs, as a CUDA graph of
//   back-to-back launches over KV-cache copies that defeat the L2.
// The fallback of each is FastConfig's default for it. Each evaluator's prepare() compiles all
// the candidates' variants with NVRTC in parallel threads before the first is measured.
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "agentcompile/compiler/search.h"
#include "agentcompile/plan/plan.h"

namespace ac {

struct Model;

struct CudaFastSearch {
  std::deque<RegionWork> works;         // one per searched decode region (owned here)
  std::vector<RegionSearch> searches;   // point into works
  std::vector<std::string> notes;
};

// Empty result with a note when the fast path cannot run the model (fast_path_unsupported).
// The GEMV regions are searched in graph order, then the attention, each until its share of the time left before
// `deadline` (in proportion to its candidates); `on_region(done, total, region)` is called before
// each region (and once more with done == total at the end), `on_candidate` after each candidate.
CudaFastSearch search_cuda_fast(const Model& m, const Graph& g, const FrontResult& front, Advisor& advisor,
                                TuningDb& db, const Environment& env, const SearchOptions& so, int batch,
                                Clock::time_point deadline, const std::function<void(const CandidateOutcome&)>& on_candidate,
                                const std::function<void(size_t, size_t, const std::string&)>& on_region = {});

// The attention region's evaluator (exposed for tests): the fused decode attention kernel at
// `batch` tokens of `context` positions each (their own slots), as the executor binds it.
std::unique_ptr<Evaluator> make_cuda_attention_evaluator(const Graph& g, int batch, int context);

// The fast path's kernel binaries for a plan: every variant it launches (all batch sizes),
// compiled by NVRTC in parallel (the kernel cache first) for `arch`; no GPU needed. BadInput when
// one does not compile.
std::vector<PlanKernelBinary> cuda_plan_kernels(const Graph& g, const KnobValues& fast, const std::string& arch);

// The plan's cuda_fast block from its decode routes: each knob the search picks (fast_knobs.cpp:
// gemv.fused / gemv.mma points by region, attn_decode.fused / .cluster (or .split, in older
// records) parameters, a route's own carveout) from the routes that bind it, the rest FastConfig's
// defaults (a fallback route keeps the default point).
KnobValues cuda_fast_from_routes(const std::vector<PlanRoute>& routes);
// The FastConfig::region_carveout key of a decode region ("attn_in" -> "qkv", ..., "attention");
// "" for a region without one.
std::string carveout_region_of(const std::string& region);

}  // namespace ac
