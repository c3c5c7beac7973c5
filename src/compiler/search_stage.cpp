// The search stage: the reference backend's half of the end-to-end stage first (it does not
// depend on the plan), then every region's and fused span's search until what the stages after
// it need is left: the plan's own check and profile (on the CPU backend as slow as the
// reference's), the whole-step tuning, the kernel binaries. The deadline is checked between
// candidates only, so the last candidate of each region may run past it.
#include <algorithm>
#include <functional>

#include "agentcompile/core/error.h"
#include "compiler/compile_run.h"

namespace ac {

namespace {

// The reference's tokens and profile, from the tuning DB where an earlier compile here measured
// them under the same timing conditions.
void measure_reference(CompileRun& r) {
  r.e2e.emplace(r.m, r.g, r.o);
  // The host's timing conditions now: a stored reference profile is reused only under the same.
  const std::function<TimingNoise()> probe =
      r.o.timing_noise ? r.o.timing_noise : std::function<TimingNoise()>(measure_timing_noise);
  r.noise_now = probe();
  r.e2e->use_db(&r.db, r.env, r.hash, r.noise_now, probe);
  r.progress("reference backend (end-to-end check and profile)");
  const auto ref_start = Clock::now();
  r.e2e->measure_reference();
  r.reference_s = seconds_since(ref_start);
}

}  // namespace

void run_search_stage(CompileRun& r) {
  const CompileOptions& o = r.o;
  measure_reference(r);
  // Where the backend tunes whole steps (latency objective) the tuning runs after the search,
  // which then ends at 60% of the budget instead of 80%; the tuning stops starting trials at 95%.
  r.step_tune = r.backend.tunes_whole_steps() && o.step_tuning && o.objective == "latency";
  // On the CPU the plan's check and profile and the fallback guard's six profiles alternating
  // with the reference's take about eight of the reference's profiles.
  const double after_search_s = o.backend == "cpu"
                                    ? std::max({0.2 * o.budget_s, r.reference_s, 8 * r.e2e->profile_seconds()})
                                    : (r.step_tune ? 0.4 : 0.2) * o.budget_s;
  r.search_start = Clock::now();
  r.search_deadline = std::max(r.search_start, r.at_share_of_budget(1 - after_search_s / o.budget_s));

  // Every region the backend searches gets its evaluator first, so that the budget can be divided
  // by the candidates each has: each region (and fused span) gets a share of the search time left
  // in proportion to its candidates (time a region does not use passes to the next); an equal
  // share cut the large spaces short while the small ones left theirs unused. Regions go in the
  // backend's order; spans come last: their order starts from the tiles the region searches chose.
  const FrontResult& front = r.front;
  std::vector<std::pair<const RegionWork*, std::unique_ptr<Evaluator>>> to_search;
  for (const RegionWork& w : front.work)
    if (auto ev = r.backend.evaluator(r.g, front.partition, w)) to_search.emplace_back(&w, std::move(ev));
  std::stable_sort(to_search.begin(), to_search.end(), [&](const auto& a, const auto& b) {
    return r.backend.search_rank(*a.first) < r.backend.search_rank(*b.first);
  });
  // A span is searched when each of its regions is and the backend has its evaluator.
  std::vector<SpanWork>& spans = r.spans;
  std::vector<std::unique_ptr<Evaluator>> span_evs;
  std::erase_if(spans, [&](const SpanWork& sp) {
    for (size_t k : sp.parts)
      if (std::none_of(to_search.begin(), to_search.end(), [&](const auto& t) { return t.first == &front.work[k]; }))
        return true;
    return false;
  });
  for (const SpanWork& sp : spans) span_evs.push_back(r.backend.evaluator(r.g, front.partition, sp.work));
  for (size_t i = spans.size(); i-- > 0;)
    if (!span_evs[i]) {
      spans.erase(spans.begin() + long(i));
      span_evs.erase(span_evs.begin() + long(i));
    }
  std::vector<std::string> timing_methods;
  size_t left = 0;
  for (const auto& [w, ev] : to_search) left += w->ordered.size();
  for (const auto& sp : spans) left += sp.work.space.size();
  r.prog.regions_total = to_search.size() + spans.size();
  auto on_candidate = [&](const CandidateOutcome& c) {
    (c.from_db ? r.prog.candidates_reused : r.prog.candidates_measured)++;
    r.progress(r.prog.stage);
  };
  auto search_one = [&](const RegionWork& w, Evaluator& ev, const std::string& label) {
    const auto now = Clock::now();
    const auto share = now < r.search_deadline
                           ? (r.search_deadline - now) * long(w.ordered.size()) / long(std::max<size_t>(left, 1))
                           : Clock::duration(0);
    left -= std::min(left, w.ordered.size());
    r.progress("search " + label + " " + std::string(phase_name(w.summary.phase)));
    if (const std::string m = ev.timing_method();
        std::find(timing_methods.begin(), timing_methods.end(), m) == timing_methods.end())
      timing_methods.push_back(m);
    r.searches.push_back(search_region(w, ev, &r.db, r.env, r.so, now + share, on_candidate));
    r.searches.back().timed_flops = ev.timed_flops();
    ++r.prog.regions_done;
  };
  for (auto& [w, ev] : to_search) {
    search_one(*w, *ev, std::string(region_kind_name(w->summary.kind)));
    ev.reset();  // its buffers (up to a GB of LM head weights on a GPU) are no longer needed
  }
  std::vector<RegionSearch>& searches = r.searches;
  for (size_t i = 0; i < spans.size(); ++i) {
    SpanWork& sp = spans[i];
    // The span's parts become indices of their searches.
    for (size_t& k : sp.parts) {
      const auto it = std::find_if(searches.begin(), searches.end(),
                                   [&](const RegionSearch& s) { return s.work == &front.work[k]; });
      k = size_t(it - searches.begin());
    }
    order_span_candidates(sp, searches);
    search_one(sp.work, *span_evs[i], sp.name + " (fused span)");
    span_evs[i].reset();
    double separate_us = 0;
    for (size_t k : sp.parts) separate_us += searches[k].winner_us;
    decide_span(searches.back(), separate_us, r.so.margin);
  }
  for (const std::string& m : timing_methods) r.timing_method += (r.timing_method.empty() ? "" : "; ") + m;
  // A model the backend runs only on its generic route (CUDA: a mixture of experts, FP8 weights
  // before the fast path reads them) still gets a plan: no region searched, the generic route
  // checked end to end and profiled like any plan; the whole-step tuning has nothing to tune.
  if (searches.empty()) {
    if (r.backend.generic_route_reason(r.g).empty())
      throw_input("--backend " + o.backend, "nothing to search for this model on this backend" +
                                                (front.notes.empty() ? std::string() : ": " + front.notes.front()));
    r.step_tune = false;
  }
  r.search_s = seconds_since(r.search_start);
  r.search_end_s = seconds_since(r.start);
}

}  // namespace ac
