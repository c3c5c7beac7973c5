// The CPU backend behind the tuning contract (tuning/backend.h): the host's environment and
// facts, its families and evaluator, and the executor of a plan. Always available.
#include <algorithm>
#include <cstdlib>
#include <optional>
#include <memory>
#include <thread>

#include "agentcompile/backends/cpu/cpu_evaluator.h"
#include "agentcompile/backends/cpu/cpu_executor.h"
#include "agentcompile/backends/cpu/cpu_space.h"
#include "agentcompile/ir/graph.h"
#include "agentcompile/tuning/backend.h"

namespace ac {

namespace {

class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }
  bool available(std::string* why_not) const override {
    (void)why_not;
    return true;
  }

  Environment environment() const override {
    Environment e;
    e.device = host_cpu_name();
    e.arch = host_arch();
    e.cores = int(std::max(1u, std::thread::hardware_concurrency()));
    return e;
  }

  bool detect_target(TargetFacts* out, std::string* why_not) const override {
    (void)why_not;
    *out = host_cpu_target(false);
    return true;
  }

  std::vector<FamilySpace> families(const Graph& g, const Partition& part, const RegionSummary& s,
                                    const TargetFacts& target, std::vector<std::string>* notes) const override {
    (void)notes;
    return cpu_region_families(g, part, s, target);
  }

  std::unique_ptr<Evaluator> evaluator(const Graph& g, const Partition& part, const RegionTask& t) const override {
    (void)t;
    return make_cpu_evaluator(g, part);
  }

  // A layer's MLP (mlp_in + mlp_out) as one mlp.fused kernel, where the span computes its pattern.
  std::vector<FamilySpace> span_families(const Graph& g, const Partition& part, const RegionTask& span) const override {
    const cpu::CpuFamily* fam = cpu::find_cpu_family("mlp", "fused");
    if (!fam || span.span_instances.empty()) return {};
    const std::vector<int>& inst = span.span_instances.front();
    auto width_of = [&](const Region& r, OpKind k) -> int64_t {
      for (const RegionStep& st : r.steps)
        if (g.ops.at(size_t(st.op)).kind == k) return g.value(g.ops.at(size_t(st.op)).output).width;
      return 0;
    };
    cpu::CpuOpShape shape;
    shape.tokens = span.summary.point.tokens;
    shape.in = width_of(part.regions.at(size_t(inst.back())), OpKind::Add);
    shape.out = width_of(part.regions.at(size_t(inst.front())), OpKind::SwiGlu);
    return {cpu_family_space(*fam, {shape}, span.summary.target, FamilyRoute::Fused, region_step_names(span.summary))};
  }

  // The tile the span's linear regions chose first (nearest thread count first), then the rest.
  void order_span_points(const FamilySpace& f, const std::vector<Candidate>& part_winners,
                         std::vector<ParamPoint>& points) const override {
    (void)f;
    std::optional<ParamPoint> seed;
    for (const Candidate& c : part_winners)
      if (c.family == "cpu:linear.blocked") {
        seed = c.params;
        break;
      }
    if (!seed) return;
    auto log2_of = [](int v) {
      int l = 0;
      for (; v > 1; v /= 2) ++l;
      return l;
    };
    auto rank = [&](const ParamPoint& p) {
      for (const char* t : {"ROWS", "TOKENS", "KUNROLL"})
        if (p.at(t) != seed->at(t)) return 1000;
      return std::abs(log2_of(p.at("THREADS")) - log2_of(seed->at("THREADS")));
    };
    std::stable_sort(points.begin(), points.end(), [&](const ParamPoint& x, const ParamPoint& y) { return rank(x) < rank(y); });
  }

  std::unique_ptr<Executor> executor(const Graph& g, const ExecutorLimits& limits,
                                     const ExecutorRequest& request) const override {
    return make_cpu_executor(g, limits, request.plan);
  }
};

const BackendRegistration kRegistration(std::make_unique<CpuBackend>());

}  // namespace

}  // namespace ac
