#pragma once
// The fast path's knobs: every FastConfig member declared once (fast_knobs.cpp), with its domain,
// how plan.json's cuda_fast block and the developer override hold it, where the search picks it
// and which kernel families read it. The table is registered as plan block "cuda_fast", so plans
// read it without the plan layer knowing this backend.
#include <functional>
#include <string>
#include <vector>

#include "agentcompile/plan/knobs.h"
#include "backends/cuda/fast_config.h"

namespace ac::cuda {

// A kernel family's parameter domain: (op, family, parameter) -> its values.
using FamilyDomain = std::function<std::vector<int>(const std::string&, const std::string&, const std::string&)>;

// The declarations, in order, with the kernel families' domains (the search's candidates, the
// values attn_cluster_long_split may take) from `domain`; plan.json holds none of those.
std::vector<BoundKnob<FastConfig>> fast_knob_declarations(const FamilyDomain& domain);

// The table with the families' own domains, registered as plan block "cuda_fast" (plan_config.cpp).
const KnobBinding<FastConfig>& fast_knobs();

}  // namespace ac::cuda
