#pragma once
// The fast path's FastConfig to and from the plan's PlanCudaFast (plan.json "cuda_fast").
#include <optional>

#include "agentcompile/plan/plan.h"
#include "backends/cuda/fast_executor.h"

namespace ac {

// The plan's parameters; FastConfig's defaults when there is no plan.
cuda::FastConfig fast_config_of(const std::optional<PlanCudaFast>& plan);
PlanCudaFast plan_fast_of(const cuda::FastConfig& c);

}  // namespace ac
