#pragma once
// The search: staged validation and measured selection of one region class's candidates.
//
// Every candidate, in the advised order, goes through the stages
//   constraints -> compile -> correctness -> timing
// and the first failing stage ends it, recorded with its reason. An Evaluator does the
// backend-specific stages (the CPU evaluator runs the region's ops; a CUDA evaluator plugs in
// the same way). Results come from, and go to, the tuning database: a candidate measured before
// in this environment (same signature and shape bucket) is not measured again.
//
// Selection: the fastest correct candidate, but ties within the measured noise (the best two
// are timed again) go to the simpler candidate, and a specialised candidate is kept only when it
// beats the fallback by the margin (max(SearchOptions::margin, noise)); otherwise the fallback
// wins with reason "unprofitable".
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agentcompile/compiler/front.h"
#include "agentcompile/compiler/tuning_db.h"

namespace ac {

struct CorrectnessResult {
  bool ok = false;
  std::string reason;   // why not ("rel L2 3.1e-3 > 1e-5 (seed 2, tokens 3)", "NaN", "element not written")
  double rel_err = 0;   // worst relative L2 error over the checks
  int checks = 0;       // seeds x shapes run
};

struct TimingResult {
  bool ok = false;
  std::string reason;
  std::vector<double> samples_us;  // every repeat after warm-up
  double median_us = 0;
};

using Clock = std::chrono::steady_clock;

class Evaluator {
 public:
  virtual ~Evaluator() = default;
  virtual std::string backend() const = 0;
  // Prepares a region class (weights, inputs, reference outputs) before its candidates.
  virtual void begin(const RegionWork& w) = 0;
  // Called once per search, after begin, with the candidates about to be measured (those that
  // pass their constraints and are not in the DB, in the advised order). A backend whose compile
  // stage is slow builds them all here at once (the CUDA evaluators: NVRTC in parallel threads),
  // so that compile() finds them ready; it stops starting work at `deadline`, and what it did not
  // reach is built by compile() as usual. Default: nothing (compile() does it all).
  virtual void prepare(const std::vector<Candidate>& candidates, Clock::time_point deadline) {
    (void)candidates;
    (void)deadline;
  }
  virtual std::string compile(const Candidate& c) = 0;  // "" when built
  virtual CorrectnessResult check(const Candidate& c) = 0;
  virtual TimingResult time(const Candidate& c, int warmup, int repeats) = 0;
  // What the timing stage does (for the report).
  virtual std::string timing_method() const = 0;
};

struct CandidateOutcome {
  Candidate candidate;
  int order = 0;       // position in the advised order
  std::string stage;   // last stage run: constraints, compile, correctness, timing
  std::string status;  // ok, failed, skipped (budget)
  std::string reason;
  double median_us = 0;
  std::vector<double> samples_us;
  double rel_err = 0;
  bool from_db = false;
  std::string measured_by;
  double retimed_us = 0;    // the noise re-timing, when this was one of a search's best two  // model whose compile measured it (from the DB)
  Json to_json() const;
};

struct SearchOptions {
  int warmup = 2;
  int repeats = 7;
  double margin = 0.03;  // a specialised candidate must be this much faster than the fallback
  std::string model_name;
};

struct RegionSearch {
  const RegionWork* work = nullptr;
  std::string bucket;
  std::vector<CandidateOutcome> outcomes;  // evaluation order
  size_t not_explored = 0;                 // candidates the budget left out
  Candidate winner;
  double winner_us = 0, fallback_us = 0;
  double noise = 0;                        // relative, from re-timing the best two
  double separate_us = 0;                  // a fused span: its regions' winners together, per instance (decide_span)
  std::string decision;                    // "specialised", "fallback: unprofitable ...", ...
  std::vector<std::string> notes;          // ties, re-timings
  size_t measured = 0, reused = 0, failed = 0;
  // Search efficiency: candidates evaluated (advised order) until one within 2% of the best;
  // the same expected over random orders of the evaluated candidates.
  int to_within_2pct_advised = 0;
  double to_within_2pct_random = 0;
  double speedup() const { return winner_us > 0 ? fallback_us / winner_us : 1.0; }
  // Correct candidates in increasing time (the winner first), for the route graph.
  std::vector<const CandidateOutcome*> ranked() const;
  Json to_json() const;
};

// Searches one region class. Stops starting candidates at `deadline` (the fallback is always
// evaluated); Evaluator::prepare gets at most half of the time left (the rest is for measuring
// what it built); `on_candidate` is called after each candidate (progress).
RegionSearch search_region(const RegionWork& w, Evaluator& ev, TuningDb* db, const Environment& env,
                           const SearchOptions& o, Clock::time_point deadline,
                           const std::function<void(const CandidateOutcome&)>& on_candidate = {});

// The CPU backend's evaluator: runs the region's ops (representative instance, the model's own
// weights) through cpu::run_op with the candidate's binding. Correctness: 2 seeds x 2 shapes
// (decode: batch 1 and a ragged batch of 3 with different contexts; prefill: 13 and 29 tokens),
// fresh random inputs and KV cache per check, outputs and written cache rows poisoned with NaN,
// compared with the reference ops (relative L2 <= 1e-5 for f32, 1e-2 for bf16 activations).
// Timing: wall clock of one region run at the summary's shape point, median of the repeats.
std::unique_ptr<Evaluator> make_cpu_evaluator(const Graph& g, const Partition& part);

// Candidates "simpler" first: the fallback, then fewer threads, then smaller parameter values.
int candidate_complexity(const Candidate& c, const CandidateSpace& space);

// Measured candidates of the DB as the advisor's history (speedups against the fallback's record).
std::vector<MeasuredCandidate> measured_history(const TuningDb& db, const Environment& env, const std::string& signature,
                                                const std::string& backend);

}  // namespace ac
