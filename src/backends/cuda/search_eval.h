#pragma once
// The CUDA backend's search: the fast path's parameters (FastConfig) chosen by measurement,
// through the same Evaluator interface and staged validation as the CPU search.
//   GEMV slots (decode regions attn_in -> qkv, attn_out -> o, mlp_in -> gate_up, mlp_out -> down,
//   head -> lm_head): every valid gemv.fused point at batch 1 (or --max-batch), compiled with
//   NVRTC, checked against the f32 CPU composition (RMSNorm prologue, store/residual/SwiGLU/argmax
//   epilogue; 2 seeds, outputs poisoned or residual-seeded), timed as a CUDA graph of 24
//   back-to-back launches over weight copies that defeat the L2 (median of the repeats).
//   attention (decode): BLOCK x SPLIT of attn_decode.fused, each run by a fast executor
//   with that config, checked against the executor with the default config (logits, relative L2
//   <= 1e-2) and timed as whole decode steps at the summary's context.
// The fallback of each is FastConfig's default for it.
#include <deque>
#include <functional>
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
CudaFastSearch search_cuda_fast(const Model& m, const Graph& g, const FrontResult& front, Advisor& advisor,
                                TuningDb& db, const Environment& env, const SearchOptions& so, int batch,
                                Clock::time_point deadline, const std::function<void(const CandidateOutcome&)>& on_candidate);

// The fast path's kernel binaries for a plan: every variant it launches (all batch sizes),
// compiled by NVRTC in parallel (the kernel cache first) for `arch`; no GPU needed. BadInput when
// one does not compile.
std::vector<PlanKernelBinary> cuda_plan_kernels(const Graph& g, const PlanCudaFast& fast, const std::string& arch);

// The plan's cuda_fast block from its decode routes (families cuda:gemv.fused and
// cuda:attn_decode.fused (or .split, in older records); the fallback keeps the default).
PlanCudaFast cuda_fast_from_routes(const std::vector<PlanRoute>& routes);

}  // namespace ac
