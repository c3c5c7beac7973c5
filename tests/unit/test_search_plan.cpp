// Plans, the tuning database, the search and compile_model on the CPU backend (issue 7).
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <chrono>
#include <set>

#include "agentcompile/backends/cpu/cpu_evaluator.h"
#include "agentcompile/backends/cpu/cpu_executor.h"
#include "agentcompile/compiler/compile.h"
#include "agentcompile/compiler/route_graph.h"
#include "agentcompile/compiler/tuning_db.h"
#include "agentcompile/core/error.h"
#include "agentcompile/model/model.h"
#include "agentcompile/plan/plan.h"
#include "agentcompile/runtime/engine.h"
#include "agentcompile/runtime/plan_executor.h"
#include "agentcompile/tuning/backend.h"
#include "unit/compile_test_util.h"
#include "unit/model_test_util.h"

namespace ac {
namespace {

using test::expect_bad_input;
using test::TempDir;
using test::write_bytes;

const fs::path kQwen3 = fs::path(AC_TEST_FIXTURES) / "hf" / "qwen3_mha_untied_5x";
const fs::path kLlama = fs::path(AC_TEST_FIXTURES) / "hf" / "llama_gqa2_tied_llama3";

TEST(Plan, RoundTripAndStrictFields) {
  Plan p;
  p.model_hash = std::string(64, 'a');
  p.model_name = "m";
  p.environment = current_environment("cpu");
  p.objective = "latency";
  PlanRoute r;
  r.region = "attn_in";
  r.phase = "decode";
  r.signature = "0123";
  r.family = "cpu:linear.blocked";
  r.route = "op";
  r.params = {{"ROWS", 4}, {"TOKENS", 1}, {"KUNROLL", 8}, {"THREADS", 1}};
  r.ops = {"layers.0.q_proj"};
  p.routes.push_back(r);
  const Json j = p.to_json();
  const Plan q = Plan::from_json(j, "plan.json");
  EXPECT_EQ(q.to_json(), j);
  EXPECT_NE(q.route_for_op("layers.0.q_proj", "decode"), nullptr);
  EXPECT_EQ(q.route_for_op("layers.0.q_proj", "prefill"), nullptr);

  Json bad = j;
  bad["routes"][0]["phase"] = "sideways";
  expect_bad_input([&] { Plan::from_json(bad, "plan.json"); }, {"plan.json", "phase"});
  bad = j;
  bad["model_hash"] = "xyz";
  expect_bad_input([&] { Plan::from_json(bad, "plan.json"); }, {"model_hash"});
  bad = j;
  bad["version"] = 99;
  expect_bad_input([&] { Plan::from_json(bad, "plan.json"); }, {"version 99"});
  bad = j;
  bad["routes"].push_back(j["routes"][0]);
  expect_bad_input([&] { Plan::from_json(bad, "plan.json"); }, {"bound twice"});
  bad = j;
  bad["cuda_fast"] = {{"pdl", true}};  // a cuda_fast block on a cpu plan (its values: FastKnobs.*)
  expect_bad_input([&] { Plan::from_json(bad, "plan.json"); }, {"cuda_fast", "cpu plan"});
  // A route's own shared-memory carveout: absent unless set, read back, a percentage.
  EXPECT_FALSE(j["routes"][0].contains("smem_carveout"));
  Plan c = p;
  c.routes[0].smem_carveout = 30;
  const Json jc = c.to_json();
  EXPECT_EQ(jc["routes"][0]["smem_carveout"], 30);
  const Plan qc = Plan::from_json(jc, "plan.json");
  ASSERT_TRUE(qc.routes[0].smem_carveout);
  EXPECT_EQ(*qc.routes[0].smem_carveout, 30);
  for (int v : {-1, 101}) {
    bad = jc;
    bad["routes"][0]["smem_carveout"] = v;
    expect_bad_input([&] { Plan::from_json(bad, "plan.json"); }, {"routes[0]", "smem_carveout"});
  }
}

TEST(Plan, EnvironmentAndModelChecks) {
  const Environment here = current_environment("cpu");
  EXPECT_EQ(here.mismatch(here), "");
  Environment other = here;
  other.device = "Some Other CPU";
  EXPECT_NE(other.mismatch(here).find("host CPU"), std::string::npos);
  EXPECT_NE(other.key(), here.key());
  other = here;
  other.engine_version = "0.0.1";
  EXPECT_NE(other.mismatch(here).find("engine version"), std::string::npos);
  other = here;
  other.engine_commit = "deadbeef";  // informational only
  EXPECT_EQ(other.mismatch(here), "");
  EXPECT_EQ(other.key(), here.key());

  auto a = load_model(kQwen3), b = load_model(kLlama);
  EXPECT_EQ(model_hash(*a), model_hash(*load_model(kQwen3)));
  EXPECT_NE(model_hash(*a), model_hash(*b));
  Plan p;
  p.model_hash = model_hash(*a);
  p.environment = here;
  expect_bad_input([&] { check_plan_usable(p, "dir", model_hash(*b), here); }, {"--plan dir", "another model"});
  Environment gpu = here;
  gpu.arch = "riscv";
  p.environment = gpu;
  expect_bad_input([&] { check_plan_usable(p, "dir", model_hash(*a), here); }, {"another environment", "arch"});
}

TEST(TuningDb, RecordsSamplesEnvironmentsAndPlans) {
  TempDir tmp;
  const fs::path path = tmp / "t.db";
  const Environment env = current_environment("cpu");
  Environment other = env;
  other.device = "elsewhere";
  {
    TuningDb db(path);
    TuningRecord r;
    r.signature = "sig";
    r.bucket = shape_bucket(true, 1, 1, 200);
    EXPECT_EQ(r.bucket, "decode:b1:c256");
    r.backend = "cpu";
    r.family = "cpu:linear.blocked";
    r.params = {{"ROWS", 2}};
    r.name = "cpu:linear.blocked{ROWS=2}";
    r.stage = "timing";
    r.status = "ok";
    r.median_us = 12.5;
    r.samples_us = {13, 12.5, 12};
    r.model = "m1";
    db.put(env, r);
    r.samples_us = {11, 12.5, 14, 15};  // re-measured: replaced whole
    db.put(env, r);
    TuningRecord f = r;
    f.name = "cpu:fallback";
    f.family = "cpu:fallback";
    f.params.clear();
    f.median_us = 25;
    db.put(env, f);
    EXPECT_EQ(db.count(env), 2);
    EXPECT_EQ(db.count(other), 0);
    EXPECT_FALSE(db.find(other, "sig", r.bucket, r.name));  // another environment's records are not used
    auto got = db.find(env, "sig", r.bucket, r.name);
    ASSERT_TRUE(got);
    EXPECT_EQ(got->samples_us, (std::vector<double>{11, 12.5, 14, 15}));
    EXPECT_EQ(got->params, r.params);
    const auto hist = measured_history(db, env, "sig", "cpu");
    ASSERT_EQ(hist.size(), 2u);
    EXPECT_EQ(hist[0].family, "cpu:linear.blocked");
    EXPECT_DOUBLE_EQ(hist[0].speedup, 2.0);
    db.put_plan(env, PlanRecord{"h", "m", "latency", 100, "{}", ""});
    db.put_plan(env, PlanRecord{"h", "m", "latency", 90, "{\"x\":1}", ""});
    EXPECT_DOUBLE_EQ(db.best_plan(env, "h", "latency")->e2e_us, 90);
    EXPECT_FALSE(db.best_plan(other, "h", "latency"));
    EXPECT_FALSE(db.best_plan(env, "h", "throughput"));
  }
  // WAL mode, and the samples really are rows.
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  sqlite3_prepare_v2(raw, "PRAGMA journal_mode", -1, &s, nullptr);
  ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)), "wal");
  sqlite3_finalize(s);
  sqlite3_prepare_v2(raw, "SELECT COUNT(*) FROM samples", -1, &s, nullptr);
  ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(s, 0), 4 + 4);  // the first 3 samples were replaced
  sqlite3_finalize(s);
  sqlite3_close(raw);

  write_bytes(tmp / "junk.db", std::string(4096, 'x'));
  expect_bad_input([&] { TuningDb junk(tmp / "junk.db"); }, {"junk.db"});
  expect_bad_input([&] { TuningDb dir(tmp.path()); }, {"directory"});
}

