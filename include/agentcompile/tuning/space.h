#pragma once
// The bounded candidate space of one region class in one phase on one backend: kernel families
// with finite parameter domains and a constraint (interface + hardware) over each binding, plus
// the fallback route that always exists. A candidate is one family with every parameter bound.
//
// Routes:
//   fallback  every step by the backend's default route (CPU: reference ops; CUDA: reference
//             kernels with cuBLAS for the linear layers). One point, no parameters.
//   op        an op-level family (e.g. cpu:linear.blocked, cuda:rms_norm.ref) applied to every
//             step of the region it implements, one binding for all of them; the other steps
//             run the fallback route.
//   region    a family that implements the whole region (fused), declared by the family.
//   fused     a family that implements a span of consecutive regions (compiler/spans.h); its
//             space belongs to the span, not to any one region.
// The space is enumerable: size() counts the valid points without listing them, points()
// lists them in domain order (first parameter slowest).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "agentcompile/tuning/summary.h"

namespace ac {

using ParamPoint = std::map<std::string, int>;

struct SpaceParam {
  std::string name;
  std::vector<int> values;
};

enum class FamilyRoute : uint8_t { Fallback, Op, Region, Fused };
std::string_view family_route_name(FamilyRoute r);

struct FamilySpace {
  std::string id;       // "<backend>:<op>.<name>" ("cpu:linear.blocked"), "<backend>:fallback"
  std::string backend;  // "cpu" | "cuda"
  FamilyRoute route = FamilyRoute::Op;
  std::string op;       // op families: the step op it implements; region families: the region kind
  std::string family;   // the backend's family name ("blocked", "ref")
  std::vector<std::string> applies_to;      // step names it runs ("q_proj", ...); all for fallback/region
  std::vector<SpaceParam> params;
  std::map<std::string, std::string> types;  // CUDA type parameters bound by the region (W -> bf16)
  std::vector<std::string> rules;           // the constraint in words
  std::string description;
  // "" when a binding is valid for this region and target, else why not.
  std::function<std::string(const ParamPoint&)> constraint;
  size_t raw_points = 1;    // product of the domains
  size_t valid_points = 1;  // bindings the constraint accepts
};

struct Candidate {
  std::string family;  // FamilySpace::id
  ParamPoint params;
  // "cpu:linear.blocked{KUNROLL=8,ROWS=4,THREADS=2,TOKENS=1}"; the fallback is its id alone.
  std::string name() const;
  Json to_json() const;
};

struct CandidateSpace {
  std::string signature;
  RegionKind kind = RegionKind::Embed;
  Phase phase = Phase::Decode;
  std::string backend;
  std::vector<FamilySpace> families;  // the fallback first
  std::vector<std::string> notes;     // e.g. "this build has no CUDA backend"

  const FamilySpace* find(const std::string& id) const;
  const FamilySpace& fallback() const { return families.front(); }
  size_t size() const;  // valid points over all families (the fallback counts 1)
  Json to_json() const;
};

// Largest product of domains a family may declare (the space must stay enumerable).
constexpr size_t kMaxFamilyPoints = 1'000'000;
// The product of the domains' sizes; kMaxFamilyPoints + 1 for anything larger.
size_t domain_product(const std::vector<SpaceParam>& params);

// The valid bindings of `f`, in domain order; `domains` (same names, subsets) replaces f's
// domains for the parameters it lists (advice narrowing).
std::vector<ParamPoint> family_points(const FamilySpace& f, const std::vector<SpaceParam>* domains = nullptr);
size_t count_points(const FamilySpace& f, const std::vector<SpaceParam>* domains = nullptr);

// The names of the region's steps (a fallback's or a region family's applies_to).
std::vector<std::string> region_step_names(const RegionSummary& s);
// The names of the region's steps whose op is one of `ops` (an op family's applies_to).
std::vector<std::string> region_steps_of_ops(const RegionSummary& s, const std::vector<std::string>& ops);
// Sets f's raw and valid point counts (internal error past kMaxFamilyPoints).
void finish_family(FamilySpace& f);
// The one-point fallback family of a region (every step by the backend's default route).
FamilySpace make_fallback(const RegionSummary& s, const std::string& backend);

}  // namespace ac
