#pragma once
// The compiler back as one call: front (regions, spaces, advice with the DB's measured history)
// -> search per region class (staged validation, measured selection, tuning DB) -> route graph
// and cheapest path -> end-to-end stage (semantic check against the reference backend, profile)
// with repair -> regression check against the best plan recorded -> plan + report.
#include <functional>
#include <map>
#include <set>
#include <string>

#include "agentcompile/compiler/advisor.h"
#include "agentcompile/compiler/search.h"
#include "agentcompile/compiler/timing_noise.h"
#include "agentcompile/plan/plan.h"

namespace ac {

struct Model;

struct CompileProgress {
  size_t regions_done = 0, regions_total = 0;
  size_t candidates_measured = 0, candidates_reused = 0;
  double budget_left_s = 0;
  std::string stage;  // "search <region> <phase>", "end-to-end", ...
};

struct CompileOptions {
  std::string backend = "cpu";  // resolved: cpu | cuda
  AdvisorConfig advisor;
  double budget_s = 120;        // the search stops starting candidates after 80% of it
  fs::path db_path;             // empty: TuningDb::default_path()
  // How long the tuning database may keep the compile waiting for a lock another process holds,
  // once mid-compile and once, with backoff, at the end; then the compile goes on without it.
  double db_wait_s = TuningDb::kDefaultWaitS;
  std::string objective = "latency";  // latency | throughput
  int max_batch = 1;            // throughput: the decode batch
  bool allow_regression = false;
  int e2e_tokens = 16;          // greedy tokens checked against the reference
  double e2e_epsilon = 1e-3;    // top-2 logit margin under which either token passes
  int workload_decode_tokens = 128;  // latency objective: prefill + this many decode steps (W2)
  int64_t prefill_tokens = 128;
  int64_t decode_context = 256;
  // CUDA, latency objective: after the end-to-end check, the decode routes' few fastest points
  // alone are timed again in whole decode steps of step_tune_tokens tokens (compiler/step_tuning.h).
  bool step_tuning = true;
  int step_tune_tokens = 64;
  double regression_threshold = 0.10;
  // A plan compiled before for the same model (compile --seed-plan; seed_from names it): on CUDA
  // with the decode-step stages, its route choices that this compile validated, with its
  // carveout, are timed as one plan against the searched plan before those stages, and the faster
  // is where they start (report.json "seed_plan").
  std::optional<Plan> seed_plan;
  std::string seed_from;
  SearchOptions search;
  std::function<void(const CompileProgress&)> progress;
  // Fault injection for tests of the repair path: the end-to-end stage fails any plan that
  // routes a region through one of these candidate names.
  std::set<std::string> e2e_fault_candidates;
  // Tests: the side-by-side profiles (fallback guard, regression check) of a plan that routes a
  // region through one of these candidate names are multiplied by the factor.
  std::map<std::string, double> e2e_slowdown;
  // Tests: the host's timing conditions (measure_timing_noise when empty).
  std::function<TimingNoise()> timing_noise;
};

struct CompileResult {
  Plan plan;
  std::vector<PlanKernelBinary> kernels;  // written under the plan folder (plan.kernels lists them)
  Json report;
  std::string report_md;
  double elapsed_s = 0;
  // Non-empty when the plan is more than the threshold slower than the best recorded plan
  // (and --allow-regression was not given): the compile must fail with this message.
  std::string regression;
  // Non-empty when the tuning database could not store or read everything (report.json db.note):
  // the CLI says so on stderr.
  std::string db_note;
  // Non-empty when the advisor fell back to the heuristic advice for some regions: one line
  // saying how many and why (AdvisorTally::summary), for stderr.
  std::string advisor_note;
};

CompileResult compile_model(const Model& m, const CompileOptions& o);

// Writes plan.json, report.json and report.md into `out` atomically (a temporary sibling folder
// renamed into place): a half-written plan folder never exists.
void write_plan_folder(const fs::path& out, const CompileResult& r);

}  // namespace ac
