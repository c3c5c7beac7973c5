#include "backends/cuda/plan_config.h"

#include <map>

#include "agentcompile/backends/cuda/cuda_executor.h"
#include "agentcompile/core/error.h"
#include "backends/cuda/family.h"
#include "backends/cuda/fast_knobs.h"
#include "backends/cuda/nvrtc_jit.h"

namespace ac {

namespace cuda {

const KnobBinding<FastConfig>& fast_knobs() {
  static const KnobBinding<FastConfig>* b = [] {
    const FamilyDomain families = [](const std::string& op, const std::string& name, const std::string& param) {
      for (const ParamDomain& d : find_family(op, name).params)
        if (d.name == param) return d.values;
      throw_internal("fast knobs", op + "." + name + " has no parameter " + param);
    };
    auto* t = new KnobBinding<FastConfig>("cuda_fast", fast_knob_declarations(families));  // never destroyed: plans point at it
    register_knob_table(t->table());
    return t;
  }();
  return *b;
}

namespace {
// Plans read their cuda_fast block through the registered table: register it as the program starts.
[[maybe_unused]] const bool kRegistered = (fast_knobs(), true);
}  // namespace

bool valid_attn_o(int n) { return fast_knobs().table().knob("attn_o").domain.contains(n); }

FastConfig apply_fast_config_override(FastConfig cfg, const std::string& spec) {
  return fast_knobs().apply_overrides(std::move(cfg), spec, "fast config override");
}

}  // namespace cuda

cuda::FastConfig fast_config_of(const std::optional<KnobValues>& plan) {
  return plan ? cuda::fast_knobs().config(*plan) : cuda::FastConfig{};
}

KnobValues plan_fast_of(const cuda::FastConfig& c) { return cuda::fast_knobs().values(c); }

// The plan's kernel list was made from these same variants (cuda_plan_kernels), so a name the
// engine no longer produces or a key that differs means other code than the plan measured.
std::vector<std::string> cuda_stale_plan_kernels(const Graph& g, const Plan& plan) {
  std::vector<std::string> stale;
  if (!plan.cuda_fast || plan.kernels.empty() || g.ops.empty() || g.ops.front().weights.empty()) return stale;
  const DType wt = g.ops.front().weights.at(0)->dtype;
  std::map<std::string, std::string> key;  // variant name -> this engine's source key
  for (const cuda::Variant& v :
       cuda::fast_path_variants(g.config, wt, fast_config_of(plan.cuda_fast), plan.environment.arch, cuda::fast_fp8_scales(g),
                                 cuda::fast_fp8_head(g)))
    key.emplace(v.name(), cuda::jit_key(cuda::JitRequest{v.name(), v.source(), v.arch, {}}));
  for (const PlanKernel& k : plan.kernels) {
    if (k.source_key.empty()) continue;
    auto it = key.find(k.name);
    if (it == key.end() || it->second != k.source_key) stale.push_back(k.name);
  }
  return stale;
}

}  // namespace ac
