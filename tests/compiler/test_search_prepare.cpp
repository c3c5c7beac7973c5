// search_region's Evaluator::prepare hook: called once, after begin, with exactly the candidates
// it is about to measure (not in the DB, passing their constraints, in the advised order) and
// a deadline inside the region's (the CUDA evaluators compile those in parallel threads there).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

#include "agentcompile/compiler/compile.h"
#include "agentcompile/model/model.h"
#include "agentcompile/tuning/backend.h"
#include "unit/model_test_util.h"

namespace ac {
namespace {

using test::TempDir;

const fs::path kQwen3 = fs::path(AC_TEST_FIXTURES) / "hf" / "qwen3_mha_untied_5x";

// Records the calls; every candidate is correct and takes 10 us (the fallback 20 us).
class RecordingEvaluator final : public Evaluator {
 public:
  std::string backend() const override { return "cpu"; }
  std::string timing_method() const override { return "fixed"; }
  void begin(const RegionTask&) override { calls.push_back("begin"); }
  void prepare(const std::vector<Candidate>& cs, Clock::time_point deadline) override {
    calls.push_back("prepare");
    prepared.push_back(cs);
    prepare_deadline = deadline;
  }
  std::string compile(const Candidate& c) override {
    calls.push_back("compile " + c.name());
    return "";
  }
  CorrectnessResult check(const Candidate&) override {
    CorrectnessResult r;
    r.ok = true;
    r.checks = 1;
    return r;
  }
  TimingResult time(const Candidate& c, int, int repeats) override {
    TimingResult t;
    t.samples_us.assign(size_t(repeats), c.family == "cpu:fallback" ? 20.0 : 10.0);
    t.median_us = t.samples_us.front();
    t.ok = true;
    return t;
  }
  std::vector<std::string> calls;
  std::vector<std::vector<Candidate>> prepared;
  Clock::time_point prepare_deadline{};
};

struct Fixture {
  std::unique_ptr<Model> m = load_model(kQwen3);
  Graph g = build_decoder_graph(m->config, m->weights);
  RegionWork w;
  Fixture() {
    FrontOptions fo;
    fo.target = host_cpu_target(false);
    fo.phases = {Phase::Decode};
    fo.decode = decode_point(1, 64);
    auto adv = make_advisor(advisor_config("heuristic", "", ""));
    FrontResult front = run_front(g, fo, *adv);
    for (const auto& x : front.work)
      if (x.summary.kind == RegionKind::MlpIn) w = x;
    // A point outside the constraints (never built) second; 6 candidates in all.
    w.ordered.insert(w.ordered.begin() + 1,
                     Candidate{"cpu:linear.blocked", {{"ROWS", 4}, {"TOKENS", 4}, {"KUNROLL", 8}, {"THREADS", 1}}});
    w.ordered.resize(std::min<size_t>(w.ordered.size(), 6));
  }
};

TEST(SearchPrepare, GetsTheCandidatesToMeasureOnceBeforeTheFirst) {
  Fixture f;
  ASSERT_EQ(f.w.ordered.size(), 6u);
  TempDir tmp;
  TuningDb db(tmp / "t.db");
  const Environment env = current_environment("cpu");
  SearchOptions so;
  so.repeats = 2;
  RecordingEvaluator ev;
  const auto before = Clock::now();
  const auto deadline = before + std::chrono::seconds(60);
  RegionSearch s = search_region(f.w, ev, &db, env, so, deadline);
  ASSERT_EQ(s.outcomes.size(), 6u);
  EXPECT_EQ(s.outcomes[1].stage, "constraints");
  ASSERT_EQ(ev.prepared.size(), 1u);
  ASSERT_GE(ev.calls.size(), 3u);
  EXPECT_EQ(ev.calls[0], "begin");
  EXPECT_EQ(ev.calls[1], "prepare");
  // Every candidate but the one that fails its constraints, in the advised order.
  const std::vector<Candidate>& p = ev.prepared.front();
  ASSERT_EQ(p.size(), 5u);
  EXPECT_EQ(p[0].name(), f.w.ordered[0].name());
  for (size_t i = 1; i < p.size(); ++i) EXPECT_EQ(p[i].name(), f.w.ordered[i + 1].name());
  // Half of the time left at most: the rest measures what was built.
  EXPECT_LE(ev.prepare_deadline, before + std::chrono::seconds(31));
  EXPECT_GT(ev.prepare_deadline, before + std::chrono::seconds(29));
  EXPECT_EQ(s.decision, "specialised");

  // With part of the space in the DB, only the rest is prepared; with all of it, nothing.
  TuningDb partial(tmp / "p.db");
  for (size_t i = 0; i < 3; ++i) {
    TuningRecord r;
    r.signature = f.w.summary.signature;
    r.bucket = s.bucket;
    r.backend = "cpu";
    r.family = f.w.ordered[i].family;
    r.params = f.w.ordered[i].params;
    r.name = f.w.ordered[i].name();
    r.stage = "timing";
    r.status = "ok";
    r.median_us = 15;
    r.samples_us = {15, 15};
    partial.put(env, r);
  }
  RecordingEvaluator ev2;
  search_region(f.w, ev2, &partial, env, so, deadline);
  ASSERT_EQ(ev2.prepared.size(), 1u);
  ASSERT_EQ(ev2.prepared.front().size(), 3u);
  EXPECT_EQ(ev2.prepared.front().front().name(), f.w.ordered[3].name());
  RecordingEvaluator ev3;
  search_region(f.w, ev3, &db, env, so, deadline);
  EXPECT_TRUE(ev3.prepared.empty());
  for (const auto& c : ev3.calls) EXPECT_EQ(c.rfind("compile", 0), std::string::npos) << c;
}

TEST(SearchPrepare, NotCalledOnceTheDeadlineHasPassed) {
  Fixture f;
  TempDir tmp;
  TuningDb db(tmp / "t.db");
  RecordingEvaluator ev;
  SearchOptions so;
  so.repeats = 2;
  RegionSearch s = search_region(f.w, ev, &db, current_environment("cpu"), so, Clock::now());
  EXPECT_TRUE(ev.prepared.empty());
  // The fallback is still evaluated (built by compile), the rest left out and counted.
  ASSERT_EQ(s.outcomes.size(), 1u);
  EXPECT_EQ(s.outcomes[0].status, "ok");
  EXPECT_EQ(s.not_explored, f.w.ordered.size() - 1);
  EXPECT_EQ(std::count(ev.calls.begin(), ev.calls.end(), "begin"), 1);
}

}  // namespace
}  // namespace ac