TEST(Search, StagesSelectionAndDbReuse) {
  TempDir tmp;
  auto m = load_model(kQwen3);
  const Graph g = build_decoder_graph(m->config, m->weights);
  FrontOptions fo;
  fo.target = host_cpu_target(false);
  fo.phases = {Phase::Decode};
  fo.decode = decode_point(1, 64);
  auto adv = make_advisor(advisor_config("heuristic", "", ""));
  FrontResult front = run_front(g, fo, *adv);
  const RegionWork* mlp = nullptr;
  for (const auto& w : front.work)
    if (w.summary.kind == RegionKind::MlpIn) mlp = &w;
  ASSERT_NE(mlp, nullptr);
  RegionWork w = *mlp;
  // A binding outside the constraints fails at the first stage, with its reason.
  Candidate bad{"cpu:linear.blocked", {{"ROWS", 4}, {"TOKENS", 4}, {"KUNROLL", 8}, {"THREADS", 1}}};
  w.ordered.insert(w.ordered.begin() + 1, bad);
  w.ordered.resize(std::min<size_t>(w.ordered.size(), 8));
  auto ev = make_cpu_evaluator(g, front.partition);
  TuningDb db(tmp / "t.db");
  const Environment env = current_environment("cpu");
  SearchOptions so;
  so.repeats = 3;
  so.model_name = "qwen3";
  RegionSearch s = search_region(w, *ev, &db, env, so, Clock::now() + std::chrono::seconds(60));
  ASSERT_EQ(s.outcomes.size(), w.ordered.size());
  EXPECT_EQ(s.outcomes[0].status, "ok");
  EXPECT_EQ(s.outcomes[1].status, "failed");
  EXPECT_EQ(s.outcomes[1].stage, "constraints");
  EXPECT_NE(s.outcomes[1].reason.find("TOKENS"), std::string::npos);
  for (size_t i = 2; i < s.outcomes.size(); ++i) {
    EXPECT_EQ(s.outcomes[i].status, "ok") << s.outcomes[i].reason;
    EXPECT_EQ(s.outcomes[i].stage, "timing");
    EXPECT_EQ(s.outcomes[i].samples_us.size(), 3u);
    EXPECT_LE(s.outcomes[i].rel_err, 1e-5);
  }
  EXPECT_GT(s.fallback_us, 0);
  EXPECT_FALSE(s.decision.empty());
  if (s.decision == "specialised") {
    EXPECT_GE(s.speedup(), 1 + so.margin);
  }
  EXPECT_EQ(s.measured, w.ordered.size());
  EXPECT_GE(s.to_within_2pct_advised, 1);
  // Warm: nothing measured again, the same records come back.
  RegionSearch again = search_region(w, *ev, &db, env, so, Clock::now() + std::chrono::seconds(60));
  EXPECT_EQ(again.measured, 0u);
  EXPECT_EQ(again.reused, w.ordered.size());
  EXPECT_EQ(again.outcomes[1].stage, "constraints");
  // The noise re-timing is recorded too, so the warm search decides exactly as the cold one.
  EXPECT_EQ(again.winner.name(), s.winner.name());
  EXPECT_EQ(again.decision, s.decision);
  EXPECT_DOUBLE_EQ(again.noise, s.noise);
  for (const auto& n : again.notes) EXPECT_EQ(n.find("re-timed"), std::string::npos) << n;
  const auto best = s.ranked();
  ASSERT_GE(best.size(), 2u);
  auto rec = db.find(env, w.summary.signature, s.bucket, best[0]->candidate.name());
  ASSERT_TRUE(rec);
  EXPECT_GT(rec->retimed_us, 0);
  EXPECT_EQ(rec->samples_us.size(), 2u * so.repeats);  // the timing and the re-timing samples
  // An expired budget still evaluates the fallback and says what was left out.
  TuningDb fresh(tmp / "fresh.db");
  RegionSearch none = search_region(w, *ev, &fresh, env, so, Clock::now());
  EXPECT_EQ(none.outcomes.size(), 1u);
  EXPECT_EQ(none.not_explored, w.ordered.size() - 1);
  EXPECT_EQ(none.winner.family, "cpu:fallback");
}

