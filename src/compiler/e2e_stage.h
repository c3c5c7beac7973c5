#pragma once
// The end-to-end stage: a whole plan checked against the reference backend (its greedy tokens,
// teacher-forced, equal to the reference's, or its runner-up where the reference's top-2 margin
// is under epsilon) and profiled under the objective; and the side-by-side profiles the fallback
// guard and the regression check compare plans with.
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agentcompile/compiler/compile.h"
#include "agentcompile/compiler/timing_noise.h"
#include "agentcompile/compiler/tuning_db.h"
#include "agentcompile/core/json.h"
#include "agentcompile/ir/graph.h"
#include "agentcompile/model/model.h"
#include "agentcompile/plan/plan.h"
#include "agentcompile/tuning/evaluator.h"
#include "agentcompile/tuning/executor.h"
#include "compiler/db_records.h"

namespace ac {

inline double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// One plan's check and profile (report.json's "e2e").
struct E2e {
  bool ok = false;
  std::string reason;
  int checked = 0;
  std::vector<int> ties;  // steps where the plan chose the reference's runner-up within epsilon
  double prefill_ms = 0, decode_ms = 0;          // plan, latency profile
  double ref_prefill_ms = 0, ref_decode_ms = 0;  // reference backend, same run
  double per_token_us = 0, ref_per_token_us = 0; // throughput profile
  double cost_us = 0, ref_cost_us = 0;           // under the objective
  std::string ref_source = "measured now";       // or "tuning DB, measured <UTC>"
  Json to_json() const;
};

class E2eStage {
 public:
  E2eStage(const Model& m, const Graph& g, const CompileOptions& o);

  // The reference backend's side of the stage does not depend on the plan: its greedy tokens
  // (teacher-forced, with their top-2 margins) and its profile are measured once, before the
  // search, so that their time (seconds per step on the CPU for a 1B model) is known when the
  // search's deadline is set and is not paid again for every plan checked or profiled.
  // With a tuning DB the reference side is read from it when an earlier compile here measured it
  // with the same settings, and stored after measuring: a warm compile of a 1B model on the GPU
  // machine otherwise spends most of its time here. The tokens are deterministic and always
  // reused; the profile only when the host's timing conditions then and now match (`noise_now`,
  // timing_noise.h): a profile taken under load and compared with a plan's taken on a quiet
  // machine gives a false speedup. `probe` measures the conditions again after a profile taken
  // now: the record keeps the worse of the two.
  void use_db(TuningDb* db, const Environment& env, const std::string& model_hash, const TimingNoise& noise_now,
              std::function<TimingNoise()> probe);
  void measure_reference();

  // Seconds one profile of the reference took (recorded with it): what a profile of a plan costs.
  double profile_seconds() const { return ref_.profile_s; }
  // report.json's "reference_backend": the reference's own profile, where it came from and the
  // timing conditions it was taken under.
  Json reference_report() const;

  // Semantic check (teacher-forced by the reference's greedy tokens) and, with `profile`, profile.
  E2e run(const Plan& plan, bool profile);

  // bf16 weights and KV cache on the GPU round differently from the f32 reference: a wider tie
  // band, wider still for FP8 weights (rounded to bf16 for the prefill's GEMMs).
  double epsilon() const;

  // Objective cost of a plan's executor (used by the regression check too); the reference's
  // figures are the ones measure_reference took.
  void profile(Executor& ex, E2e& r);

  const ExecutorLimits& limits() const { return lim_; }
  // Frees the timings' shared weights, before executors with weights of their own are built (so
  // no model is on the device three times) and once the timings are over.
  void release_timing_share() { timing_share_.state.reset(); }
  int64_t prompt_tokens() const { return prompt_len_; }

  // The plan's decode time per token: the median over the steps of one greedy generation of
  // `tokens` after the stage's prompt, on a fresh executor (the decode-step tuning's timer). The
  // executors of these timings share their device weights (ExecutorShare: uploading them was most
  // of a trial's time); the end-to-end checks (run) upload their own.
  double decode_ms(const Plan& plan, int tokens);

 private:
  void latency(Executor& e, double& pre, double& dec);
  double batched(Executor& e);
  // The executor's profile under the objective into p (an E2e or the ReferenceProfile, same field
  // names): prefill_ms and decode_ms (latency) or per_token_us (throughput), and cost_us.
  template <class P>
  void objective_profile(Executor& e, P& p) {
    if (o_.objective == "latency") {
      latency(e, p.prefill_ms, p.decode_ms);
      p.cost_us = 1000 * (p.prefill_ms + o_.workload_decode_tokens * p.decode_ms);
    } else {
      p.per_token_us = batched(e);
      p.cost_us = p.per_token_us;
    }
  }
  StepBatch prompt_step() const;
  std::string route_name(const PlanRoute& r) const;

  const Model& m_;
  const Graph& g_;
  const CompileOptions& o_;
  int64_t prompt_len_ = 0;
  std::vector<int32_t> prompt_;
  ExecutorLimits lim_;
  std::unique_ptr<Executor> ref_exec_;
  bool ref_measured_ = false;
  std::vector<Top2> ref_top2_;  // per checked step
  ReferenceProfile ref_;
  std::string ref_source_ = "measured now";
  TuningDb* db_ = nullptr;
  Environment env_;
  std::string db_key_;
  TimingNoise noise_now_;
  std::function<TimingNoise()> probe_;
  ExecutorShare timing_share_;  // decode_ms's executors' device weights
};

// Plans a and b profiled alternately three times (side by side, so both see the same moment's
// noise): each one's profile of median objective cost, and a's smallest cost ratio to b within a
// round. A verdict that a is slower needs every round to say so: on a loaded machine one round
// can be 20% off, and a single slow round must not fail a compile.
struct SideBySide {
  E2e a, b;
  std::vector<double> a_us, b_us;  // each round's objective cost
  bool a_slower_beyond(double margin) const;
};
SideBySide side_by_side(E2eStage& e2e, const Graph& g, const Plan& a, const Plan& b, const CompileOptions& o);

// Copies a profile's own figures (not its reference's).
void take_profile(E2e& to, const E2e& from);

// On the CPU backend a plan whose every route is the fallback runs the reference backend itself:
// its own profile, taken now, is the reference's, and its speedup is exactly 1 (a reference
// profile of another moment only adds that moment's noise: one taken under load made such a
// plan "1.69x").
void reference_is_the_plan(const Plan& plan, E2e& check);

}  // namespace ac
