#pragma once
// What a backend gives the search for one region: an Evaluator that builds a candidate, checks it
// against the reference and times it (the stages after "constraints"; compiler/search.h runs
// them in order and records the outcome). A region reaches it as a RegionTask: the region class
// (or fused span) with its summary and candidate space.
#include <chrono>
#include <string>
#include <vector>

#include "agentcompile/tuning/space.h"

namespace ac {

struct RegionTask {
  size_t class_index = 0;
  RegionSummary summary;
  CandidateSpace space;
  // A fused span (compiler/spans.h) instead of a region class: the regions of every instance
  // (partition indices, graph order), the representative first. Empty for a region class.
  std::vector<std::vector<int>> span_instances;
  bool is_span() const { return !span_instances.empty(); }
};

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
  virtual void begin(const RegionTask& w) = 0;
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
  // The FLOPs of one timed call where the timing runs another shape than the region summary's
  // point (the CUDA prompt regions, timed on 2048 tokens at least), so that the report gives the
  // region's rate at what was timed; 0: the summary's shape (the report's bytes and time agree).
  virtual double timed_flops() const { return 0; }
};

}  // namespace ac
