#pragma once
// Plan routes for tests of what derives from them (knob values, the cuda_fast block).
#include <map>
#include <optional>
#include <string>

#include "agentcompile/plan/plan.h"

namespace ac::test {

inline PlanRoute plan_route(const std::string& region, const std::string& phase, const std::string& family,
                            std::map<std::string, int> params, std::optional<int> carveout = std::nullopt) {
  PlanRoute r;
  r.region = region;
  r.phase = phase;
  r.family = family;
  r.params = std::move(params);
  r.smem_carveout = carveout;
  return r;
}

}  // namespace ac::test
