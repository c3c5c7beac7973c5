// The decode-step tuning's coordinate descent (compiler/step_tuning.h) against a cost model in
// place of the GPU: which points it tries, what it keeps, the margin, the confirmation, failures
// and the deadline.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <thread>

#include "agentcompile/compiler/tuning_db.h"
#include "agentcompile/core/error.h"
#include "agentcompile/tuning/backend.h"
#include "compiler/step_tuning.h"
#include "unit/model_test_util.h"

namespace ac {
namespace {

CandidateOutcome outcome(const std::string& family, int rows, double us, const std::string& status = "ok") {
  CandidateOutcome c;
  c.candidate.family = family;
  if (family != "cuda:fallback") c.candidate.params = {{"ROWS", rows}};
  c.status = status;
  c.median_us = us;
  return c;
}

// Two decode routes (qkv-like "attn_in", "mlp_in") and a prefill route that is never tuned; each
// search holds the fallback and gemv.fused points ROWS 1..4 (alone: ROWS 4 fastest, then 3, 2, 1).
// The step tuning reads and sets only the plan's step carveout: a table of that knob alone stands
// in for the backend's (any backend's table declares it the same way).
const KnobTable& carveout_table() {
  static const KnobTable t("cuda_fast", {Knob("smem_carveout").range(0, 100).none_at(-1).in_plan(KnobInPlan::Optional).defaults_to(-1)});
  return t;
}

struct Fixture {
  std::vector<RegionWork> work;
  std::vector<RegionSearch> searches;
  Plan plan;
  std::vector<size_t> search_of_route = {0, 1, 2};
  Fixture() {
    work.resize(3);
    for (RegionWork& w : work) {
      FamilySpace fb;
      fb.id = "cuda:fallback";
      fb.route = FamilyRoute::Fallback;
      FamilySpace f;
      f.id = "cuda:gemv.fused";
      f.route = FamilyRoute::Region;
      w.space.families = {fb, f};
    }
    for (size_t i = 0; i < 3; ++i) {
      RegionSearch s;
      s.work = &work[i];
      s.outcomes = {outcome("cuda:fallback", 0, 9.0), outcome("cuda:gemv.fused", 1, 8.0), outcome("cuda:gemv.fused", 2, 6.0),
                    outcome("cuda:gemv.fused", 3, 5.0), outcome("cuda:gemv.fused", 4, 4.0),
                    outcome("cuda:gemv.fused", 5, 1.0, "failed")};
      searches.push_back(std::move(s));
    }
    const char* regions[] = {"attn_in", "mlp_in", "attn_in"};
    const char* phases[] = {"decode", "decode", "prefill"};
    for (int i = 0; i < 3; ++i) {
      PlanRoute r;
      r.region = regions[i];
      r.phase = phases[i];
      r.family = "cuda:gemv.fused";
      r.route = "region";
      r.params = {{"ROWS", 4}};
      plan.routes.push_back(r);
    }
  }
};

// Decode time of a plan: a base, plus per decode route a cost by its choice (`cost[region][rows]`,
// rows 0 for the fallback). Counts the calls.
struct CostModel {
  std::map<std::string, std::map<int, double>> cost;
  int calls = 0;
  double operator()(const Plan& p) {
    ++calls;
    double ms = 1.0;
    for (const PlanRoute& r : p.routes)
      if (r.phase == "decode") ms += cost[r.region][r.params.count("ROWS") ? r.params.at("ROWS") : 0];
    return ms;
  }
};

bool decode_only(const PlanRoute& r) { return r.phase == "decode"; }

// A plan's decode time as 1 plus, per decode route, part(region, ROWS (0: the fallback), the
// route's own carveout (-1: none)).
std::function<double(const Plan&)> route_cost(std::function<double(const std::string&, int, int)> part) {
  return [part](const Plan& p) {
    double ms = 1.0;
    for (const PlanRoute& r : p.routes)
      if (r.phase == "decode")
        ms += part(r.region, r.params.count("ROWS") ? r.params.at("ROWS") : 0, r.smem_carveout.value_or(-1));
    return ms;
  };
}

std::string rows_name(int rows) { return Candidate{"cuda:gemv.fused", {{"ROWS", rows}}}.name(); }

TEST(StepTuning, AlternativesAreTheFastestAloneAndTheFallback) {
  Fixture f;
  const auto alt = step_alternatives(f.plan.routes[0], f.searches[0], 2);
  std::vector<std::string> names;
  for (const auto& c : alt) names.push_back(c.name());
  // ROWS 4 is the route's choice; the next two alone (3, 2), then the fallback; the failed one never.
  ASSERT_EQ(names.size(), 3u);
  EXPECT_EQ(names[0], rows_name(3));
  EXPECT_EQ(names[1], rows_name(2));
  EXPECT_EQ(names[2], "cuda:fallback");
  PlanRoute r = f.plan.routes[0];
  set_route_choice(r, f.searches[0], alt[2]);
  EXPECT_EQ(r.family, "cuda:fallback");
  EXPECT_EQ(r.route, "fallback");
  EXPECT_TRUE(r.params.empty());
  EXPECT_DOUBLE_EQ(r.time_us, 9.0);
  set_route_choice(r, f.searches[0], alt[1]);
  EXPECT_EQ(r.route, "region");
  EXPECT_EQ(r.params.at("ROWS"), 2);
  EXPECT_DOUBLE_EQ(r.time_us, 6.0);
  EXPECT_THROW(set_route_choice(r, f.searches[0], Candidate{"cuda:nope", {}}), Error);
}

TEST(StepTuning, KeepsWhatTheStepPrefersAndOnlyBeyondTheMargin) {
  Fixture f;
  CostModel m;
  // attn_in: ROWS 2 is clearly better in the step than the choice alone (ROWS 4); mlp_in: ROWS 3
  // is better only by 0.1% of the step (inside the margin), the fallback worse.
  m.cost["attn_in"] = {{4, 0.50}, {3, 0.52}, {2, 0.40}, {1, 0.60}, {0, 0.55}};
  m.cost["mlp_in"] = {{4, 0.30}, {3, 0.2985}, {2, 0.31}, {1, 0.35}, {0, 0.33}};
  int refreshed = 0;
  StepTuneOptions o;
  o.top = 3;
  const StepTuning t = tune_decode_step(f.plan, f.searches, f.search_of_route, decode_only, [&](Plan&) { ++refreshed; },
                                        std::ref(m), o);
  EXPECT_TRUE(t.changed);
  EXPECT_EQ(f.plan.routes[0].params.at("ROWS"), 2);
  EXPECT_EQ(f.plan.routes[1].params.at("ROWS"), 4);  // 0.1% is inside the 0.5% margin
  EXPECT_EQ(f.plan.routes[2].params.at("ROWS"), 4);  // prefill: not tuned
  ASSERT_EQ(t.changes.size(), 1u);
  EXPECT_NE(t.changes[0].find("attn_in"), std::string::npos);
  // start + 4 alternatives per decode route in each of two passes (the first kept a point) + 2
  // confirming rounds of (start, tuned)
  EXPECT_EQ(m.calls, 1 + 2 * (4 + 4) + 4);
  EXPECT_EQ(refreshed, 16);
  EXPECT_NEAR(t.start_ms, 1.8, 1e-9);
  EXPECT_NEAR(t.tuned_ms, 1.7, 1e-9);
  const Json j = t.to_json();
  EXPECT_EQ(j["trials"].size(), t.trials.size());
}

// Two routes each faster by 0.3% with another point (inside the 0.5% margin, so neither is kept
// alone) and independent: both at once are 0.6% faster, kept and confirmed. Where they interact
// (together slower), nothing changes and nothing is confirmed; with combine off, neither is tried.
TEST(StepTuning, CombinesGainsInsideTheMarginWhenTheyAddUp) {
  // attn_in's ROWS 3 and mlp_in's ROWS 2 each 0.3% faster than the start (ROWS 4), the rest slower.
  const std::map<int, double> attn_in = {{4, 0.5}, {3, 0.494}, {2, 0.6}, {1, 0.7}, {0, 0.8}};
  const std::map<int, double> mlp_in = {{4, 0.5}, {3, 0.7}, {2, 0.494}, {1, 0.7}, {0, 0.8}};
  StepTuneOptions single;  // each gain timed once (no rounds: GainsInsideTheMarginKeptOnlyWhenTheRoundsAgree)
  single.near_rounds = 0;
  {
    Fixture f;
    CostModel m;
    m.cost["attn_in"] = attn_in;
    m.cost["mlp_in"] = mlp_in;
    m.cost["mlp_in"][0] = 0.497;  // the fallback also inside the margin, slower than ROWS 2
    const StepTuning t = tune_decode_step(f.plan, f.searches, f.search_of_route, decode_only, [](Plan&) {}, std::ref(m), single);
    EXPECT_TRUE(t.changed);
    EXPECT_EQ(f.plan.routes[0].params.at("ROWS"), 3);
    EXPECT_EQ(f.plan.routes[1].params.at("ROWS"), 2);  // its fastest point inside the margin, not the fallback
    ASSERT_EQ(t.changes.size(), 2u);
    EXPECT_EQ(m.calls, 1 + 4 + 4 + 1 + 4);  // start, the descent, the combination, the confirmation
    bool combined_kept = false;
    for (const StepTrial& x : t.trials)
      if (x.region == "plan" && x.candidate == "combined") combined_kept = x.kept && std::abs(x.ms - 1.988) < 1e-9;
    EXPECT_TRUE(combined_kept);
    EXPECT_NEAR(t.tuned_ms, 1.988, 1e-9);
  }
  {
    Fixture f;
    CostModel m;
    m.cost["attn_in"] = attn_in;
    m.cost["mlp_in"] = mlp_in;
    auto interacting = [&](const Plan& p) {
      const double ms = m(p);
      const auto rows = [&](size_t k) { return p.routes[k].params.count("ROWS") ? p.routes[k].params.at("ROWS") : 0; };
      return rows(0) == 3 && rows(1) == 2 ? ms + 0.1 : ms;
    };
    const Plan before = f.plan;
    const StepTuning t = tune_decode_step(f.plan, f.searches, f.search_of_route, decode_only, [](Plan&) {}, interacting, single);
    EXPECT_FALSE(t.changed);
    EXPECT_EQ(f.plan.to_json(), before.to_json());
    EXPECT_EQ(m.calls, 1 + 4 + 4 + 1);
  }
  {
    Fixture f;
    CostModel m;
    m.cost["attn_in"] = attn_in;
    m.cost["mlp_in"] = mlp_in;
    StepTuneOptions o = single;
    o.combine = false;
    const StepTuning t = tune_decode_step(f.plan, f.searches, f.search_of_route, decode_only, [](Plan&) {}, std::ref(m), o);
    EXPECT_FALSE(t.changed);
    EXPECT_EQ(m.calls, 1 + 4 + 4);
  }
}

TEST(StepTuning, NothingBetterLeavesThePlanAsItWas) {
  Fixture f;
  CostModel m;
  m.cost["attn_in"] = {{4, 0.5}, {3, 0.6}, {2, 0.7}, {1, 0.8}, {0, 0.9}};
  m.cost["mlp_in"] = m.cost["attn_in"];
  const Plan before = f.plan;
  const StepTuning t = tune_decode_step(f.plan, f.searches, f.search_of_route, decode_only, [](Plan&) {}, std::ref(m), {});
  EXPECT_FALSE(t.changed);
  EXPECT_TRUE(t.changes.empty());
  EXPECT_EQ(f.plan.to_json(), before.to_json());
  EXPECT_EQ(m.calls, 1 + 4 + 4);  // no confirmation when nothing was kept
}

// A confirmation that does not reproduce the gain (noise) reverts; a trial that throws is
// recorded as failed and not kept.
TEST(StepTuning, RevertsWhenTheConfirmationDisagreesAndRecordsFailures) {
  Fixture f;
  int call = 0;
  auto timer = [&](const Plan& p) -> double {
    ++call;
    const int rows = p.routes[0].params.count("ROWS") ? p.routes[0].params.at("ROWS") : 0;
    if (rows == 3) throw_input("launch", "too many resources requested");
    if (call <= 9) return rows == 2 ? 1.0 : 2.0;  // the first pass (9 timings) sees ROWS 2 twice as fast
    return 2.0;                                    // the second pass and the confirmation do not
  };
  const Plan before = f.plan;
  const StepTuning t = tune_decode_step(f.plan, f.searches, f.search_of_route, decode_only, [](Plan&) {}, timer, {});
  EXPECT_FALSE(t.changed);
  EXPECT_EQ(f.plan.to_json(), before.to_json());
  EXPECT_NE(t.note.find("reverted"), std::string::npos);
  bool failed_recorded = false;
  for (const StepTrial& x : t.trials)
    if (x.region == "attn_in" && x.candidate == rows_name(3)) failed_recorded = !x.error.empty() && !x.kept;
  EXPECT_TRUE(failed_recorded);
}

// Routes that interact: attn_in's ROWS 3 is faster only once mlp_in (tuned after it) is at ROWS 2.
// The first pass keeps mlp_in's point, the second finds attn_in's; with one pass it stays unseen.
// A pass that keeps nothing is the last.
TEST(StepTuning, SecondPassRetimesAroundTheKeptPoints) {
  auto cost = [](const Plan& p) {
    const auto rows = [&](size_t k) { return p.routes[k].params.count("ROWS") ? p.routes[k].params.at("ROWS") : 0; };
    const std::map<int, double> attn_in = {{4, 0.5}, {3, 0.6}, {2, 0.7}, {1, 0.7}, {0, 0.8}};
    const std::map<int, double> mlp_in = {{4, 0.5}, {3, 0.7}, {2, 0.3}, {1, 0.7}, {0, 0.8}};
    const double a = rows(0) == 3 && rows(1) == 2 ? 0.4 : attn_in.at(rows(0));
    return 1.0 + a + mlp_in.at(rows(1));
  };
  for (int passes : {1, 2}) {
    Fixture f;
    int calls = 0;
    StepTuneOptions o;
    o.passes = passes;
    const StepTuning t = tune_decode_step(f.plan, f.searches, f.search_of_route, decode_only, [](Plan&) {},
                                          [&](const Plan& p) { ++calls; return cost(p); }, o);
    EXPECT_TRUE(t.changed) << passes;
    EXPECT_EQ(f.plan.routes[1].params.at("ROWS"), 2) << passes;
    EXPECT_EQ(f.plan.routes[0].params.at("ROWS"), passes == 2 ? 3 : 4) << passes;
    EXPECT_EQ(calls, 1 + passes * (4 + 4) + 4) << passes;
    EXPECT_NEAR(t.tuned_ms, passes == 2 ? 1.7 : 1.8, 1e-9);
    int second = 0;
    for (const StepTrial& x : t.trials) second += x.pass == 1 ? 1 : 0;
    EXPECT_EQ(second, passes == 2 ? 8 : 0);
    const auto back = StepTuning::from_json(t.to_json());  // the pass survives the DB record
    ASSERT_TRUE(back);
    EXPECT_EQ(back->to_json(), t.to_json());
  }
  {  // three passes allowed: the third finds nothing better and the descent ends there
    Fixture f;
    int calls = 0;
    StepTuneOptions o;
    o.passes = 3;
    tune_decode_step(f.plan, f.searches, f.search_of_route, decode_only, [](Plan&) {},
                     [&](const Plan& p) { ++calls; return cost(p); }, o);
    EXPECT_EQ(f.plan.routes[0].params.at("ROWS"), 3);
    EXPECT_EQ(calls, 1 + 3 * (4 + 4) + 4);
  }
}

// A seed plan's choices onto this compile's plan: a tunable route takes the seed's point when its
// search validated it (ROWS 2), keeps its own when the seed's failed here (ROWS 5) or the seed has
// no such route; the prefill route is never touched; the seed's carveout comes along. A seed equal
// to the plan changes nothing.
TEST(StepTuning, SeedRoutesTakeWhatThisCompileValidated) {
  Fixture f;
  f.plan.cuda_fast = KnobValues(carveout_table());
  f.plan.cuda_fast->set("smem_carveout", 60);
  int refreshed = 0;
  auto refresh = [&](Plan&) { ++refreshed; };
  Plan seed = f.plan;
  seed.routes[0].params = {{"ROWS", 2}};
  seed.routes[1].params = {{"ROWS", 5}};
  seed.routes[2].params = {{"ROWS", 1}};
  seed.cuda_fast->set("smem_carveout", 40);
  const SeededPlan sp = seed_routes(f.plan, seed, f.searches, f.search_of_route, decode_only, refresh);
  EXPECT_TRUE(sp.changed);
  EXPECT_EQ(sp.plan.routes[0].params.at("ROWS"), 2);
  EXPECT_DOUBLE_EQ(sp.plan.routes[0].time_us, 6.0);  // its time alone as this compile measured it
  EXPECT_EQ(sp.plan.routes[1].params.at("ROWS"), 4);
  EXPECT_EQ(sp.plan.routes[2].params.at("ROWS"), 4);
  EXPECT_EQ(sp.plan.cuda_fast->get("smem_carveout"), 40);
  EXPECT_EQ(sp.taken, (std::vector<std::string>{"attn_in: " + rows_name(2), "smem_carveout: 40"}));
  EXPECT_EQ(sp.missing, (std::vector<std::string>{"mlp_in: " + rows_name(5)}));
  EXPECT_EQ(refreshed, 1);
  const SeededPlan same = seed_routes(f.plan, f.plan, f.searches, f.search_of_route, decode_only, refresh);
  EXPECT_FALSE(same.changed);
  EXPECT_EQ(same.plan.to_json(), f.plan.to_json());
  Plan partial = f.plan;
  partial.routes.erase(partial.routes.begin() + 1);  // no mlp_in route in the seed
  const SeededPlan p = seed_routes(f.plan, partial, f.searches, f.search_of_route, decode_only, refresh);
  EXPECT_FALSE(p.changed);
  EXPECT_EQ(p.missing, (std::vector<std::string>{"mlp_in: (none in the seed)"}));
}

TEST(StepTuning, StopsAtTheDeadline) {
  Fixture f;
  CostModel m;
  m.cost["attn_in"] = {{4, 0.5}, {3, 0.1}, {2, 0.1}, {1, 0.1}, {0, 0.1}};
  StepTuneOptions o;
  o.deadline = Clock::now();  // already past: only the start is timed
  const StepTuning t = tune_decode_step(f.plan, f.searches, f.search_of_route, decode_only, [](Plan&) {}, std::ref(m), o);
  EXPECT_FALSE(t.changed);
  EXPECT_EQ(m.calls, 1);
  EXPECT_NE(t.note.find("budget"), std::string::npos);
}

// A tuning recorded in the DB and applied to the same starting plan gives the plan the measuring
// compile ended with, without timing anything; a record that names a candidate the search does
// not have, or another number of routes, is not applied.
TEST(StepTuning, RecordedOutcomeRoundTripsThroughTheDbAndApplies) {
  Fixture f;
  CostModel m;
  m.cost["attn_in"] = {{4, 0.50}, {3, 0.52}, {2, 0.40}, {1, 0.60}, {0, 0.55}};
  m.cost["mlp_in"] = {{4, 0.30}, {3, 0.31}, {2, 0.32}, {1, 0.35}, {0, 0.20}};
  const Plan start = f.plan;
  Plan measured = f.plan;
  const StepTuning t = tune_decode_step(measured, f.searches, f.search_of_route, decode_only, [](Plan&) {}, std::ref(m), {});
  ASSERT_TRUE(t.changed);
  ASSERT_EQ(t.final.size(), 3u);
  EXPECT_EQ(t.final[1], "cuda:fallback");

  test::TempDir tmp;
  const Environment env = current_environment("cpu");
  const std::string key = step_tuning_key(start, "hash1", 64, 128, {});
  {
    TuningDb db(tmp / "t.db");
    EXPECT_FALSE(db.step_tuning(env, key));
    db.put_step_tuning(env, key, t.to_json().dump());
  }
  TuningDb db(tmp / "t.db");  // reopened: the record persists
  const auto hit = db.step_tuning(env, key);
  ASSERT_TRUE(hit);
  const auto rec = StepTuning::from_json(Json::parse(hit->first));
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->to_json(), t.to_json());
  Plan warm = start;
  int refreshed = 0;
  ASSERT_TRUE(apply_recorded_step_tuning(warm, *rec, f.searches, f.search_of_route, [&](Plan&) { ++refreshed; }));
  EXPECT_EQ(warm.to_json(), measured.to_json());
  EXPECT_EQ(refreshed, 1);
  // Keys: another starting plan, model or token count is another record.
  Plan other = start;
  other.routes[0].params = {{"ROWS", 3}};
  EXPECT_NE(step_tuning_key(other, "hash1", 64, 128, {}), key);
  EXPECT_NE(step_tuning_key(start, "hash2", 64, 128, {}), key);
  EXPECT_NE(step_tuning_key(start, "hash1", 32, 128, {}), key);
  StepTuneOptions one_pass;
  one_pass.passes = 1;
  EXPECT_NE(step_tuning_key(start, "hash1", 64, 128, one_pass), key);
  // ... and so is another shared-memory carveout (the chain's timings depend on it).
  Plan carved = start;
  carved.cuda_fast = KnobValues(carveout_table());
  const std::string no_carveout = step_tuning_key(carved, "hash1", 64, 128, {});
  EXPECT_EQ(no_carveout, key);
  carved.cuda_fast->set("smem_carveout", 40);
  const std::string at40 = step_tuning_key(carved, "hash1", 64, 128, {});
  EXPECT_NE(at40, no_carveout);
  carved.cuda_fast->set("smem_carveout", 60);
  EXPECT_NE(step_tuning_key(carved, "hash1", 64, 128, {}), at40);
  // Records that do not fit are not applied, and leave the plan as it was.
  StepTuning bad = *rec;
  bad.final[0] = rows_name(5);  // failed in the search: not a choice
  Plan p = start;
  EXPECT_FALSE(apply_recorded_step_tuning(p, bad, f.searches, f.search_of_route, [](Plan&) {}));
  EXPECT_EQ(p.to_json(), start.to_json());
  bad = *rec;
  bad.final.pop_back();
  EXPECT_FALSE(apply_recorded_step_tuning(p, bad, f.searches, f.search_of_route, [](Plan&) {}));
  EXPECT_FALSE(StepTuning::from_json(Json::parse("{\"trials\": 3}")));
}

// With route carveouts, a route's points are also timed under each value as the route's own
// (and with none): a point that wins only under its own carveout is found (the case of
// bench/results/2026-12-03-carveout-map/), named with it, kept in the route, and re-applied from
// the record; a record naming a malformed carveout is not applied.
TEST(StepTuning, RouteCarveoutsAreSearchedWithThePoints) {
  Fixture f;
  // Decode time: as CostModel, but mlp_in's ROWS 2 is fast only under its own carveout 30, and
  // ROWS 4 (the choice) a little faster under 60.
  const auto cost = route_cost([](const std::string& region, int rows, int c) {
    if (region == "attn_in") return 0.5 + (c >= 0 ? 0.01 : 0.0);  // its own carveouts only cost
    if (rows == 2) return c == 30 ? 0.20 : 0.40;
    if (rows == 4) return c == 60 ? 0.29 : 0.30;
    return 0.35;
  });
  StepTuneOptions plain;
  Plan without = f.plan;
  const StepTuning t0 = tune_decode_step(without, f.searches, f.search_of_route, decode_only, [](Plan&) {}, cost, plain);
  EXPECT_FALSE(t0.changed);  // no point of the search beats ROWS 4 under the plan's carveout
  for (const StepTrial& x : t0.trials) EXPECT_EQ(x.candidate.find("@carveout"), std::string::npos) << x.candidate;

  StepTuneOptions o;
  o.carveouts = {30, 60};
  const Plan start = f.plan;
  const StepTuning t = tune_decode_step(f.plan, f.searches, f.search_of_route, decode_only, [](Plan&) {}, cost, o);
  ASSERT_TRUE(t.changed) << t.note;
  EXPECT_EQ(f.plan.routes[1].params.at("ROWS"), 2);
  ASSERT_TRUE(f.plan.routes[1].smem_carveout);
  EXPECT_EQ(*f.plan.routes[1].smem_carveout, 30);
  EXPECT_FALSE(f.plan.routes[0].smem_carveout);  // attn_in's own carveouts never paid
  EXPECT_FALSE(f.plan.routes[2].smem_carveout);  // prefill: not tuned
  ASSERT_EQ(t.final.size(), 3u);
  EXPECT_EQ(t.final[1], rows_name(2) + " @carveout 30");
  EXPECT_EQ(t.final[0], rows_name(4));
  bool tried_none = false;
  for (const StepTrial& x : t.trials) tried_none = tried_none || x.candidate == rows_name(3) + " @carveout 60";
  EXPECT_TRUE(tried_none);
  // The plan's JSON carries the route's carveout and reads it back.
  const Json j = f.plan.to_json();
  EXPECT_EQ(j.at("routes")[1].at("smem_carveout"), 30);
  EXPECT_FALSE(j.at("routes")[0].contains("smem_carveout"));
  // Another key than without route carveouts; the record re-applies to the starting plan.
  EXPECT_NE(step_tuning_key(start, "h", 64, 128, o), step_tuning_key(start, "h", 64, 128, plain));
  const auto rec = StepTuning::from_json(t.to_json());
  ASSERT_TRUE(rec);
  Plan warm = start;
  ASSERT_TRUE(apply_recorded_step_tuning(warm, *rec, f.searches, f.search_of_route, [](Plan&) {}));
  EXPECT_EQ(warm.to_json(), f.plan.to_json());
  StepTuning bad = *rec;
  bad.final[1] = rows_name(2) + " @carveout 300";
  Plan p = start;
  EXPECT_FALSE(apply_recorded_step_tuning(p, bad, f.searches, f.search_of_route, [](Plan&) {}));
  bad.final[1] = rows_name(2) + " @carveout x";
  EXPECT_FALSE(apply_recorded_step_tuning(p, bad, f.searches, f.search_of_route, [](Plan&) {}));
  EXPECT_EQ(p.to_json(), start.to_json());
}

// A pass times every route's points under its current carveout before any route's carveouts, so a
// budget that runs out early has still tried each route's alternatives (here mlp_in's ROWS 2,
// clearly faster, found within start + 8 trials, where a route-by-route order would have spent
// them on attn_in's 4 points and 4 of its carveouts). The cut tuning says how many planned trials
// it left, is marked cut (a warm compile measures it again), and that survives the DB record.
TEST(StepTuning, BudgetCutStillCoversEveryRoutesPoints) {
  Fixture f;
  CostModel m;
  m.cost["attn_in"] = {{4, 0.5}, {3, 0.6}, {2, 0.7}, {1, 0.8}, {0, 0.9}};
  m.cost["mlp_in"] = {{4, 0.5}, {3, 0.6}, {2, 0.3}, {1, 0.8}, {0, 0.9}};
  StepTuneOptions o;
  o.carveouts = {30, 60};
  auto timer = [&](const Plan& p) {
    const double ms = m(p);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // each timing takes ~0.05 s
    if (m.calls == 1 + 8) o.deadline = Clock::now();  // the budget ends after the ninth timing
    return ms;
  };
  const StepTuning t = tune_decode_step(f.plan, f.searches, f.search_of_route, decode_only, [](Plan&) {}, timer, o);
  ASSERT_GE(t.trials.size(), 9u);
  for (size_t i = 1; i <= 8; ++i) {
    EXPECT_EQ(t.trials[i].region, i <= 4 ? "attn_in" : "mlp_in") << i;
    EXPECT_EQ(t.trials[i].candidate.find("@carveout"), std::string::npos) << t.trials[i].candidate;
  }
  EXPECT_TRUE(t.changed) << t.note;  // kept, then confirmed (the confirmation ignores the budget)
  EXPECT_EQ(f.plan.routes[1].params.at("ROWS"), 2);
  EXPECT_EQ(m.calls, 1 + 8 + 4);
  EXPECT_TRUE(t.cut);
  // Left in pass 1: each route's current point under 30 and 60 (2 + 2), then its 4 alternatives
  // under 30 and 60 (8 + 8).
  EXPECT_NE(t.note.find("the budget ran out after 8 trials, 20 more planned in pass 1"), std::string::npos) << t.note;
  // ... and about how much more budget they need at the pace so far: 20 x ~0.05 s.
  const size_t about = t.note.find("a budget about ");
  ASSERT_NE(about, std::string::npos) << t.note;
  const int more_s = std::atoi(t.note.c_str() + about + 15);
  EXPECT_GE(more_s, 1) << t.note;
  EXPECT_LE(more_s, 3) << t.note;
  const auto back = StepTuning::from_json(t.to_json());
  ASSERT_TRUE(back);
  EXPECT_TRUE(back->cut);
  // A tuning that ran to its end is not cut; a record from before the flag is read from its note.
  Fixture g;
  CostModel n;
  n.cost = m.cost;
  StepTuneOptions all;
  all.carveouts = {30, 60};
  const StepTuning whole = tune_decode_step(g.plan, g.searches, g.search_of_route, decode_only, [](Plan&) {}, std::ref(n), all);
  EXPECT_FALSE(whole.cut) << whole.note;
  EXPECT_FALSE(StepTuning::from_json(whole.to_json())->cut);
  Json old = t.to_json();
  old.erase("cut");
  EXPECT_TRUE(StepTuning::from_json(old)->cut);
  old["note"] = "";
  EXPECT_FALSE(StepTuning::from_json(old)->cut);
}

// A route's current point kept under a carveout of its own in tier 1 moves the route there, and
// tier 2 still times its alternatives under that carveout in the same pass (here mlp_in's ROWS 2,
// fast only under 30 once ROWS 4 @30 is kept; one pass, so a second could not find it instead).
TEST(StepTuning, AlternativesAreTimedUnderTheCarveoutKeptForTheRoute) {
  Fixture f;
  const auto cost = route_cost([](const std::string& region, int rows, int c) {
    if (region == "attn_in") return rows == 4 ? 0.5 : 0.6;
    if (rows == 4) return c == 30 ? 0.45 : 0.5;
    return rows == 2 && c == 30 ? 0.3 : 0.6;
  });
  StepTuneOptions o;
  o.carveouts = {30, 60};
  o.passes = 1;
  const StepTuning t = tune_decode_step(f.plan, f.searches, f.search_of_route, decode_only, [](Plan&) {}, cost, o);
  ASSERT_TRUE(t.changed) << t.note;
  EXPECT_EQ(f.plan.routes[1].params.at("ROWS"), 2);
  ASSERT_TRUE(f.plan.routes[1].smem_carveout);
  EXPECT_EQ(*f.plan.routes[1].smem_carveout, 30);
  EXPECT_FALSE(t.cut);
  ASSERT_EQ(t.changes.size(), 2u);
  EXPECT_EQ(t.changes[0], "mlp_in: " + rows_name(4) + " -> " + rows_name(4) + " @carveout 30");
  EXPECT_EQ(t.changes[1], "mlp_in: " + rows_name(4) + " @carveout 30 -> " + rows_name(2) + " @carveout 30");
  EXPECT_NEAR(t.tuned_ms, 1.8, 1e-9);
}

// A route's best gain inside the margin (0.3% here) but beyond near_margin is re-timed against
// the route's choice in interleaved rounds: kept when it wins every round (and the confirmation
// then needs only near_margin); a gain that one timing showed and the rounds do not (noise) is
// not kept, and the plan stays as it was.
TEST(StepTuning, GainsInsideTheMarginKeptOnlyWhenTheRoundsAgree) {
  const std::map<int, double> attn_in = {{4, 0.5}, {3, 0.494}, {2, 0.6}, {1, 0.7}, {0, 0.8}};
  const std::map<int, double> mlp_in = {{4, 0.5}, {3, 0.7}, {2, 0.6}, {1, 0.7}, {0, 0.8}};
  {
    Fixture f;
    CostModel m;
    m.cost["attn_in"] = attn_in;
    m.cost["mlp_in"] = mlp_in;
    StepTuneOptions o;
    o.passes = 1;
    const StepTuning t = tune_decode_step(f.plan, f.searches, f.search_of_route, decode_only, [](Plan&) {}, std::ref(m), o);
    EXPECT_TRUE(t.changed) << t.note;
    EXPECT_EQ(f.plan.routes[0].params.at("ROWS"), 3);
    EXPECT_EQ(f.plan.routes[1].params.at("ROWS"), 4);
    ASSERT_EQ(t.changes.size(), 1u);
    // start, attn_in's 4, its 3 rounds of 2, mlp_in's 4, the confirmation.
    EXPECT_EQ(m.calls, 1 + 4 + 6 + 4 + 4);
    int rounds_kept = 0;
    for (const StepTrial& x : t.trials) rounds_kept += x.region == "attn_in" && x.candidate == rows_name(3) && x.kept;
    EXPECT_EQ(rounds_kept, 3);
  }
  {
    // The same gain in its first timing only: every later timing of ROWS 3 is 0.2% slower.
    Fixture f;
    CostModel m;
    m.cost["attn_in"] = attn_in;
    m.cost["mlp_in"] = mlp_in;
    int seen = 0;
    auto noisy = [&](const Plan& p) {
      double ms = m(p);
      if (p.routes[0].params.count("ROWS") && p.routes[0].params.at("ROWS") == 3 && seen++ > 0) ms += 0.010;
      return ms;
    };
    const Plan before = f.plan;
    StepTuneOptions o;
    o.passes = 1;
    const StepTuning t = tune_decode_step(f.plan, f.searches, f.search_of_route, decode_only, [](Plan&) {}, noisy, o);
    EXPECT_FALSE(t.changed);
    EXPECT_EQ(f.plan.to_json(), before.to_json());
    EXPECT_EQ(m.calls, 1 + 4 + 6 + 4);
    // Off: one timing inside the margin is never kept (nor re-timed).
    Fixture g;
    CostModel n;
    n.cost["attn_in"] = attn_in;
    n.cost["mlp_in"] = mlp_in;
    o.near_rounds = 0;
    EXPECT_FALSE(tune_decode_step(g.plan, g.searches, g.search_of_route, decode_only, [](Plan&) {}, std::ref(n), o).changed);
    EXPECT_EQ(n.calls, 1 + 4 + 4);
  }
}

// Two routes each faster by less than near_margin (0.075%), together by more (0.15%) and less
// than the margin: the combination is re-timed in rounds and kept when they agree.
TEST(StepTuning, CombinationInsideTheMarginKeptWhenTheRoundsAgree) {
  Fixture f;
  CostModel m;
  m.cost["attn_in"] = {{4, 0.5}, {3, 0.4985}, {2, 0.6}, {1, 0.7}, {0, 0.8}};
  m.cost["mlp_in"] = {{4, 0.5}, {3, 0.7}, {2, 0.4985}, {1, 0.7}, {0, 0.8}};
  StepTuneOptions o;
  o.passes = 1;
  const StepTuning t = tune_decode_step(f.plan, f.searches, f.search_of_route, decode_only, [](Plan&) {}, std::ref(m), o);
  EXPECT_TRUE(t.changed) << t.note;
  EXPECT_EQ(f.plan.routes[0].params.at("ROWS"), 3);
  EXPECT_EQ(f.plan.routes[1].params.at("ROWS"), 2);
  // start, the descent (no rounds: each gain under near_margin), the combination, its 3 rounds,
  // the confirmation.
  EXPECT_EQ(m.calls, 1 + 4 + 4 + 1 + 6 + 4);
  int kept = 0;
  for (const StepTrial& x : t.trials) kept += x.region == "plan" && x.candidate == "combined" && x.kept;
  EXPECT_EQ(kept, 4);  // the single timing and its three rounds
}

}  // namespace
}  // namespace ac
