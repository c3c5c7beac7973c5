// The compiler front pipeline: partition -> summaries -> candidate spaces -> advice.
#include "agentcompile/compiler/front.h"

namespace ac {

double FrontResult::roofline_us(Phase phase) const {
  double t = 0;
  for (const auto& w : work)
    if (w.summary.phase == phase) {
      if (!w.summary.roof.known) return 0.0;
      t += w.summary.roof.time_us * double(w.summary.instances.size());
    }
  return t;
}

size_t FrontResult::space_size() const {
  size_t n = 0;
  for (const auto& w : work) n += w.space.size();
  return n;
}

size_t FrontResult::advised_size() const {
  size_t n = 0;
  for (const auto& w : work) n += w.ordered.size();
  return n;
}

std::vector<AdviceExchange> FrontResult::exchanges() const {
  std::vector<AdviceExchange> v;
  for (const auto& w : work) v.push_back(w.advice.exchange);
  return v;
}

FrontResult run_front(const Graph& g, const FrontOptions& o, Advisor& advisor, const HistoryLookup& history) {
  FrontResult out;
  out.partition = partition_graph(g, o.numerics);
  for (size_t ci = 0; ci < out.partition.classes.size(); ++ci)
    for (Phase ph : o.phases) {
      RegionWork w;
      w.class_index = ci;
      w.summary = summarize_region(g, out.partition, ci, ph, ph == Phase::Decode ? o.decode : o.prefill, o.target, o.numerics);
      w.space = build_candidate_space(g, out.partition, w.summary, o.backend);
      AdvisorRequest req{&w.summary, &w.space, {}};
      if (history) req.history = history(w.summary.signature, o.backend);
      w.prompt = build_prompt(req);
      w.advice = advisor.advise(req);
      w.ordered = ordered_candidates(w.space, w.advice.advice);
      if (w.advice.fell_back || !w.advice.note.empty())
        out.notes.push_back(std::string(region_kind_name(w.summary.kind)) + " " + std::string(phase_name(ph)) + ": " +
                            w.advice.note);
      out.work.push_back(std::move(w));
    }
  return out;
}

}  // namespace ac
