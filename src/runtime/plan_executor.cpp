#include "agentcompile/runtime/plan_executor.h"

#include "agentcompile/backends/cpu/cpu_executor.h"
#include "agentcompile/core/error.h"
#include "agentcompile/model/model.h"
#ifdef AGENTCOMPILE_HAVE_CUDA
#include "agentcompile/backends/cuda/cuda_executor.h"
#endif

namespace ac {

Plan load_plan_for(const fs::path& dir, const Model& model, const std::string& backend_flag, PlanKernels kernels) {
  Plan p = Plan::load(dir, kernels);
  const std::string subject = "--plan " + dir.string();
  if (!backend_flag.empty() && backend_flag != "auto" && backend_flag != p.environment.backend)
    throw_input(subject, "is a " + p.environment.backend + " plan; --backend " + backend_flag + " contradicts it");
  Environment here;
  try {
    here = current_environment(p.environment.backend);
  } catch (const Error& e) {
    throw_input(subject, "was compiled for " + p.environment.backend + " (" + p.environment.device + "), which is not usable here: " + e.reason());
  }
  check_plan_usable(p, dir, model_hash(model), here);
  return p;
}

std::unique_ptr<Executor> make_plan_executor(const Plan& plan, const Graph& graph, const ExecutorLimits& limits,
                                             ExecutorShare* share) {
  if (plan.environment.backend == "cpu") return make_cpu_executor(graph, limits, &plan);
#ifdef AGENTCOMPILE_HAVE_CUDA
  CudaExecutorOptions o;
  o.route = plan.cuda_fast ? "fast" : "library";
  o.fast = plan.cuda_fast;
  for (const PlanKernel& k : plan.kernels)  // only binaries read from the plan folder (none when rebuilding)
    if (!k.bytes.empty()) o.kernels.push_back(k);
  o.share = share;
  return make_cuda_executor(graph, limits, o);
#else
  (void)share;
  throw_input("--plan", "is a CUDA plan and this build has no CUDA backend");
#endif
}

std::vector<std::string> stale_plan_kernels(const Plan& plan, const Graph& graph) {
#ifdef AGENTCOMPILE_HAVE_CUDA
  if (plan.environment.backend == "cuda") return cuda_stale_plan_kernels(graph, plan);
#endif
  (void)plan;
  (void)graph;
  return {};
}

std::string stale_plan_warning(const Plan& plan, const std::vector<std::string>& stale) {
  if (stale.empty()) return "";
  return std::to_string(stale.size()) + " of its " + std::to_string(plan.kernels.size()) +
         " kernels were built from other kernel sources than this engine's (e.g. " + stale.front() +
         "); it runs on this engine's kernels, but its choices were timed on the old ones: recompile it "
         "(`agentcompile compile`) for its timings to hold";
}

}  // namespace ac
