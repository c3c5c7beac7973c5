#pragma once
// The CUDA backend's executor: weights uploaded once in their stored dtype, f32 activations and
// KV cache in device memory, every op a JIT-compiled kernel (reference families) and the linear
// layers on cuBLAS (or the reference kernel). No CUDA headers here.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agentcompile/ir/graph.h"
#include "agentcompile/plan/plan.h"
#include "agentcompile/tuning/executor.h"

namespace ac {

struct CudaExecutorOptions {
  // "fast": fused decode kernels + CUDA graphs (bf16 KV cache), cuBLAS prefill;
  // "library": cuBLAS linears + reference kernels (f32 KV cache);
  // "reference": reference kernels only; "auto": fast where the model allows it, else library.
  std::string route = "auto";
  // The fast path's parameters from a compiled plan (route "fast"); defaults when absent.
  std::optional<KnobValues> fast;
  // Kernel binaries shipped with the plan (bytes loaded by Plan::load): loaded instead of
  // compiled where their source key still matches this engine's (kernel_loader.h).
  std::vector<PlanKernel> kernels;
  // The fast path's device weights, shared with the executors of the same graph built before or
  // after this one (ExecutorShare); null: this executor uploads its own.
  ExecutorShare* share = nullptr;
};

// True when a driver and a GPU are usable (why not in *why_not otherwise).
bool cuda_available(std::string* why_not = nullptr);
std::unique_ptr<Executor> make_cuda_executor(const Graph& graph, const ExecutorLimits& limits,
                                             const CudaExecutorOptions& opts = {});

// The kernels of a fast-path plan whose source key is not this engine's for the same variant
// (the kernel templates changed since the plan was compiled) or that this engine no longer
// launches for the plan's parameters: the plan's choices were measured on other code (a plan
// tuned before a kernel change ran 7.5% slower after it: bench/results/2026-12-01-stage-x-vector/).
// Kernels without a key (older plans) are not judged. Host work only: no GPU needed.
std::vector<std::string> cuda_stale_plan_kernels(const Graph& graph, const Plan& plan);

}  // namespace ac
