// The route graph and its cheapest path (route_graph.h).
#include "agentcompile/compiler/route_graph.h"

#include <cmath>
#include <limits>
#include <map>

#include "agentcompile/core/error.h"

namespace ac {

RouteGraph::RouteGraph(const Partition& part, const std::vector<RegionSearch>& searches, double decode_weight,
                       double prefill_weight, double margin) {
  nodes_ = int(part.regions.size()) + 1;
  // Region index -> its class.
  std::vector<size_t> class_of(part.regions.size(), 0);
  for (size_t c = 0; c < part.classes.size(); ++c)
    for (int m : part.classes[c].members) class_of[size_t(m)] = c;
  for (size_t si = 0; si < searches.size(); ++si) {
    const RegionSearch& s = searches[si];
    const Phase ph = s.work->summary.phase;
    const double w = ph == Phase::Decode ? decode_weight : prefill_weight;
    if (s.work->is_span()) {
      add_span_edges(s, si, w, margin);
      continue;
    }
    std::vector<const CandidateOutcome*> alts;
    for (const CandidateOutcome* c : s.ranked())
      if (c->candidate.name() == s.winner.name()) alts.insert(alts.begin(), c);
    for (const CandidateOutcome* c : s.ranked()) {
      const bool is_fb = c->order == 0;
      if (is_fb || c->candidate.name() == s.winner.name()) continue;
      if (c->median_us >= s.winner_us && s.fallback_us >= c->median_us * (1 + margin)) alts.push_back(c);
    }
    if (s.winner.name() != s.outcomes.front().candidate.name()) alts.push_back(&s.outcomes.front());
    for (size_t r = 0; r < part.regions.size(); ++r) {
      if (class_of[r] != s.work->class_index) continue;
      for (const CandidateOutcome* c : alts) {
        RouteEdge e;
        e.phase = ph;
        e.from = int(r);
        e.to = int(r) + 1;
        e.search = si;
        e.candidate = c->candidate;
        e.time_us = c->median_us;
        e.cost = c->median_us * w;
        e.fallback = c->order == 0;
        edges_.push_back(std::move(e));
      }
    }
  }
  add_unsearched_edges(searches, class_of);
}

// A fused span's edges, one set per instance (from its first region to after its last): the
// span's winner when it is a fused candidate (decide_span), and the correct fused candidates
// slower than it that still beat the separate regions' winners by the margin (repair
// alternatives). No fallback edge: the span's fallback is the separate regions' edges.
void RouteGraph::add_span_edges(const RegionSearch& s, size_t si, double weight, double margin) {
  std::vector<const CandidateOutcome*> alts;
  for (const CandidateOutcome* c : s.ranked()) {
    if (c->order == 0) continue;
    const bool winner = c->candidate.name() == s.winner.name();
    if (winner || (c->median_us >= s.winner_us && s.separate_us >= c->median_us * (1 + margin)))
      alts.insert(winner ? alts.begin() : alts.end(), c);
  }
  if (s.winner.name() == s.outcomes.front().candidate.name()) alts.clear();  // no fused route kept
  for (const auto& inst : s.work->span_instances)
    for (const CandidateOutcome* c : alts) {
      RouteEdge e;
      e.phase = s.work->summary.phase;
      e.from = inst.front();
      e.to = inst.back() + 1;
      e.search = si;
      e.candidate = c->candidate;
      e.time_us = c->median_us;
      e.cost = c->median_us * weight;
      add_edge(std::move(e));
    }
}

// A region a backend does not search in a phase (the CUDA fast path's embedding gather, say)
// keeps its fixed implementation: a zero-cost edge, so the path still crosses it. Regions that
// were searched and whose every candidate is blocked get no such edge: that stays a failure.
void RouteGraph::add_unsearched_edges(const std::vector<RegionSearch>& searches, const std::vector<size_t>& class_of) {
  std::map<Phase, std::vector<bool>> covered;
  for (const auto& s : searches) {
    if (s.work->is_span()) continue;  // a span never replaces a region's own edges
    auto& cov = covered.try_emplace(s.work->summary.phase, std::vector<bool>(size_t(nodes_ - 1), false)).first->second;
    for (size_t r = 0; r < class_of.size(); ++r)
      if (class_of[r] == s.work->class_index) cov[r] = true;
  }
  for (auto& [ph, cov] : covered)
    for (int r = 0; r < nodes_ - 1; ++r)
      if (!cov[size_t(r)]) {
        RouteEdge e;
        e.phase = ph;
        e.from = r;
        e.to = r + 1;
        e.search = RouteEdge::kUnsearched;
        e.candidate.family = "unsearched";
        e.fallback = true;
        edges_.push_back(std::move(e));
      }
}

void RouteGraph::add_edge(RouteEdge e) {
  if (e.from < 0 || e.to <= e.from || e.to > nodes_ - 1) throw_internal("route graph", "edge outside the graph");
  edges_.push_back(std::move(e));
}

RoutePath RouteGraph::cheapest() const {
  RoutePath path;
  for (Phase ph : {Phase::Decode, Phase::Prefill}) {
    // Edges leave lower nodes for higher ones: one pass in node order is the shortest path.
    std::vector<double> dist(size_t(nodes_), std::numeric_limits<double>::infinity());
    std::vector<const RouteEdge*> via(size_t(nodes_), nullptr);
    std::map<int, std::vector<const RouteEdge*>> out;
    bool any = false;
    for (const auto& e : edges_)
      if (e.phase == ph && !blocked(e.search, e.candidate.name())) {
        out[e.from].push_back(&e);
        any = true;
      }
    if (!any) continue;
    dist[0] = 0;
    for (int n = 0; n < nodes_; ++n) {
      if (!std::isfinite(dist[size_t(n)])) continue;
      for (const RouteEdge* e : out[n]) {
        // Strict: the first listed edge wins ties, and on a tie between a span and the separate
        // edges (reached later, from a node inside the span) the separate edges win.
        const double d = dist[size_t(n)] + e->cost;
        const RouteEdge* held = via[size_t(e->to)];
        if (d < dist[size_t(e->to)] || (d == dist[size_t(e->to)] && held && held->span() && !e->span())) {
          dist[size_t(e->to)] = d;
          via[size_t(e->to)] = e;
        }
      }
    }
    if (!std::isfinite(dist.back())) throw_internal("route graph", "no path through the " + std::string(phase_name(ph)) + " regions");
    std::vector<const RouteEdge*> rev;
    for (int n = nodes_ - 1; n > 0;) {
      rev.push_back(via[size_t(n)]);
      n = via[size_t(n)]->from;
    }
    path.edges.insert(path.edges.end(), rev.rbegin(), rev.rend());
    path.cost += dist.back();
  }
  return path;
}

const RouteEdge* RouteGraph::best_edge(size_t search) const {
  const RouteEdge* best = nullptr;
  for (const auto& e : edges_)
    if (e.search == search && !blocked(e.search, e.candidate.name()) && (!best || e.cost < best->cost)) best = &e;
  return best;
}

const RouteEdge* RouteGraph::choice(const RoutePath& p, size_t search) {
  for (const RouteEdge* e : p.edges)
    if (e->search == search) return e;
  return nullptr;
}

Json RouteGraph::to_json(const RoutePath& path) const {
  size_t unblocked = 0, spans = 0, spans_taken = 0;
  for (const auto& e : edges_) {
    unblocked += blocked(e.search, e.candidate.name()) ? 0 : 1;
    spans += e.span();
  }
  for (const RouteEdge* e : path.edges) spans_taken += e->span();
  Json blocked = Json::array();
  for (const auto& [s, name] : blocked_) blocked.push_back({{"search", s}, {"candidate", name}});
  return {{"nodes", nodes_}, {"edges", edges_.size()}, {"unblocked_edges", unblocked}, {"blocked", blocked},
          {"path_cost_us", path.cost}, {"path_edges", path.edges.size()}, {"span_edges", spans},
          {"path_span_edges", spans_taken}};
}

}  // namespace ac
