#pragma once
// What the compile's stages hand forward. compile_model (compile.cpp) runs them in order, each
// in its own file, each reading what the earlier ones left here and adding its own part:
//   front_stage      target, shape points, candidate spaces, advice
//   search_stage     the reference backend's half of the end-to-end check, then every region's
//                    and fused span's search within its share of the budget
//   repair_stage     route graph, plan, end-to-end check with repair, profile, fallback guard
//   step_stage       whole-step tuning of the decode step (backends that tune whole steps)
//   regression_stage kernel binaries, the regression check, the plan stored in the tuning DB
//   report_stage     report.json and report.md
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agentcompile/compiler/advisor.h"
#include "agentcompile/compiler/compile.h"
#include "agentcompile/compiler/front.h"
#include "agentcompile/compiler/route_graph.h"
#include "agentcompile/compiler/search.h"
#include "agentcompile/compiler/spans.h"
#include "agentcompile/compiler/timing_noise.h"
#include "agentcompile/compiler/tuning_db.h"
#include "agentcompile/ir/graph.h"
#include "agentcompile/model/model.h"
#include "agentcompile/tuning/backend.h"
#include "compiler/e2e_stage.h"
#include "compiler/plan_assembly.h"

namespace ac {

struct CompileRun {
  CompileRun(const Model& model, const CompileOptions& options);
  // Tells CompileOptions::progress which stage runs now (and what is left of the budget).
  void progress(const std::string& stage);
  Clock::time_point at_share_of_budget(double share) const;

  // Given.
  const Model& m;
  const CompileOptions& o;
  const Clock::time_point start, deadline;  // the budget's end
  const Graph g;
  const Environment env;
  const Backend& backend;
  TuningDb db;
  const std::string hash, model_name;
  CompileProgress prog;

  // front_stage
  FrontOptions fo;
  std::string target_note;
  std::unique_ptr<Advisor> advisor;
  double advisor_share_s = 0;
  FrontResult front;
  SearchOptions so;

  // search_stage
  std::optional<E2eStage> e2e;
  TimingNoise noise_now;
  double reference_s = 0;  // the reference backend's half of the end-to-end stage
  bool step_tune = false;  // whether step_stage runs (it needs its share of the budget)
  std::vector<RegionSearch> searches;
  std::vector<SpanWork> spans;  // searched fused spans, their searches after the regions'
  std::string timing_method;
  Clock::time_point search_start, search_deadline;
  double search_s = 0, search_end_s = 0;

  // repair_stage
  std::optional<RouteGraph> rg;
  RoutePath path;
  BuiltPlan built;
  E2e check;
  std::vector<Repair> repairs;
  Json fallback_guard;

  // step_stage
  std::vector<StepSetting> settings;  // the backend's whole-step settings
  Json step_tuning, seed_plan, settings_report = Json::object();
  std::map<size_t, std::string> step_tuned;  // search -> the candidate the step tuning chose

  // regression_stage
  Json regression, db_json;

  CompileResult result;
};

void run_front_stage(CompileRun& r);
void run_search_stage(CompileRun& r);
void run_repair_stage(CompileRun& r);
void run_step_stage(CompileRun& r);
void run_regression_stage(CompileRun& r);
void run_report_stage(CompileRun& r);

}  // namespace ac
