// The front stage: the target (on the GPU with its ceilings measured now), the shape points,
// each region's candidate space and the advice on it (the advisor's wait capped by its share of
// the budget), and the fused spans to search.
#include <algorithm>
#include <cstdio>

#include "agentcompile/tuning/target.h"
#include "compiler/compile_run.h"

namespace ac {

void run_front_stage(CompileRun& r) {
  const CompileOptions& o = r.o;
  FrontOptions& fo = r.fo;
  fo.backend = o.backend;
  fo.target = resolve_target("", o.backend, false, &r.target_note);
  // On the GPU the report's percentages are against the ceilings measured now (before the front,
  // whose summaries copy the target), not the table's figures of another day.
  std::string unmeasured;
  if (o.backend == "cuda" && fo.target.origin == "detected" && !measure_gpu_ceilings(&fo.target, &unmeasured))
    r.target_note += std::string(r.target_note.empty() ? "" : "; ") + "the GPU's ceilings were not measured (" +
                     unmeasured + "): percentages are against the target table's figures";
  const int64_t maxpos = r.m.config.max_position_embeddings;
  fo.decode = decode_point(o.objective == "throughput" ? o.max_batch : 1, std::min<int64_t>(o.decode_context, maxpos));
  fo.prefill = prefill_point(std::min<int64_t>(o.prefill_tokens, maxpos));
  // Waiting for the advisor counts against the budget, and only a share of it: an endpoint that
  // is slow, silent or gone leaves the search its time (those regions get the heuristic advice).
  constexpr double kAdvisorBudgetShare = 0.25;
  AdvisorConfig advisor_cfg = o.advisor;
  r.advisor_share_s = kAdvisorBudgetShare * o.budget_s;
  const auto advisor_deadline = r.at_share_of_budget(kAdvisorBudgetShare);
  advisor_cfg.deadline = advisor_cfg.deadline ? std::min(*advisor_cfg.deadline, advisor_deadline) : advisor_deadline;
  char share_text[96];
  std::snprintf(share_text, sizeof share_text, "the advisor's share of the budget (%.3g of %.3g s)", r.advisor_share_s,
                o.budget_s);
  advisor_cfg.deadline_what = share_text;
  r.advisor = make_advisor(advisor_cfg);
  r.front = run_front(r.g, fo, *r.advisor, [&](const std::string& sig, const std::string& backend) {
    return measured_history(r.db, r.env, sig, backend);
  });
  // What the backend said about its spaces (why a region has no family), once each.
  for (const RegionWork& w : r.front.work)
    for (const std::string& n : w.space.notes)
      if (std::find(r.front.notes.begin(), r.front.notes.end(), n) == r.front.notes.end()) r.front.notes.push_back(n);
  r.so = o.search;
  r.so.model_name = r.model_name;
  // Fused spans (CPU: each layer's mlp_in + mlp_out); their searches follow the regions'.
  r.spans = layer_mlp_spans(r.g, r.front, o.backend);
  r.prog.regions_total = r.front.work.size() + r.spans.size();
}

}  // namespace ac
