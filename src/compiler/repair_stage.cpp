// The repair stage: the route graph's cheapest path as a plan, checked end to end against the
// reference backend; a failing plan is repaired (the routes that fail alone blocked, or every
// specialised route when only a combination fails) until it passes; then the plan is profiled
// and guarded against being slower than every region's fallback.
#include <cstdio>
#include <set>
#include <utility>

#include "agentcompile/core/error.h"
#include "compiler/compile_run.h"

namespace ac {

namespace {

// Regions are timed alone (or in short chains), so a plan of searched routes can still run
// slower end to end than every region's fallback: the all-fallback plan (on the CUDA backend
// the fast path's default points; on the CPU backend the reference backend itself) is checked
// and profiled after the plan, alternating with it three times; if the searched plan's median
// is slower by more than the selection margin, every specialised route is blocked and the
// fallbacks are kept, each listed as a repair with the time lost. (A CPU compile once wrote a
// plan 0.55x the reference's speed without a word.) On the CPU backend these side-by-side
// profiles are also the end-to-end stage's figures: the plan's and the reference's, taken at
// one moment, so speedup_vs_reference compares like with like even on a loaded machine.
// Returns report.json's "fallback_guard".
Json guard_against_fallbacks(CompileRun& r) {
  const CompileOptions& o = r.o;
  const std::vector<RegionSearch>& searches = r.searches;
  const double margin = r.so.margin;
  std::vector<size_t> specialised;
  for (size_t si = 0; si < searches.size(); ++si)
    if (const RouteEdge* e = RouteGraph::choice(r.path, si); e && !e->fallback) specialised.push_back(si);
  if (specialised.empty()) return {{"status", "every region on its fallback"}};
  const std::string fallbacks = o.backend == "cpu" ? "the reference backend (every region's fallback)" : "every region's fallback";
  RouteGraph fb = *r.rg;
  for (const RouteEdge& e : fb.edges())
    if (!e.fallback) fb.block(e.search, e.candidate.name());
  const RoutePath fpath = fb.cheapest();
  BuiltPlan fbuilt = plan_of(r.m, r.g, r.front.partition, searches, fpath, r.env, o, r.hash);
  E2e fcheck = r.e2e->run(fbuilt.plan, false);
  if (!fcheck.ok) return {{"status", "the fallback plan failed the end-to-end check: " + fcheck.reason}};
  const SideBySide sbs = side_by_side(*r.e2e, r.g, r.built.plan, fbuilt.plan, o);
  const double plan_us = sbs.a.cost_us, fallback_us = sbs.b.cost_us;
  const std::string source = "profiled now, alternating with the plan (median of 3)";
  Json j = {{"plan_us", plan_us}, {"fallback_us", fallback_us}, {"margin", margin}, {"fallback_source", source}};
  take_profile(fcheck, sbs.b);
  if (!(fallback_us > 0) || !sbs.a_slower_beyond(margin)) {
    if (o.backend == "cpu") {  // the reference backend's figures of the same moment
      take_profile(r.check, sbs.a);
      r.check.ref_prefill_ms = sbs.b.prefill_ms;
      r.check.ref_decode_ms = sbs.b.decode_ms;
      r.check.ref_per_token_us = sbs.b.per_token_us;
      r.check.ref_cost_us = sbs.b.cost_us;
      r.check.ref_source = "the reference backend (every region's fallback), " + source;
    }
    j["status"] = "searched routes kept";
    return j;
  }
  char why[400];
  std::snprintf(why, sizeof why,
                "end-to-end profile: the searched routes ran %.1f%% slower than %s (%.1f vs %.1f us under the %s "
                "objective, beyond the margin of %.1f%%)",
                100 * (plan_us / fallback_us - 1), fallbacks.c_str(), plan_us, fallback_us, o.objective.c_str(), 100 * margin);
  const RoutePath before = r.path;
  std::vector<std::pair<size_t, const RouteEdge*>> old;
  for (size_t si : specialised) {
    old.emplace_back(si, RouteGraph::choice(before, si));
    r.rg->block(si, old.back().second->candidate.name());
  }
  r.path = r.rg->cheapest();
  for (const auto& [si, was] : old) r.repairs.push_back(repair_of(r.front.partition, searches[si], was, before, r.path, why));
  r.built = std::move(fbuilt);
  r.check = fcheck;
  j["status"] = "fallbacks kept";
  j["reason"] = why;
  return j;
}

}  // namespace

void run_repair_stage(CompileRun& r) {
  const CompileOptions& o = r.o;
  const std::vector<RegionSearch>& searches = r.searches;
  const double dw = o.objective == "latency" ? double(o.workload_decode_tokens) : 1.0 / o.max_batch;
  const double pw = o.objective == "latency" ? 1.0 : 0.0;
  r.rg.emplace(r.front.partition, searches, dw, pw, r.so.margin);
  r.path = r.rg->cheapest();
  r.progress("end-to-end check");
  r.built = plan_of(r.m, r.g, r.front.partition, searches, r.path, r.env, o, r.hash);
  r.check = r.e2e->run(r.built.plan, false);
  size_t rounds = 0;
  std::set<std::pair<size_t, std::string>> passed_alone;  // routes already checked alone
  while (!r.check.ok) {
    // Every round blocks at least one edge of the path, so the edges bound the rounds.
    if (++rounds > r.rg->edges().size() + 1) throw_internal("compile", "repair did not converge: " + r.check.reason);
    // Find the routes that fail alone (every other route on its fallback) and block them; out
    // of budget, block every specialised route at once (the fallback plan is the reference).
    const bool out_of_budget = Clock::now() > r.deadline;
    std::vector<size_t> culprits;
    for (size_t si = 0; si < searches.size() && !out_of_budget; ++si) {
      const RouteEdge* e = RouteGraph::choice(r.path, si);
      if (!e || e->fallback || passed_alone.count({si, e->candidate.name()})) continue;
      Plan single = r.built.plan;
      for (size_t k = 0; k < single.routes.size(); ++k)
        if (r.built.search_of_route[k] != si) {
          single.routes[k].family = searches[r.built.search_of_route[k]].outcomes.front().candidate.family;
          single.routes[k].route = "fallback";
          single.routes[k].params.clear();
          single.routes[k].ops.clear();
        }
      r.backend.bind_routes(r.g, single);
      if (!r.e2e->run(single, false).ok) culprits.push_back(si);
      else passed_alone.insert({si, e->candidate.name()});
    }
    if (culprits.empty())  // only a combination fails (or no budget): block every specialised route
      for (size_t si = 0; si < searches.size(); ++si)
        if (const RouteEdge* e = RouteGraph::choice(r.path, si); e && !e->fallback) culprits.push_back(si);
    std::vector<std::pair<size_t, const RouteEdge*>> old;
    for (size_t si : culprits) {
      old.emplace_back(si, RouteGraph::choice(r.path, si));
      r.rg->block(si, old.back().second->candidate.name());
    }
    const RoutePath before = r.path;
    r.path = r.rg->cheapest();
    for (const auto& [si, was] : old)
      r.repairs.push_back(repair_of(r.front.partition, searches[si], was, before, r.path,
                                    "end-to-end: " + r.check.reason +
                                        (out_of_budget ? " (budget exhausted: every specialised route blocked)" : "")));
    r.built = plan_of(r.m, r.g, r.front.partition, searches, r.path, r.env, o, r.hash);
    r.check = r.e2e->run(r.built.plan, false);
  }
  r.progress("end-to-end profile");
  {
    auto ex = make_plan_executor(r.built.plan, r.g, r.e2e->limits());
    r.e2e->profile(*ex, r.check);
  }
  r.fallback_guard = guard_against_fallbacks(r);
}

}  // namespace ac
