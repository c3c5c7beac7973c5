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
#include "agentcompile/tuning/evaluator.h"

namespace ac {

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
  double timed_flops = 0;                  // the evaluator's Evaluator::timed_flops
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


// Candidates "simpler" first: the fallback, then fewer threads, then smaller parameter values.
int candidate_complexity(const Candidate& c, const CandidateSpace& space);

// Measured candidates of the DB as the advisor's history (speedups against the fallback's record).
std::vector<MeasuredCandidate> measured_history(const TuningDb& db, const Environment& env, const std::string& signature,
                                                const std::string& backend);

}  // namespace ac
