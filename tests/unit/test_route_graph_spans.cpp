// The route graph's fused span edges: a span over mlp_in + mlp_out is taken only when it costs
// less than the separate regions' edges (ties go to the separate edges), a blocked span gives
// way to its next alternative and then to the separate edges, and a span whose search kept its
// fallback adds no edge.
#include <gtest/gtest.h>

#include "agentcompile/compiler/front.h"
#include "agentcompile/compiler/route_graph.h"
#include "agentcompile/compiler/spans.h"

namespace ac {
namespace {

CandidateOutcome ok(const std::string& family, int order, double us, int chunk = 0) {
  CandidateOutcome c;
  c.candidate.family = family;
  if (chunk) c.candidate.params = {{"CHUNK", chunk}};
  c.order = order;
  c.status = "ok";
  c.median_us = us;
  return c;
}

RegionSearch search_of(const RegionWork* w, std::vector<CandidateOutcome> outcomes, size_t winner) {
  RegionSearch s;
  s.work = w;
  s.outcomes = std::move(outcomes);
  s.winner = s.outcomes[winner].candidate;
  s.winner_us = s.outcomes[winner].median_us;
  s.fallback_us = s.outcomes[0].median_us;
  return s;
}

// Two layers of mlp_in (class 0) and mlp_out (class 1): regions 0..3; the decode searches of both
// classes (winners 4 and 3 us per instance, fallbacks 10 and 8) and of the span over each layer.
struct SpanFixture {
  Partition part;
  std::vector<RegionWork> work;
  std::vector<RegionSearch> searches;
  explicit SpanFixture(std::vector<CandidateOutcome> span_outcomes, size_t span_winner = 1) {
    part.regions.resize(4);
    part.classes = {RegionClass{RegionKind::MlpIn, "in", {0, 2}}, RegionClass{RegionKind::MlpOut, "out", {1, 3}}};
    work.resize(3);
    for (size_t i = 0; i < 3; ++i) {
      work[i].class_index = i < 2 ? i : 0;
      work[i].summary.phase = Phase::Decode;
    }
    work[2].span_instances = {{0, 1}, {2, 3}};
    searches.push_back(search_of(&work[0], {ok("cpu:fallback", 0, 10), ok("cpu:linear.blocked", 1, 4)}, 1));
    searches.push_back(search_of(&work[1], {ok("cpu:fallback", 0, 8), ok("cpu:linear.blocked", 1, 3)}, 1));
    searches.push_back(search_of(&work[2], std::move(span_outcomes), span_winner));
    searches.back().separate_us = 7;  // the region winners together (decide_span sets it)
  }
};

std::vector<CandidateOutcome> fused(double winner_us, double alt_us) {
  return {ok("cpu:fallback", 0, 18), ok("cpu:mlp.fused", 1, winner_us, 16), ok("cpu:mlp.fused", 2, alt_us, 32)};
}

size_t span_edges(const RoutePath& p) {
  size_t n = 0;
  for (const RouteEdge* e : p.edges) n += e->span();
  return n;
}

TEST(RouteGraphSpans, ACheaperSpanIsTakenForEveryInstance) {
  SpanFixture f(fused(5, 6));  // 5 < 4 + 3
  RouteGraph rg(f.part, f.searches, 2.0, 1.0, 0.03);
  size_t in_graph = 0;
  for (const auto& e : rg.edges()) in_graph += e.span();
  EXPECT_EQ(in_graph, 4u);  // winner and alternative, two instances
  const RoutePath p = rg.cheapest();
  ASSERT_EQ(p.edges.size(), 2u);
  EXPECT_EQ(span_edges(p), 2u);
  EXPECT_DOUBLE_EQ(p.cost, 2 * 5 * 2.0);  // cost = time x the decode weight
  EXPECT_EQ(RouteGraph::choice(p, 0), nullptr);
  ASSERT_NE(RouteGraph::choice(p, 2), nullptr);
  EXPECT_EQ(RouteGraph::choice(p, 2)->candidate.name(), "cpu:mlp.fused{CHUNK=16}");
  EXPECT_EQ(RouteGraph::choice(p, 2)->from, 0);
  EXPECT_EQ(RouteGraph::choice(p, 2)->to, 2);
  EXPECT_EQ(rg.to_json(p)["path_span_edges"], 2);
}

TEST(RouteGraphSpans, ADearerOrEqualSpanIsNotTaken) {
  for (double us : {7.5, 7.0}) {  // dearer than 4 + 3, and a tie (goes to the separate edges)
    SpanFixture f(fused(us, 7.6));  // the alternative does not beat 7 us by the margin: no edge
    RouteGraph rg(f.part, f.searches, 1.0, 1.0, 0.03);
    const RoutePath p = rg.cheapest();
    EXPECT_EQ(span_edges(p), 0u) << us;
    ASSERT_EQ(p.edges.size(), 4u);
    EXPECT_DOUBLE_EQ(p.cost, 14.0);
    EXPECT_EQ(RouteGraph::choice(p, 2), nullptr);
    EXPECT_EQ(RouteGraph::choice(p, 0)->candidate.family, "cpu:linear.blocked");
    EXPECT_EQ(rg.to_json(p)["span_edges"], 2);
  }
}

TEST(RouteGraphSpans, ABlockedSpanGivesWayToItsAlternativeThenToTheSeparateEdges) {
  SpanFixture f(fused(5, 6));
  RouteGraph rg(f.part, f.searches, 1.0, 1.0, 0.03);
  rg.block(2, "cpu:mlp.fused{CHUNK=16}");
  RoutePath p = rg.cheapest();
  EXPECT_EQ(span_edges(p), 2u);
  EXPECT_EQ(RouteGraph::choice(p, 2)->candidate.name(), "cpu:mlp.fused{CHUNK=32}");
  EXPECT_DOUBLE_EQ(p.cost, 12.0);
  rg.block(2, "cpu:mlp.fused{CHUNK=32}");
  p = rg.cheapest();
  EXPECT_EQ(span_edges(p), 0u);
  EXPECT_DOUBLE_EQ(p.cost, 14.0);
  EXPECT_EQ(RouteGraph::choice(p, 1)->candidate.family, "cpu:linear.blocked");
  EXPECT_EQ(rg.best_edge(2), nullptr);
  ASSERT_NE(rg.best_edge(0), nullptr);
  EXPECT_DOUBLE_EQ(rg.best_edge(0)->time_us, 4.0);
}

TEST(RouteGraphSpans, ASpanThatKeptItsFallbackAddsNoEdge) {
  // The fused candidate beat the separate regions but not the span's own fallback by the
  // margin, so the search kept the fallback: no span edge (the separate edges are its fallback).
  SpanFixture f({ok("cpu:fallback", 0, 5.1), ok("cpu:mlp.fused", 1, 5.0, 16)}, 0);
  RouteGraph rg(f.part, f.searches, 1.0, 1.0, 0.03);
  for (const auto& e : rg.edges()) EXPECT_FALSE(e.span());
  EXPECT_EQ(span_edges(rg.cheapest()), 0u);
}

TEST(RouteGraphSpans, ASpanIsKeptOnlyWhenItBeatsTheSeparateWinnersByTheMargin) {
  // The span search compared the fused candidates with the reference composition (18 us); the
  // route must beat the separate regions' winners (4 + 3 us) by max(margin, noise).
  SpanFixture f(fused(5, 6), 0);
  RegionSearch& s = f.searches[2];
  decide_span(s, 7.0, 0.03);
  EXPECT_EQ(s.winner.name(), "cpu:mlp.fused{CHUNK=16}");
  EXPECT_DOUBLE_EQ(s.winner_us, 5.0);
  EXPECT_EQ(s.decision.rfind("specialised", 0), 0u) << s.decision;
  EXPECT_DOUBLE_EQ(s.separate_us, 7.0);
  s.noise = 0.5;  // 5 us x 1.5 > 7 us: within the noise, not kept
  decide_span(s, 7.0, 0.03);
  EXPECT_EQ(s.winner.family, "cpu:fallback");
  EXPECT_NE(s.decision.find("unprofitable against the separate regions"), std::string::npos) << s.decision;
  RouteGraph rg(f.part, f.searches, 1.0, 1.0, 0.03);
  for (const auto& e : rg.edges()) EXPECT_FALSE(e.span());
  SpanFixture g({ok("cpu:fallback", 0, 18), ok("cpu:mlp.fused", 1, 6.9, 16)}, 0);
  decide_span(g.searches[2], 7.0, 0.03);  // 6.9 us is faster, but not by 3 %
  EXPECT_EQ(g.searches[2].winner.family, "cpu:fallback");
  EXPECT_NE(g.searches[2].decision.find("is 1.4% faster than their winners"), std::string::npos) << g.searches[2].decision;
  SpanFixture slow({ok("cpu:fallback", 0, 18), ok("cpu:mlp.fused", 1, 8.0, 16)}, 0);
  decide_span(slow.searches[2], 7.0, 0.03);  // a slower span says so (not "-12.5% faster")
  EXPECT_NE(slow.searches[2].decision.find("is 12.5% slower than their winners"), std::string::npos)
      << slow.searches[2].decision;
  SpanFixture none({ok("cpu:fallback", 0, 18)}, 0);
  decide_span(none.searches[2], 7.0, 0.03);
  EXPECT_EQ(none.searches[2].decision, "fallback: no correct fused candidate");
}

}  // namespace
}  // namespace ac
