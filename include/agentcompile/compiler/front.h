#pragma once
// The compiler front as one call: partition, then for every region class and phase its summary,
// candidate space and advice, with the candidates in advised order. `advise` prints this; the
// search (issue 7) measures `ordered` and feeds measurements back through `history`.
#include <functional>
#include <string>
#include <vector>

#include "agentcompile/compiler/advisor.h"
#include "agentcompile/tuning/evaluator.h"

namespace ac {

struct FrontOptions {
  std::string backend = "cpu";  // "cpu" | "cuda"
  TargetFacts target;
  Numerics numerics;
  std::vector<Phase> phases = {Phase::Decode, Phase::Prefill};
  ShapePoint decode = decode_point(1, 256);
  ShapePoint prefill = prefill_point(128);
};

// A region task with the advice on it and its candidates in advised order.
struct RegionWork : RegionTask {
  AdviceResult advice;
  std::vector<Candidate> ordered;  // ordered_candidates(space, advice.advice)
  Json prompt;                     // the messages an LLM advisor is (or would be) sent
};

struct FrontResult {
  Partition partition;
  std::vector<RegionWork> work;  // class-major, phases in FrontOptions order
  std::vector<std::string> notes;
  // Sum over every region instance of the roofline time in a phase (us); 0 when unknown.
  double roofline_us(Phase phase) const;
  size_t space_size() const;    // candidates over all work items
  size_t advised_size() const;  // after narrowing
  std::vector<AdviceExchange> exchanges() const;
};

// Measured candidates of a signature on a backend (empty when none).
using HistoryLookup = std::function<std::vector<MeasuredCandidate>(const std::string& signature, const std::string& backend)>;

FrontResult run_front(const Graph& g, const FrontOptions& options, Advisor& advisor, const HistoryLookup& history = {});

}  // namespace ac
