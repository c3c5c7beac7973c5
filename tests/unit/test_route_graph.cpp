// The route graph's cheapest path across regions a backend does not search (the CUDA fast path
// leaves the embedding gather fixed), and the failure when a searched region has no route left.
#include <gtest/gtest.h>

#include "agentcompile/compiler/front.h"
#include "agentcompile/compiler/route_graph.h"
#include "agentcompile/core/error.h"

namespace ac {
namespace {

CandidateOutcome ok(const std::string& family, int order, double us) {
  CandidateOutcome c;
  c.candidate.family = family;
  c.order = order;
  c.status = "ok";
  c.median_us = us;
  return c;
}

struct Fixture {
  Partition part;
  std::vector<RegionWork> work;
  std::vector<RegionSearch> searches;
  // Regions: embed (class 0), attn_in (class 1), head (class 2); decode searches for 1 and 2.
  Fixture() {
    for (int r = 0; r < 3; ++r) {
      part.regions.push_back(Region{});
      part.classes.push_back(RegionClass{RegionKind::Embed, "k" + std::to_string(r), {r}});
    }
    work.resize(2);
    for (size_t i = 0; i < 2; ++i) {
      work[i].class_index = i + 1;
      work[i].summary.phase = Phase::Decode;
    }
    for (size_t i = 0; i < 2; ++i) {
      RegionSearch s;
      s.work = &work[i];
      s.outcomes = {ok("cuda:fallback", 0, 10.0), ok("cuda:gemv.fused", 1, 4.0)};
      s.winner = s.outcomes[1].candidate;
      s.winner_us = 4.0;
      s.fallback_us = 10.0;
      searches.push_back(std::move(s));
    }
  }
};

TEST(RouteGraph, CrossesUnsearchedRegionsAtNoCost) {
  Fixture f;
  RouteGraph rg(f.part, f.searches, 1.0, 1.0, 0.03);
  const RoutePath p = rg.cheapest();
  ASSERT_EQ(p.edges.size(), 3u);
  EXPECT_EQ(p.edges[0]->search, RouteEdge::kUnsearched);
  EXPECT_DOUBLE_EQ(p.cost, 8.0);
  ASSERT_NE(RouteGraph::choice(p, 0), nullptr);
  EXPECT_EQ(RouteGraph::choice(p, 0)->candidate.family, "cuda:gemv.fused");
}

TEST(RouteGraph, ASearchedRegionWithEveryRouteBlockedHasNoPath) {
  Fixture f;
  RouteGraph rg(f.part, f.searches, 1.0, 1.0, 0.03);
  for (const auto& e : rg.edges())
    if (e.search == 1) rg.block(1, e.candidate.name());
  EXPECT_THROW(rg.cheapest(), Error);
}

}  // namespace
}  // namespace ac
