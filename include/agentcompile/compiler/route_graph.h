#pragma once
// The route graph (MetaInfer's costed execution-adaptation graph): per phase, nodes are the
// region boundaries of the model in graph order (node i = before region i), edges are
// implementations of a region instance (or, for fused alternatives, of a span of consecutive
// regions), each with a measured cost under the objective. The plan is the cheapest path per
// phase; a route blocked late (end-to-end stage) is removed and the next cheapest path taken.
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "agentcompile/compiler/search.h"

namespace ac {

struct RouteEdge {
  Phase phase = Phase::Decode;
  int from = 0, to = 1;            // region boundaries; to - from > 1 for a fused span
  size_t search = 0;               // index into the searches (region class and phase), or kUnsearched
  static constexpr size_t kUnsearched = static_cast<size_t>(-1);  // a region the backend does not search
  Candidate candidate;
  double time_us = 0;              // measured per instance (per span for fused edges)
  double cost = 0;                 // time_us x the objective's weight for the phase
  bool fallback = false;
  bool span() const { return to - from > 1; }
};

struct RoutePath {
  std::vector<const RouteEdge*> edges;  // both phases, in node order per phase
  double cost = 0;
};

class RouteGraph {
 public:
  // Edges for every region instance: the search's winner, the correct candidates slower than
  // the winner that still beat the fallback by the margin (repair alternatives), the fallback.
  // A fused span's search (RegionWork::span_instances) adds an edge over each of its instances
  // for its winner and alternatives when its winner is fused (decide_span: it beat the separate
  // regions' winners by the margin); the cheapest path takes it only when it costs less than the
  // separate edges it spans (ties go to the separate edges).
  // Weights: cost = time x weight[phase] (latency: prefill 1, decode = workload tokens;
  // throughput: decode 1 / batch, prefill 0).
  RouteGraph(const Partition& part, const std::vector<RegionSearch>& searches, double decode_weight,
             double prefill_weight, double margin);
  void add_edge(RouteEdge e);  // fused alternatives from a backend's evaluator
  // A blocked (search, candidate name) is never used again.
  void block(size_t search, const std::string& candidate) { blocked_.insert({search, candidate}); }
  bool blocked(size_t search, const std::string& candidate) const { return blocked_.count({search, candidate}) > 0; }
  // The cheapest unblocked path over every phase that has edges (shortest path over the DAG).
  RoutePath cheapest() const;
  // The chosen candidate of a search in a path (first edge of that search).
  static const RouteEdge* choice(const RoutePath& p, size_t search);
  // The cheapest unblocked edge of a search (null when none is left).
  const RouteEdge* best_edge(size_t search) const;
  const std::vector<RouteEdge>& edges() const { return edges_; }
  int nodes() const { return nodes_; }
  Json to_json(const RoutePath& path) const;

 private:
  void add_span_edges(const RegionSearch& s, size_t si, double weight, double margin);
  void add_unsearched_edges(const std::vector<RegionSearch>& searches, const std::vector<size_t>& class_of);
  int nodes_ = 0;
  std::vector<RouteEdge> edges_;
  std::set<std::pair<size_t, std::string>> blocked_;
};

}  // namespace ac
