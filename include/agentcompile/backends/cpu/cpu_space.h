#pragma once
// The CPU backend's families as candidate spaces (tuning/space.h).
#include <string>
#include <vector>

#include "agentcompile/backends/cpu/cpu_families.h"
#include "agentcompile/tuning/space.h"

namespace ac {

struct Graph;
struct Partition;

// CPU family `cf` as a FamilySpace: its constraint must hold for every op shape it would run,
// on the target's host facts (cores, vector width, vector registers).
FamilySpace cpu_family_space(const cpu::CpuFamily& cf, const std::vector<cpu::CpuOpShape>& shapes, const TargetFacts& t,
                             FamilyRoute route, std::vector<std::string> applies_to);

// The CPU families of a region class in a phase (those whose op it runs), finished.
std::vector<FamilySpace> cpu_region_families(const Graph& g, const Partition& part, const RegionSummary& s,
                                            const TargetFacts& target);

}  // namespace ac
