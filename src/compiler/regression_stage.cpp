// The regression stage: the plan's kernel binaries, the check against the best plan recorded
// for this model here (both profiled now, side by side), and the plan stored in the tuning DB.
#include <cstdio>
#include <optional>

#include "compiler/compile_run.h"

namespace ac {

namespace {

Json db_report(const TuningDb& db, const Environment& env) {
  const TuningDb::Health& h = db.health();
  const std::optional<int64_t> here = db.count(env);
  std::string note;
  if (h.not_stored() > 0)
    note = std::to_string(h.not_stored()) + " records of this compile (its measurements, the plan's figures) were not "
           "stored in the tuning database: " + h.reason + "; the plan is written, a later compile measures them again";
  else if (h.reads_failed > 0)
    note = "the tuning database could not be read " + std::to_string(h.reads_failed) + " times (" + h.reason +
           "): this compile measured instead; everything it measured is stored";
  return {{"path", db.path().string()},
          {"file", db.file().string()},
          {"environment_key", env.key()},
          {"records_here", here ? Json(*here) : Json(nullptr)},
          {"stored", h.not_stored() == 0},
          {"not_stored", h.not_stored()},
          {"reads_failed", h.reads_failed},
          {"rows_skipped", h.rows_skipped},
          {"note", note}};
}

// The check against the best plan recorded for this model here: report.json's "regression"; a
// plan slower beyond the threshold fails the compile (CompileResult::regression) unless allowed.
Json check_regression(CompileRun& r) {
  const CompileOptions& o = r.o;
  const Plan& plan = r.built.plan;
  Json regression = {{"threshold", o.regression_threshold}};
  const size_t unread = r.db.health().reads_failed;
  std::optional<PlanRecord> best = r.db.best_plan(r.env, r.hash, o.objective);
  if (r.db.health().reads_failed > unread) {
    regression["status"] = "not checked: the tuning database could not be read (" + r.db.health().reason + ")";
    return regression;
  }
  if (!best) {
    regression["status"] = "no earlier plan for this model here";
    return regression;
  }
  Plan prev = Plan::from_json(Json::parse(best->plan_json), "tuning db plan");
  auto routes_of = [](const Plan& p) {
    Json j = Json::array();
    for (const auto& x : p.routes) j.push_back({x.signature, x.phase, x.family, x.params});
    return j;
  };
  if (routes_of(prev) == routes_of(plan)) {
    regression["status"] = "same routes as the best recorded plan";
    return regression;
  }
  // Measure both now, side by side: recorded figures from another moment carry other noise.
  const SideBySide sbs = side_by_side(*r.e2e, r.g, plan, prev, o);
  const double now_us = sbs.a.cost_us, best_us = sbs.b.cost_us;
  regression["plan_us"] = now_us;
  regression["best_recorded_us"] = best_us;
  regression["min_round_ratio"] = min_round_ratio(sbs.a_us, sbs.b_us);
  if (sbs.a_slower_beyond(o.regression_threshold)) {
    char msg[300];
    std::snprintf(msg, sizeof msg,
                  "the new plan is %.1f%% slower end to end than the best plan recorded for this model here "
                  "(%.1f us vs %.1f us under the %s objective); use --allow-regression to accept it",
                  100 * (now_us / best_us - 1), now_us, best_us, o.objective.c_str());
    regression["status"] = o.allow_regression ? std::string("regression allowed: ") + msg : std::string("FAILED: ") + msg;
    if (!o.allow_regression) r.result.regression = msg;
  } else {
    regression["status"] = "ok (within the threshold of the best recorded plan)";
  }
  return regression;
}

}  // namespace

void run_regression_stage(CompileRun& r) {
  Plan& plan = r.built.plan;
  reference_is_the_plan(plan, r.check);
  plan.e2e = r.check.to_json();
  r.progress("kernel binaries");
  r.result.kernels = r.backend.plan_kernels(r.g, plan);
  for (const auto& k : r.result.kernels) plan.kernels.push_back(k.kernel);
  r.regression = check_regression(r);
  if (r.result.regression.empty())
    r.db.put_plan(r.env, PlanRecord{r.hash, r.model_name, r.o.objective, r.check.cost_us, plan.to_json().dump(), ""});
  // Whatever the database could not take yet is stored now, waiting for a lock with backoff; if it
  // stays unavailable the plan is still written and the report says what was not stored.
  if (r.db.health().pending > 0) r.progress("tuning database (storing what it could not take earlier)");
  r.db.flush();
  r.db_json = db_report(r.db, r.env);
  r.result.db_note = r.db_json["note"].get<std::string>();
}

}  // namespace ac
