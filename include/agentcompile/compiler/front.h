#pragma once
// The compiler front as one call: partition, then for every region class and phase its summary,
// candidate space and advice, with the candidates in advised order. `advise` prints this; the
// search (issue 7) measures `ordered` and feeds measurements back through `history`.
#include <functional>
#include <string>
#include <vector>

#include "agentcompile/compiler/advisor.h"

namespace ac {

struct FrontOptions {
  std::string backend = "cpu";  // "cpu" | "cuda"
  TargetFacts target;
  Numerics numerics;
  std::vector<Phase> phases = {Phase::Decode, Phase::Prefill};
  ShapePoint decode = decode_point(1, 256);
  ShapePoint prefill = prefill_point(128);
};

struct RegionWork {
  size_t class_index = 0;
  RegionSummary summary;
  CandidateSpace space;
  AdviceResult advice;
  std::vector<Candidate> ordered;  // ordered_candidates(space, advice.advice)
  Json prompt;                     // the messages an LLM advisor is (or would be) sent
  // A fused span (compiler/spans.h) instead of a region class: the regions of every instance
  // (partition indices, graph order), the representative first. Empty for a region class.
  std::vector<std::vector<int>> span_instances;
  bool is_span() const { return !span_instances.empty(); }
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
