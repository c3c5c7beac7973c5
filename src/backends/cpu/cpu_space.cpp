// The CPU backend's families as candidate spaces (tuning contract): each CPU family whose op a
// region runs, its domains, and the constraint over the op shapes it would run on the host.
#include "agentcompile/backends/cpu/cpu_space.h"

#include <algorithm>

#include "agentcompile/core/error.h"
#include "agentcompile/ir/graph.h"

namespace ac {

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
  finish_family(f);
  return f;
}

std::vector<FamilySpace> cpu_region_families(const Graph& g, const Partition& part, const RegionSummary& s,
                                            const TargetFacts& target) {
  std::vector<FamilySpace> out;
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
    out.push_back(cpu_family_space(cf, shapes, target, FamilyRoute::Op,
                                           region_steps_of_ops(s, cf.op == "linear" ? std::vector<std::string>{"linear", "logits"}
                                                                            : std::vector<std::string>{"attention"})));
  }
  return out;
}

}  // namespace ac