TEST(Compile, PlanRunsMatchesReferenceAndWarmDbIsFaster) {
  TempDir tmp;
  auto m = load_model(kQwen3);
  const CompileOptions o = test::small_compile_options(tmp / "t.db");
  const auto t0 = std::chrono::steady_clock::now();
  CompileResult cold = compile_model(*m, o);
  const double cold_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(cold.regression.empty());
  EXPECT_TRUE(cold.report["e2e"]["ok"].get<bool>());
  EXPECT_GT(cold.report["totals"]["measured"].get<size_t>(), 20u);
  // A route per region class the path runs on its own edges, and per fused span class it takes.
  size_t routes = 0;
  for (const auto& r : cold.report["regions"]) routes += r["instances_in_fused_spans"] < r["instances"];
  for (const auto& sp : cold.report["spans"]) routes += sp["taken"].get<bool>();
  EXPECT_EQ(cold.plan.routes.size(), routes);
  write_plan_folder(tmp / "plan", cold);
  ASSERT_TRUE(fs::exists(tmp / "plan" / "plan.json"));
  ASSERT_TRUE(fs::exists(tmp / "plan" / "report.md"));

  // The plan runs through the runtime and its logits match the reference backend.
  const Plan p = load_plan_for(tmp / "plan", *m, "auto");
  const Graph g = build_decoder_graph(m->config, m->weights);
  ExecutorLimits lim{1, 16, 16, 0};
  auto ex = make_plan_executor(p, g, lim);
  auto ref = make_cpu_executor(g, lim);
  const std::vector<int32_t> toks = {1, 5, 9, 33, 2, 7, 100, 3};
  auto a = teacher_forced_logits(*ex, toks), b = teacher_forced_logits(*ref, toks);
  for (size_t i = 0; i < a.size(); ++i)
    for (size_t j = 0; j < a[i].size(); ++j) ASSERT_NEAR(a[i][j], b[i][j], 1e-3 + 1e-4 * std::abs(b[i][j]));
  expect_bad_input([&] { load_plan_for(tmp / "plan", *load_model(kLlama), "auto"); }, {"another model"});

  // Warm DB: nothing is measured again and the compile takes less than half the time.
  const auto t1 = std::chrono::steady_clock::now();
  CompileResult warm = compile_model(*m, o);
  const double warm_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  EXPECT_EQ(warm.report["totals"]["measured"].get<size_t>(), 0u);
  EXPECT_LT(warm_s, cold_s / 2) << "cold " << cold_s << " s, warm " << warm_s << " s";
  EXPECT_TRUE(warm.regression.empty()) << warm.regression;
  EXPECT_EQ(warm.report["regression"]["status"], "same routes as the best recorded plan");
  // The reference backend's side of the end-to-end stage came from the DB, identical (under the
  // same timing conditions: small_compile_options fixes them).
  EXPECT_EQ(cold.report["reference_backend"]["source"], "measured now");
  EXPECT_EQ(warm.report["reference_backend"]["source"].get<std::string>().rfind("tuning DB, measured ", 0), 0u);
  EXPECT_EQ(warm.report["reference_backend"]["objective_cost_us"], cold.report["reference_backend"]["objective_cost_us"]);
  EXPECT_TRUE(warm.report["e2e"]["ok"].get<bool>());
  // Other settings (more checked tokens) are another record: measured again.
  CompileOptions more = o;
  more.e2e_tokens += 2;
  CompileResult other = compile_model(*m, more);
  EXPECT_EQ(other.report["reference_backend"]["source"], "measured now");
}

