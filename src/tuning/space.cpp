// Candidates and their enumeration: names, lookups, and the valid bindings of a family within
// (possibly narrowed) domains. Apart from the space building, which needs the graph and the
// backends' families, so that advice validation can be linked on its own (fuzz/).
#include <algorithm>

#include "agentcompile/tuning/space.h"
#include "agentcompile/core/error.h"

namespace ac {

namespace {

// Calls fn(point) for every binding of `params` in domain order (last parameter fastest).
template <class Fn>
void for_each_binding(const std::vector<SpaceParam>& params, const Fn& fn) {
  for (const auto& p : params)
    if (p.values.empty()) return;
  std::vector<size_t> idx(params.size(), 0);
  ParamPoint point;
  for (;;) {
    for (size_t i = 0; i < params.size(); ++i) point[params[i].name] = params[i].values[idx[i]];
    fn(point);
    size_t i = params.size();
    while (i > 0) {
      --i;
      if (++idx[i] < params[i].values.size()) break;
      idx[i] = 0;
      if (i == 0) return;
    }
    if (params.empty()) return;
  }
}

std::vector<SpaceParam> effective_domains(const FamilySpace& f, const std::vector<SpaceParam>* domains) {
  std::vector<SpaceParam> eff = f.params;
  if (domains)
    for (const auto& d : *domains)
      for (auto& p : eff)
        if (p.name == d.name) p.values = d.values;
  return eff;
}

}  // namespace

size_t domain_product(const std::vector<SpaceParam>& params) {
  size_t n = 1;
  for (const auto& p : params) {
    if (p.values.empty()) return 0;
    if (n > kMaxFamilyPoints / p.values.size() + 1) return kMaxFamilyPoints + 1;
    n *= p.values.size();
  }
  return n;
}

std::string_view family_route_name(FamilyRoute r) {
  switch (r) {
    case FamilyRoute::Fallback: return "fallback";
    case FamilyRoute::Op: return "op";
    case FamilyRoute::Region: return "region";
    case FamilyRoute::Fused: return "fused";
  }
  return "?";
}

std::string Candidate::name() const {
  if (params.empty()) return family;
  std::string s = family + "{";
  bool first = true;
  for (const auto& [k, v] : params) {
    s += (first ? "" : ",") + k + "=" + std::to_string(v);
    first = false;
  }
  return s + "}";
}

Json Candidate::to_json() const { return {{"family", family}, {"params", params}, {"name", name()}}; }

const FamilySpace* CandidateSpace::find(const std::string& id) const {
  for (const auto& f : families)
    if (f.id == id) return &f;
  return nullptr;
}

size_t CandidateSpace::size() const {
  size_t n = 0;
  for (const auto& f : families) n += f.valid_points;
  return n;
}

std::vector<ParamPoint> family_points(const FamilySpace& f, const std::vector<SpaceParam>* domains) {
  std::vector<ParamPoint> out;
  const auto eff = effective_domains(f, domains);
  if (domain_product(eff) > kMaxFamilyPoints) throw_internal("candidate space", f.id + " is too large to enumerate");
  for_each_binding(eff, [&](const ParamPoint& p) {
    if (!f.constraint || f.constraint(p).empty()) out.push_back(p);
  });
  return out;
}

size_t count_points(const FamilySpace& f, const std::vector<SpaceParam>* domains) {
  size_t n = 0;
  const auto eff = effective_domains(f, domains);
  if (domain_product(eff) > kMaxFamilyPoints) throw_internal("candidate space", f.id + " is too large to enumerate");
  for_each_binding(eff, [&](const ParamPoint& p) {
    if (!f.constraint || f.constraint(p).empty()) ++n;
  });
  return n;
}

std::vector<std::string> region_step_names(const RegionSummary& s) {
  std::vector<std::string> out;
  for (const auto& st : s.steps) out.push_back(st.name);
  return out;
}

std::vector<std::string> region_steps_of_ops(const RegionSummary& s, const std::vector<std::string>& ops) {
  std::vector<std::string> out;
  for (const auto& st : s.steps)
    if (std::find(ops.begin(), ops.end(), st.op) != ops.end()) out.push_back(st.name);
  return out;
}

void finish_family(FamilySpace& f) {
  f.raw_points = domain_product(f.params);
  if (f.raw_points > kMaxFamilyPoints)
    throw_internal("candidate space", f.id + " declares more than " + std::to_string(kMaxFamilyPoints) + " points");
  f.valid_points = count_points(f);
}

FamilySpace make_fallback(const RegionSummary& s, const std::string& backend) {
  FamilySpace f;
  f.id = backend + ":fallback";
  f.backend = backend;
  f.route = FamilyRoute::Fallback;
  f.family = "fallback";
  f.applies_to = region_step_names(s);
  f.description = backend == "cpu" ? "reference CPU ops, step by step (the oracle)"
                                   : "reference CUDA kernels, cuBLAS for the linear layers";
  return f;
}


}  // namespace ac
