#pragma once
// From the route graph's cheapest path to a plan: one route per search the path uses, bound by
// the backend (its parameters from the routes); and what a repair (an edge blocked after the
// end-to-end check) cost.
#include <string>
#include <vector>

#include "agentcompile/compiler/compile.h"
#include "agentcompile/compiler/route_graph.h"
#include "agentcompile/compiler/search.h"
#include "agentcompile/core/json.h"
#include "agentcompile/ir/graph.h"
#include "agentcompile/model/model.h"
#include "agentcompile/plan/plan.h"
#include "agentcompile/tuning/regions.h"

namespace ac {

// "mlp_in+mlp_out" for a span search, the region kind otherwise.
std::string search_label(const Partition& part, const RegionSearch& s);

// A plan and, per route, the search it came from (the repair loop checks routes one search at a time).
struct BuiltPlan {
  Plan plan;
  std::vector<size_t> search_of_route;
};

// One route per search the path uses: a region class's route lists the instances the path runs
// on its own edges (those inside a taken fused span are the span's), a span's route the
// instances the path fuses (both regions of each); a span the path does not take, or a region
// class every instance of which it fuses, has no route.
BuiltPlan plan_of(const Model& m, const Graph& g, const Partition& part, const std::vector<RegionSearch>& searches,
                  const RoutePath& path, const Environment& env, const CompileOptions& o, const std::string& hash);

// report.json's "repairs" entry.
struct Repair {
  std::string region, phase, blocked, replacement, reason;
  double time_lost_us = 0;
  Json to_json() const;
};

// The repair of a blocked edge: what the new path runs over the regions it covered and the time
// lost per step there. The window grows to whole edges of both paths (a fused span replaced by
// the separate regions, or a region edge by a span over it and its neighbour), so both sums
// cover the same regions of one instance.
Repair repair_of(const Partition& part, const RegionSearch& s, const RouteEdge* was, const RoutePath& before,
                 const RoutePath& after, const std::string& reason);

}  // namespace ac
