#pragma once
// The candidate spaces the compiler builds: a region's fallback and the families of its backend
// (the generic types are the tuning contract's, tuning/space.h).
#include <string>
#include <vector>

#include "agentcompile/tuning/space.h"

namespace ac {

// Builds the space for a summarised region class on "cpu" or "cuda" (BadInput otherwise).
CandidateSpace build_candidate_space(const Graph& g, const Partition& part, const RegionSummary& s,
                                     const std::string& backend);

}  // namespace ac
