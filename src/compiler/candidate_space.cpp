// Candidate spaces: which families may implement a region on a backend, their domains and the
// constraint each binding must meet for this region's shapes and the target. Names, lookups and
// the enumeration of bindings are in candidate_points.cpp.
#include "agentcompile/compiler/candidate_space.h"

#include <algorithm>

#include "agentcompile/backends/cpu/cpu_families.h"
#include "agentcompile/core/error.h"
#ifdef AGENTCOMPILE_HAVE_CUDA
#include "agentcompile/backends/cuda/kernels_info.h"
#endif

namespace ac {

namespace {

// Step names of the region whose op is one of `ops`.
std::vector<std::string> steps_named(const RegionSummary& s, const std::vector<std::string>& ops) {
  std::vector<std::string> out;
  for (const auto& st : s.steps)
    if (std::find(ops.begin(), ops.end(), st.op) != ops.end()) out.push_back(st.name);
  return out;
}

std::vector<std::string> all_steps(const RegionSummary& s) {
  std::vector<std::string> out;
  for (const auto& st : s.steps) out.push_back(st.name);
  return out;
}

void finish(FamilySpace& f) {
  f.raw_points = domain_product(f.params);
  if (f.raw_points > kMaxFamilyPoints)
    throw_internal("candidate space", f.id + " declares more than " + std::to_string(kMaxFamilyPoints) + " points");
  f.valid_points = count_points(f);
}

// ---- CPU ----

void add_cpu_families(CandidateSpace& sp, const Graph& g, const Partition& part, const RegionSummary& s) {
  const Region& r = part.regions.at(size_t(s.representative));
  for (const cpu::CpuFamily& cf : cpu::cpu_families()) {
    // The op shapes this family would run in the region.
    std::vector<cpu::CpuOpShape> shapes;
    for (const RegionStep& st : r.steps) {
      const Op& op = g.ops.at(size_t(st.op));
      const std::string name = step_op_name(g, st);
      if (cf.op == "linear" && (name == "linear" || name == "logits")) {
        cpu::CpuOpShape sh;
        sh.tokens = name == "logits" ? s.point.batch : s.point.tokens;
        sh.in = g.value(op.inputs.at(0)).width;
        sh.out = g.value(op.output).width;
        shapes.push_back(sh);
      } else if (cf.op == "attention" && name == "attention") {
        cpu::CpuOpShape sh;
        sh.tokens = s.point.tokens;
        sh.heads = op.heads;
        sh.kv_heads = op.kv_heads;
        sh.head_dim = op.head_dim;
        sh.context = s.point.context;
        shapes.push_back(sh);
      }
    }
    if (shapes.empty()) continue;
    sp.families.push_back(cpu_family_space(cf, shapes, s.target, FamilyRoute::Op,
                                           steps_named(s, cf.op == "linear" ? std::vector<std::string>{"linear", "logits"}
                                                                            : std::vector<std::string>{"attention"})));
  }
}

// ---- CUDA ----

#ifdef AGENTCOMPILE_HAVE_CUDA
// A family may declare the region it implements (issue 9 adds `region` to KernelFamilyInfo);
// until the field exists every family is op-level. The requires-expression picks it up when it
// appears, without this file naming a member that is not there yet.
template <class F>
std::string declared_region(const F& f) {
  if constexpr (requires { f.region; }) return std::string(f.region);
  else return std::string();
}

// The step ops an op-level CUDA family runs. cast and bias are helpers of the cuBLAS route,
// not alternatives for a step.
std::vector<std::string> cuda_family_steps(const std::string& op) {
  if (op == "linear") return {"linear", "logits"};
  if (op == "gather_rows" || op == "argmax") return {"logits"};
  if (op == "cast" || op == "bias") return {};
  return {op};
}

void add_cuda_families(CandidateSpace& sp, const Graph& g, const Partition& part, const RegionSummary& s) {
  const Region& r = part.regions.at(size_t(s.representative));
  int64_t head_dim = 0;
  for (const RegionStep& st : r.steps) head_dim = std::max(head_dim, g.ops.at(size_t(st.op)).head_dim);
  const TargetFacts& t = s.target;
  for (const KernelFamilyInfo& kf : list_kernel_families()) {
    FamilySpace f;
    const std::string region = declared_region(kf);
    if (!region.empty()) {
      if (region != region_kind_name(s.kind)) continue;
      f.route = FamilyRoute::Region;
      f.op = region;
      f.applies_to = all_steps(s);
    } else {
      f.applies_to = steps_named(s, cuda_family_steps(kf.op));
      if (f.applies_to.empty()) continue;
      f.route = FamilyRoute::Op;
      f.op = kf.op;
    }
    // Type parameters: W is the weight type, any other the activation type.
    bool bindable = true;
    for (const auto& tp : kf.type_params) {
      const std::string v = tp == "W" ? s.weight_dtype : std::string(dtype_user_name(s.numerics.activations));
      if (v == "none" || v == "mixed") bindable = false;
      f.types[tp] = v;
    }
    if (!bindable) continue;
    f.id = "cuda:" + kf.op + "." + kf.name;
    f.backend = "cuda";
    f.family = kf.name;
    f.description = kf.description;
    for (const auto& [n, vals] : kf.params) f.params.push_back({n, vals});
    const bool has_block = std::any_of(f.params.begin(), f.params.end(), [](const SpaceParam& p) { return p.name == "BLOCK"; });
    if (has_block) f.rules.push_back("BLOCK <= max threads per block (" + std::to_string(t.max_threads_per_block) + "), a multiple of 32");
    if (kf.needs_sm90a) f.rules.push_back("needs sm_90a (target arch sm_90)");
    const bool maxd_rule = kf.op == "attention" && kf.name == "ref";
    if (maxd_rule) f.rules.push_back("MAXD * BLOCK >= head_dim (" + std::to_string(head_dim) + ")");
    const bool needs_sm90a = kf.needs_sm90a;
    const int max_threads = t.max_threads_per_block > 0 ? t.max_threads_per_block : 1024;
    const std::string arch = t.arch;
    f.constraint = [=](const ParamPoint& p) -> std::string {
      if (needs_sm90a && arch != "sm_90") return "needs sm_90a, target is " + arch;
      if (auto it = p.find("BLOCK"); it != p.end()) {
        if (it->second > max_threads) return "BLOCK=" + std::to_string(it->second) + " exceeds " + std::to_string(max_threads) + " threads";
        if (it->second % 32 != 0) return "BLOCK is not a multiple of the warp";
      }
      if (maxd_rule && int64_t(p.at("MAXD")) * p.at("BLOCK") < head_dim) return "MAXD * BLOCK does not cover head_dim";
      return "";
    };
    finish(f);
    sp.families.push_back(std::move(f));
  }
}
#endif

}  // namespace

FamilySpace make_fallback(const RegionSummary& s, const std::string& backend) {
  FamilySpace f;
  f.id = backend + ":fallback";
  f.backend = backend;
  f.route = FamilyRoute::Fallback;
  f.family = "fallback";
  f.applies_to = all_steps(s);
  f.description = backend == "cpu" ? "reference CPU ops, step by step (the oracle)"
                                   : "reference CUDA kernels, cuBLAS for the linear layers";
  return f;
}

FamilySpace cpu_family_space(const cpu::CpuFamily& cf, const std::vector<cpu::CpuOpShape>& shapes, const TargetFacts& t,
                             FamilyRoute route, std::vector<std::string> applies_to) {
  const cpu::CpuHost host{t.cores > 0 ? t.cores : 1, t.simd_floats > 0 ? t.simd_floats : 4,
                          t.simd_registers > 0 ? t.simd_registers : 16};
  FamilySpace f;
  f.id = "cpu:" + cf.op + "." + cf.name;
  f.backend = "cpu";
  f.route = route;
  f.op = cf.op;
  f.family = cf.name;
  f.applies_to = std::move(applies_to);
  for (const auto& d : cf.params) f.params.push_back({d.name, d.values});
  f.rules = cf.rules;
  f.description = cf.description;
  const cpu::CpuFamily* fam = &cf;
  f.constraint = [fam, shapes, host](const ParamPoint& p) -> std::string {
    for (const auto& sh : shapes)
      if (std::string why = cpu::cpu_family_constraint(*fam, p, sh, host); !why.empty()) return why;
    return "";
  };
  finish(f);
  return f;
}

Json CandidateSpace::to_json() const {
  Json fams = Json::array();
  for (const auto& f : families) {
    Json params = Json::array();
    for (const auto& p : f.params) params.push_back({{"name", p.name}, {"values", p.values}});
    Json j = {{"id", f.id},
              {"route", std::string(family_route_name(f.route))},
              {"applies_to", f.applies_to},
              {"params", params},
              {"rules", f.rules},
              {"raw_points", f.raw_points},
              {"valid_points", f.valid_points},
              {"description", f.description}};
    if (!f.types.empty()) j["types"] = f.types;
    fams.push_back(std::move(j));
  }
  Json j = {{"signature", signature},
            {"region", std::string(region_kind_name(kind))},
            {"phase", std::string(phase_name(phase))},
            {"backend", backend},
            {"size", size()},
            {"families", fams}};
  if (!notes.empty()) j["notes"] = notes;
  return j;
}

CandidateSpace build_candidate_space(const Graph& g, const Partition& part, const RegionSummary& s,
                                     const std::string& backend) {
  if (backend != "cpu" && backend != "cuda") throw_input("--backend", json_quote(backend) + " is not cpu or cuda");
  CandidateSpace sp;
  sp.signature = s.signature;
  sp.kind = s.kind;
  sp.phase = s.phase;
  sp.backend = backend;
  sp.families.push_back(make_fallback(s, backend));
  if (backend == "cpu") {
    add_cpu_families(sp, g, part, s);
  } else {
#ifdef AGENTCOMPILE_HAVE_CUDA
    add_cuda_families(sp, g, part, s);
#else
    sp.notes.push_back("this build has no CUDA backend: only the fallback route is listed");
#endif
  }
  return sp;
}

}  // namespace ac
