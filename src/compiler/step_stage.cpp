// The step stage, for backends that tune whole decode steps (latency objective): a seed plan
// against the searched one, the backend's whole-step settings (some before the routes' tuning,
// the rest after), and the decode-step tuning of the routes' points (step_tuning.h). A tuned plan
// is checked end to end again and profiled; should the check fail, the plan as it was is kept.
#include <chrono>
#include <functional>
#include <optional>

#include "agentcompile/core/error.h"
#include "agentcompile/core/stats.h"
#include "compiler/compile_run.h"
#include "compiler/step_tuning.h"

namespace ac {

namespace {

// Turns `with` (the plan with one decode-step switch set) in if it still passes the end-to-end
// check (then `check` is that check); otherwise leaves both as they are and returns why not.
std::optional<std::string> adopt_step_alternative(Plan& plan, const Plan& with, E2e& check, E2eStage& e2e) {
  E2e again = e2e.run(with, true);
  if (!again.ok) return "not kept: the end-to-end check failed (" + again.reason + ")";
  plan = with;
  check = std::move(again);
  return std::nullopt;
}

// A whole-step alternative to the plan's kernel chain: the kernel it adds and the plan with it on.
struct StepAlternative {
  std::string variant;
  Plan plan;
  Json setting;  // what the report and the tuning DB record of it, e.g. {"attn_o": 1}
};

// An alternative against the plan's kernel chain: whole-step timings interleaved, three each; it
// is kept when its median is faster by the margin and the plan still passes the end-to-end
// check. Its median is reported as "<key>_ms".
Json try_step_alternative(Plan& plan, const StepAlternative& alt, const std::string& key, E2e& check, E2eStage& e2e,
                          int tokens, double margin, Clock::time_point deadline) {
  std::vector<double> chain, with;
  try {
    for (int i = 0; i < 3 && Clock::now() < deadline; ++i) {
      chain.push_back(e2e.decode_ms(plan, tokens));
      with.push_back(e2e.decode_ms(alt.plan, tokens));
    }
  } catch (const Error& e) {
    return {{"status", "not kept: " + e.reason()}, {"variant", alt.variant}};
  }
  if (chain.empty()) return {{"status", "not tried (time budget spent)"}, {"variant", alt.variant}};
  const double a = median(chain), b = median(with);
  Json r = {{"variant", alt.variant}, {"chain_ms", a}, {key + "_ms", b}, {"timings", int(chain.size())}};
  for (const auto& [k, v] : alt.setting.items()) r[k] = v;
  if (!(b < a * (1 - margin))) {
    r["status"] = "not kept (not faster by the margin)";
    return r;
  }
  r["status"] = adopt_step_alternative(plan, alt.plan, check, e2e).value_or("kept");
  return r;
}

// A backend's whole-step setting against the plan as it then is, each of its values in turn (a
// value that does not apply is said so, not timed). Returns report.json's entry for it: the kept
// trial (or the last one), with every trial when there are several values.
Json try_step_setting(const Backend& backend, const StepSetting& st, Plan& plan, E2e& check, E2eStage& e2e,
                      const Graph& g, int tokens, double margin, Clock::time_point deadline) {
  Json trials = Json::array(), kept;
  for (int v : st.values) {
    std::string variant, why;
    const std::optional<Plan> with = backend.with_step_setting(g, plan, st.name, v, &variant, &why);
    Json r = with ? try_step_alternative(plan, {variant, *with, {{st.name, v}}}, st.ms_key, check, e2e, tokens, margin, deadline)
                  : Json{{"status", why}};
    trials.push_back(r);
    if (r.value("status", "") == "kept") kept = r;
  }
  if (trials.empty()) return {{"status", "not tried (the backend gave no values)"}};
  if (trials.size() == 1) return trials.front();
  Json out = kept.is_null() ? trials.back() : kept;
  out["trials"] = trials;
  return out;
}

// One whole-step alternative in the decode-step stage: a warm compile from the same plan takes the
// decision recorded under `name` in the tuning DB (re-adopting `with_of(plan, record)` when it was
// kept, after the end-to-end check); otherwise `measure` decides and a measured decision is
// recorded. Returns the report's entry.
Json step_alternative_stage(const std::string& name, const std::string& ms_key, Plan& plan, E2e& check, E2eStage& e2e,
                            TuningDb& db, const Environment& env, const std::string& hash, const CompileOptions& o,
                            const StepTuneOptions& sto, const std::function<Json()>& measure,
                            const std::function<Plan(const Plan&, const Json&)>& with_of) {
  const std::string key = name + step_tuning_key(plan, hash, o.step_tune_tokens, e2e.prompt_tokens(), sto);
  if (auto hit = db.step_tuning(env, key)) {
    if (std::optional<Json> rec = step_alternative_from_json(hit->first, ms_key)) {
      Json& j = *rec;
      j["source"] = "tuning DB, measured " + hit->second;
      if (j["status"] == "kept")
        if (auto why = adopt_step_alternative(plan, with_of(plan, j), check, e2e)) j["status"] = *why;
      return j;
    }
  }
  Json r = measure();
  if (r.contains("chain_ms")) db.put_step_tuning(env, key, r.dump());  // a measured decision
  r["source"] = "measured now";
  return r;
}

// The routes' tuning: a warm compile from the same starting plan takes the recorded outcome (as
// the region searches take their recorded candidates); otherwise every trial is measured and
// recorded. Returns report.json's "step_tuning".
Json tune_routes(CompileRun& r, const StepTuneOptions& sto, const std::function<bool(const PlanRoute&)>& tunable,
                 const std::function<void(Plan&)>& refresh) {
  const CompileOptions& o = r.o;
  Plan& plan = r.built.plan;
  r.progress("decode-step tuning");
  const Plan before = plan;
  const std::string key = step_tuning_key(plan, r.hash, o.step_tune_tokens, r.e2e->prompt_tokens(), sto);
  std::optional<StepTuning> recorded;
  std::string source = "measured now";
  if (auto hit = r.db.step_tuning(r.env, key)) {
    recorded = StepTuning::from_json(Json::parse(hit->first, nullptr, false));
    source = "tuning DB, measured " + hit->second;
  }
  StepTuning st;
  // A record the budget cut short is measured again: this compile may have the time to finish.
  if (recorded && !recorded->cut && apply_recorded_step_tuning(plan, *recorded, r.searches, r.built.search_of_route, refresh)) {
    st = *recorded;
  } else {
    source = recorded && recorded->cut ? "measured now (the tuning DB's record was cut by its budget)" : "measured now";
    st = tune_decode_step(plan, r.searches, r.built.search_of_route, tunable, refresh,
                          [&](const Plan& p) { return r.e2e->decode_ms(p, o.step_tune_tokens); }, sto);
    r.db.put_step_tuning(r.env, key, st.to_json().dump());
  }
  if (st.changed) {
    E2e again = r.e2e->run(plan, true);
    if (again.ok) {
      r.check = again;
      for (size_t k = 0; k < plan.routes.size(); ++k)
        if (route_choice_name(plan.routes[k]) != route_choice_name(before.routes[k]))
          r.step_tuned[r.built.search_of_route[k]] = route_choice_name(plan.routes[k]);
    } else {
      st.changed = false;
      st.note = "reverted: the tuned plan failed the end-to-end check (" + again.reason + ")";
      plan = before;
    }
  }
  Json j = st.to_json();
  j["status"] = st.changed ? "tuned" : "kept the searched plan";
  j["source"] = source;
  j["tokens"] = o.step_tune_tokens;
  j["margin"] = sto.margin;
  j["top"] = sto.top;
  j["passes"] = sto.passes;
  return j;
}

}  // namespace

void run_step_stage(CompileRun& r) {
  const CompileOptions& o = r.o;
  // No search (the search stage allows that only where the plan runs the generic route).
  r.step_tuning = {{"status", r.searches.empty() ? "not run (the plan runs the backend's generic route: nothing to tune)"
                              : r.step_tune  ? "not run (no fast-path plan)"
                                             : "off (CPU backend, throughput objective or --no-step-tuning)"}};
  // The backend's whole-step settings (report.json's entries under their report keys).
  if (r.step_tune) r.settings = r.backend.step_settings();
  for (const StepSetting& st : r.settings) r.settings_report[st.report_key] = {{"status", "not tried"}};
  r.seed_plan = {{"status", !o.seed_plan ? "none given" : "not applied (CUDA latency plans only)"}};
  if (!r.step_tune) return;
  StepTuneOptions sto;
  sto.deadline = r.at_share_of_budget(0.95);
  const std::string prefix = r.backend.name() + ":";
  auto tunable = [&](const PlanRoute& p) { return p.phase == "decode" && p.family.rfind(prefix, 0) == 0; };
  auto refresh = [&](Plan& p) { r.backend.bind_routes(r.g, p); };  // the routes' points; the step's settings stay
  Plan& plan = r.built.plan;
  // A plan compiled before (--seed-plan) as a whole against the searched one: which points win
  // in the chain depends on the others and on the carveout, and the tuning below only times a
  // few alternatives per route, ranked by their time alone (bench/results/2026-12-02-two-pass/:
  // a fresh Qwen3-1.7B compile never tried the output projection point of the best plan known).
  if (o.seed_plan) {
    r.progress("seed plan");
    const SeededPlan sp = seed_routes(plan, *o.seed_plan, r.searches, r.built.search_of_route, tunable, refresh);
    Json j = sp.changed ? try_step_alternative(plan, {"seed plan " + o.seed_from, sp.plan, {}}, "seed", r.check, *r.e2e,
                                               o.step_tune_tokens, sto.margin, r.deadline)
                        : Json{{"status", "same as the searched plan"}};
    j["from"] = o.seed_from;
    j["taken"] = sp.taken;
    j["missing"] = sp.missing;
    r.seed_plan = j;
  }
  // Each setting against the plan as it then is; a warm compile from the same plan takes the
  // recorded decision (re-checked end to end when it was kept). Those tried before the routes'
  // tuning (one shared-memory carveout for every kernel) go first, so that the tuning times its
  // points under them: which points win in the chain depends on it (on the H200, Qwen3-1.7B's
  // output projection at half the blocks was 1.7% faster under carveout 40 and 0.4% without one,
  // under the tuning's margin: bench/results/2026-12-02-o-grid/).
  auto run_setting = [&](const StepSetting& st) {
    r.progress(st.label);
    r.settings_report[st.report_key] = step_alternative_stage(
        st.record, st.ms_key + "_ms", plan, r.check, *r.e2e, r.db, r.env, r.hash, o, sto,
        [&] { return try_step_setting(r.backend, st, plan, r.check, *r.e2e, r.g, o.step_tune_tokens, sto.margin, r.deadline); },
        [&](const Plan& p, const Json& rec) {
          return r.backend.with_step_setting(r.g, p, st.name, rec.value(st.name, st.values.back()), nullptr, nullptr).value_or(p);
        });
  };
  for (const StepSetting& st : r.settings)
    if (st.before_routes) run_setting(st);
  // Then each route's points under their own carveouts too: the other values of the stage's
  // (a route under the kept one is the plan's).
  for (int v : r.backend.route_carveouts())
    if (!plan.cuda_fast || plan.cuda_fast->get("smem_carveout") != v) sto.carveouts.push_back(v);
  r.step_tuning = tune_routes(r, sto, tunable, refresh);
  for (const StepSetting& st : r.settings)
    if (!st.before_routes) run_setting(st);
  r.e2e->release_timing_share();
}

}  // namespace ac