TEST(Compile, RepairBlocksAFailingRouteAndRegressionFailsLoudly) {
  TempDir tmp;
  auto m = load_model(kQwen3);
  CompileOptions o = test::small_compile_options(tmp / "t.db");
  CompileResult first = compile_model(*m, o);
  // Make the end-to-end stage fail every specialised candidate of the region class that gained
  // most, so whichever of them the search picks again must be repaired away.
  const Json* target = nullptr;
  for (const auto& r : first.report["regions"])
    if (r["search"]["decision"] == "specialised" &&
        (!target || r["speedup_vs_fallback"].get<double>() > (*target)["speedup_vs_fallback"].get<double>()))
      target = &r;
  if (!target || (*target)["speedup_vs_fallback"].get<double>() < 1.3)
    GTEST_SKIP() << "no region gained enough on this host to test the repair deterministically";
  std::set<std::string> victims;
  for (const auto& c : (*target)["search"]["candidates"])
    if (c["status"] == "ok" && c["family"] != "cpu:fallback") victims.insert(c["candidate"].get<std::string>());
  // A fused span over an MLP region would run it without its own route: its fused candidates
  // (same phase) fail too, so the region must end on its fallback.
  const std::string kind = (*target)["region"].get<std::string>();
  if (kind == "mlp_in" || kind == "mlp_out")
    for (const auto& sp : first.report["spans"])
      if (sp["phase"] == (*target)["phase"])
        for (const auto& c : sp["search"]["candidates"])
          if (c["status"] == "ok" && c["family"] != "cpu:fallback") victims.insert(c["candidate"].get<std::string>());
  o.e2e_fault_candidates = victims;
  o.allow_regression = true;
  CompileResult repaired = compile_model(*m, o);
  // On a loaded host the end-to-end stage may also repair a route that timed slower than the
  // reference (a genuine timing repair of another region); those are not this test's subject. Every
  // repair that names the injected fault must have blocked a victim, and there must be some.
  std::vector<Json> injected;
  for (const auto& rp : repaired.report["repairs"]) {
    if (rp["reason"].get<std::string>().find("injected fault") == std::string::npos) continue;
    EXPECT_TRUE(victims.count(rp["blocked"].get<std::string>())) << rp.dump();
    injected.push_back(rp);
  }
  ASSERT_FALSE(injected.empty()) << repaired.report["repairs"].dump();
  // Each round takes the next cheapest route; in the end the region runs its fallback (the last
  // replacement names the edges over the blocked one's regions: the fallback, with its neighbour
  // when a fused span was blocked last).
  const std::string last = injected.back()["replacement"].get<std::string>();
  EXPECT_TRUE(last == "cpu:fallback" || last.rfind("cpu:fallback + ", 0) == 0 ||
              last.find(" + cpu:fallback") != std::string::npos) << last;
  for (const auto& r : repaired.plan.routes) {
    if (r.signature == (*target)["signature"].get<std::string>()) {
      EXPECT_EQ(r.route, "fallback");
    }
  }
  EXPECT_TRUE(repaired.report["e2e"]["ok"].get<bool>());
  // A regression beyond the threshold fails unless allowed. The throughput objective has its own
  // plan records: record one, then block one of its specialised routes, so the new plan differs
  // from the only recorded one; the threshold is forced below zero so the side-by-side
  // measurement always counts it as a regression.
  o.e2e_fault_candidates.clear();
  o.objective = "throughput";
  CompileResult recorded = compile_model(*m, o);
  std::string its_victim;
  for (const auto& r : recorded.plan.routes)
    if (r.route != "fallback") its_victim = Candidate{r.family, r.params}.name();
  if (its_victim.empty()) GTEST_SKIP() << "no specialised route won for the throughput objective";
  o.e2e_fault_candidates = {its_victim};
  o.regression_threshold = -0.9;
  o.allow_regression = false;
  CompileResult again = compile_model(*m, o);
  EXPECT_NE(again.regression.find("--allow-regression"), std::string::npos) << again.report["regression"].dump();
  o.allow_regression = true;
  CompileResult allowed = compile_model(*m, o);
  EXPECT_TRUE(allowed.regression.empty());
  EXPECT_EQ(allowed.report["regression"]["status"].get<std::string>().rfind("regression allowed", 0), 0u);
}

}  // namespace
}  // namespace ac
