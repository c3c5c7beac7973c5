#pragma once
// The fast path's FastConfig to and from the plan's cuda_fast values, through its knob table
// (fast_knobs.h).
#include <optional>

#include "agentcompile/plan/plan.h"
#include "backends/cuda/fast_executor.h"

namespace ac {

// The plan's parameters; FastConfig's defaults when there is no plan.
cuda::FastConfig fast_config_of(const std::optional<KnobValues>& plan);
// The plan knobs of `c` (a knob at its "none", e.g. smem_carveout -1, left out).
KnobValues plan_fast_of(const cuda::FastConfig& c);

}  // namespace ac
