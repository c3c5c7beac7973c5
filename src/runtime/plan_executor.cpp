#include "agentcompile/runtime/plan_executor.h"

#include "agentcompile/core/error.h"
#include "agentcompile/tuning/backend.h"
#include "agentcompile/model/fp8_quantize.h"
#include "agentcompile/model/model.h"

namespace ac {

void prepare_model_for_plan(const fs::path& dir, Model& model) {
  const Plan p = Plan::load_choices(dir, "--plan");
  if (p.weights.empty()) return;
  if (model.quant.kind != QuantConfig::Kind::None)
    throw_input("--plan " + dir.string(), "was compiled with --weights " + p.weights + " for a 16-bit model; " +
                                              model.dir.string() + " is already quantized (" + model.quant.method + ")");
  quantize_model_fp8(model, p.weights == "fp8-block", p.lm_head_fp8);
}

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

std::vector<std::string> stale_plan_kernels(const Plan& plan, const Graph& graph) {
  const Backend* b = find_backend(plan.environment.backend);
  return b ? b->stale_plan_kernels(graph, plan) : std::vector<std::string>{};
}

std::string stale_plan_warning(const Plan& plan, const std::vector<std::string>& stale) {
  if (stale.empty()) return "";
  return std::to_string(stale.size()) + " of its " + std::to_string(plan.kernels.size()) +
         " kernels were built from other kernel sources than this engine's (e.g. " + stale.front() +
         "); it runs on this engine's kernels, but its choices were timed on the old ones: recompile it "
         "(`agentcompile compile`) for its timings to hold";
}

}  // namespace ac
