#include "compiler/plan_assembly.h"

#include <map>
#include <utility>

#include "agentcompile/tuning/backend.h"

namespace ac {

namespace {

// Graph op names a candidate of `s` runs in the given regions: its family's steps (a fused span:
// every step), without the KV write half of attention (it belongs to attn_in, not a family step).
std::vector<std::string> ops_of(const Graph& g, const Partition& part, const RegionSearch& s, const Candidate& c,
                                const std::vector<int>& regions) {
  std::vector<std::string> ops;
  const FamilySpace* f = s.work->space.find(c.family);
  // The CPU executor binds ops; the CUDA fast path takes its parameters from cuda_fast.
  if (!f || f->route == FamilyRoute::Fallback || s.work->space.backend != "cpu") return ops;
  for (int m : regions)
    for (const RegionStep& st : part.regions[size_t(m)].steps) {
      if (st.role == StepRole::KvWrite) continue;
      const std::string& name = g.ops[size_t(st.op)].name;
      if (f->route == FamilyRoute::Fused) {
        ops.push_back(name);
        continue;
      }
      for (const auto& a : f->applies_to)
        if (name == a || (name.size() > a.size() && name.compare(name.size() - a.size(), a.size(), a) == 0 &&
                          name[name.size() - a.size() - 1] == '.'))
          ops.push_back(name);
    }
  return ops;
}

}  // namespace

std::string search_label(const Partition& part, const RegionSearch& s) {
  if (!s.work->is_span()) return std::string(region_kind_name(s.work->summary.kind));
  std::string name;
  for (int r : s.work->span_instances.front()) name += (name.empty() ? "" : "+") + std::string(region_kind_name(part.regions[size_t(r)].kind));
  return name;
}

BuiltPlan plan_of(const Model& m, const Graph& g, const Partition& part, const std::vector<RegionSearch>& searches,
                  const RoutePath& path, const Environment& env, const CompileOptions& o, const std::string& hash) {
  BuiltPlan b;
  Plan& p = b.plan;
  p.model_hash = hash;
  p.model_name = m.dir.filename().string();
  if (p.model_name.empty()) p.model_name = m.dir.parent_path().filename().string();
  p.architecture = std::string(arch_name(m.config.arch));
  p.environment = env;
  p.objective = o.objective;
  p.max_batch = o.max_batch;
  std::map<std::pair<Phase, int>, bool> fused;  // regions a span edge of the path covers
  for (const RouteEdge* e : path.edges)
    if (e->span())
      for (int r = e->from; r < e->to; ++r) fused[{e->phase, r}] = true;
  for (size_t si = 0; si < searches.size(); ++si) {
    const RegionSearch& s = searches[si];
    const Phase ph = s.work->summary.phase;
    std::vector<const RouteEdge*> taken;
    for (const RouteEdge* e : path.edges)
      if (e->search == si) taken.push_back(e);
    std::vector<int> regions;
    for (const RouteEdge* e : taken)
      for (int r = e->from; r < e->to; ++r) regions.push_back(r);
    if (taken.empty()) {
      if (s.work->is_span()) continue;
      bool all_fused = true;
      for (int r : part.classes[s.work->class_index].members) {
        regions.push_back(r);
        all_fused = all_fused && fused.count({ph, r});
      }
      if (all_fused && !regions.empty()) continue;
    }
    const Candidate c = taken.empty() ? s.outcomes.front().candidate : taken.front()->candidate;
    PlanRoute r;
    r.region = search_label(part, s);
    r.phase = std::string(phase_name(ph));
    r.signature = s.work->summary.signature;
    for (int x : regions) r.instances.push_back(part.regions[size_t(x)].name);
    r.family = c.family;
    const FamilySpace* f = s.work->space.find(c.family);
    r.route = f ? std::string(family_route_name(f->route)) : "fallback";
    r.params = c.params;
    r.ops = ops_of(g, part, s, c, regions);
    r.time_us = taken.empty() ? s.fallback_us : taken.front()->time_us;
    r.fallback_us = s.fallback_us;
    p.routes.push_back(std::move(r));
    b.search_of_route.push_back(si);
  }
  if (const Backend* be = find_backend(env.backend)) be->bind_routes(g, p);
  return b;
}

Json Repair::to_json() const {
  return {{"region", region}, {"phase", phase}, {"blocked", blocked}, {"replacement", replacement},
          {"reason", reason}, {"time_lost_us", time_lost_us}};
}

Repair repair_of(const Partition& part, const RegionSearch& s, const RouteEdge* was, const RoutePath& before,
                 const RoutePath& after, const std::string& reason) {
  int a = was->from, b = was->to;
  for (bool grown = true; grown;) {
    grown = false;
    for (const RoutePath* p : {&before, &after})
      for (const RouteEdge* e : p->edges)
        if (e->phase == was->phase && e->from < b && e->to > a && (e->from < a || e->to > b)) {
          a = std::min(a, e->from);
          b = std::max(b, e->to);
          grown = true;
        }
  }
  auto within = [&](const RoutePath& p, double* us) {
    std::string names;
    for (const RouteEdge* e : p.edges)
      if (e->phase == was->phase && e->from >= a && e->to <= b) {
        *us += e->time_us;
        names += (names.empty() ? "" : " + ") + e->candidate.name();
      }
    return names;
  };
  double before_us = 0, after_us = 0;
  within(before, &before_us);
  Repair rp;
  rp.region = search_label(part, s);
  rp.phase = std::string(phase_name(was->phase));
  rp.blocked = was->candidate.name();
  rp.replacement = within(after, &after_us);
  rp.reason = reason;
  rp.time_lost_us = after_us - before_us;
  return rp;
}

}  // namespace ac
