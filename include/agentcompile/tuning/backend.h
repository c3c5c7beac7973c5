#pragma once
// The tuning contract: everything the compiler and the runtime ask of a backend, and nothing more.
// A backend says where it runs (environment, target facts), lists for a region its families and
// their parameter spaces, gives an evaluator for a region's candidates (build, check against the
// reference, time), binds the chosen routes into the plan, lists its whole-step alternatives and
// the kernel binaries a plan ships, and builds the executor that runs a plan. The compiler (search,
// advisor, budget, database, route graph, step tuning) is written once against this interface and
// includes no backend header; the runtime reaches the backends only through it too.
//
// Backends register themselves (a static Registration in their own source file); a build without
// the CUDA toolkit simply has no "cuda" backend.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agentcompile/plan/plan.h"
#include "agentcompile/tuning/evaluator.h"
#include "agentcompile/tuning/executor.h"
#include "agentcompile/tuning/target.h"

namespace ac {

struct Graph;
struct Partition;

// How an executor is asked for: without a plan (the backend's own defaults and `route`), or for
// a compiled plan's choices.
// A whole-step setting of a backend's plan (CUDA: one shared-memory carveout for every kernel,
// the attention with the output projection as one kernel, every layer as one persistent kernel),
// which the compile's decode-step stage times in whole decode steps against the plan as it then
// is and keeps when faster by the margin (and still correct end to end).
struct StepSetting {
  std::string name;            // the plan's key, e.g. "smem_carveout"
  std::string report_key;      // report.json's entry, e.g. "smem_carveout"
  std::string record;          // the tuning DB's key prefix of its decisions, e.g. "smem-carveout/2|"
  std::string ms_key;          // the report's "<ms_key>_ms" for the timing with it
  std::vector<int> values;     // tried in turn, each against the plan as it then is
  bool before_routes = false;  // tried before the routes' points are tuned in whole steps (they are timed under it)
  std::string label;           // what it is, in report.md
};

struct ExecutorRequest {
  const Plan* plan = nullptr;       // null: no plan
  std::string route = "auto";       // without a plan: the backend's route (CUDA: auto | fast | library | reference)
  ExecutorShare* share = nullptr;   // device state shared with executors of the same graph (may be ignored)
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;  // "cpu", "cuda"

  // ---- where it runs
  // Whether this process can run it; why not, in a phrase the CLI shows after "--backend NAME".
  virtual bool available(std::string* why_not) const = 0;
  // Where measurements and plans of this backend are valid (BadInput when unavailable).
  virtual Environment environment() const = 0;
  // The facts of the hardware it runs on as detected now, with the target table's ceilings for
  // a known chip (false, why: not detectable).
  virtual bool detect_target(TargetFacts* out, std::string* why_not) const = 0;
  // Replaces t's bandwidth ceilings by ones measured now (`bytes` per copy; 0: the backend's
  // default size); false, why: not measured (the table's figures stay).
  virtual bool measure_ceilings(TargetFacts* t, size_t bytes, std::string* why_not) const {
    (void)t;
    (void)bytes;
    if (why_not) *why_not = "the " + name() + " backend measures no ceilings";
    return false;
  }

  // ---- the search
  // The families of a region class in a phase beyond the fallback (each finished: its points
  // counted, its constraint holding for the region's shapes on `target`); notes say why a family
  // is not offered.
  virtual std::vector<FamilySpace> families(const Graph& g, const Partition& part, const RegionSummary& s,
                                            const TargetFacts& target, std::vector<std::string>* notes) const = 0;
  // The evaluator of a region's candidates; null when the backend does not search this region
  // (its plan runs the fallback there).
  virtual std::unique_ptr<Evaluator> evaluator(const Graph& g, const Partition& part, const RegionTask& t) const = 0;
  // Regions are searched in increasing rank (stable: graph order within one), each with its share
  // of the time left in proportion to its candidates. Default: all one rank.
  virtual int search_rank(const RegionTask& t) const {
    (void)t;
    return 0;
  }

  // Families that implement a fused span of consecutive regions as one (the span's task: the
  // regions' summaries merged, its instances), each finished; none by default.
  virtual std::vector<FamilySpace> span_families(const Graph& g, const Partition& part, const RegionTask& span) const {
    (void)g;
    (void)part;
    (void)span;
    return {};
  }
  // The order a span family's points are measured in, given the winners of the span's regions'
  // own searches (stable: domain order within what the backend does not rank). Default: as given.
  virtual void order_span_points(const FamilySpace& f, const std::vector<Candidate>& part_winners,
                                 std::vector<ParamPoint>& points) const {
    (void)f;
    (void)part_winners;
    (void)points;
  }

  // Why the backend's searched (fast) routes cannot run this graph, so that every region runs
  // its generic route (CUDA: reference kernels and cuBLAS); "" when they can. The compile report
  // lists the regions and what the generic route costs.
  virtual std::string generic_route_reason(const Graph& g) const {
    (void)g;
    return "";
  }

  // ---- the plan
  // Derives the backend's own block of the plan from its routes (CUDA: cuda_fast), keeping the
  // whole-step settings already there; none where the backend's fast routes cannot run the graph
  // (the plan then runs the backend's generic route). Default: nothing to derive.
  virtual void bind_routes(const Graph& g, Plan& plan) const {
    (void)g;
    (void)plan;
  }
  // Whole-step tuning (the latency objective): whether the compile times this backend's decode
  // routes' alternatives in whole decode steps; its settings in the order they are tried; the plan
  // with one of them set (nullopt and why not when it does not apply to this model, plan or GPU;
  // `variant`: the kernel it adds, for the report); and the values of a route's own shared-memory
  // carveout (PlanRoute::smem_carveout) the route tuning also times.
  virtual bool tunes_whole_steps() const { return false; }
  virtual std::vector<StepSetting> step_settings() const { return {}; }
  virtual std::optional<Plan> with_step_setting(const Graph& g, const Plan& plan, const std::string& name, int value,
                                                std::string* variant, std::string* why_not) const {
    (void)g;
    (void)plan;
    (void)value;
    (void)variant;
    if (why_not) *why_not = "the " + this->name() + " backend has no setting " + name;
    return std::nullopt;
  }
  virtual std::vector<int> route_carveouts() const { return {}; }

  // The kernel binaries the plan ships (every variant it launches), built for the plan's
  // environment; none by default.
  virtual std::vector<PlanKernelBinary> plan_kernels(const Graph& g, const Plan& plan) const {
    (void)g;
    (void)plan;
    return {};
  }

  // ---- the runtime
  virtual std::unique_ptr<Executor> executor(const Graph& g, const ExecutorLimits& limits,
                                             const ExecutorRequest& request) const = 0;
  // The plan's kernels built from other kernel sources than this engine's (none by default).
  virtual std::vector<std::string> stale_plan_kernels(const Graph& g, const Plan& plan) const {
    (void)g;
    (void)plan;
    return {};
  }
};

// Adds a backend under its name (an internal error when the name is taken).
void register_backend(std::unique_ptr<Backend> b);
struct BackendRegistration {
  explicit BackendRegistration(std::unique_ptr<Backend> b) { register_backend(std::move(b)); }
};

// The backend of that name in this build; null when there is none.
const Backend* find_backend(const std::string& name);
// The backend of that name, usable here: BadInput ("--backend NAME", why) otherwise.
const Backend& usable_backend(const std::string& name);
// The registered backends' names, sorted.
std::vector<std::string> backend_names();

// The executor of the plan's backend with its choices; the kernel binaries Plan::load read (none
// with PlanKernels::Rebuild) are loaded in place of compiling where their source key matches.
// With `share`, executors of one graph built in turn share what their backend allows (the CUDA
// fast path's device weights: ExecutorShare).
std::unique_ptr<Executor> make_plan_executor(const Plan& plan, const Graph& graph, const ExecutorLimits& limits,
                                             ExecutorShare* share = nullptr);

// The environment this process runs in for a backend; BadInput naming the backend when it is not
// in this build or not usable here.
Environment current_environment(const std::string& backend);

}  // namespace ac
