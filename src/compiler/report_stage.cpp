// The report stage: report.json (every stage's figures and decisions) and report.md from it.
#include <algorithm>

#include "compiler/compile_run.h"
#include "compiler/report_markdown.h"

namespace ac {

namespace {

// Bytes the region moves at its summary's shape point (weights, activations, KV rows) over the
// chosen route's measured time, against the target's bandwidth (measured when the summary says so).
// Where the GPU's reads alone were measured too, also against them (pct_of_read; null otherwise).
// Where the evaluator timed another shape (timed_flops > 0: a CUDA prompt region on 2048 tokens),
// the rate of those FLOPs against the target's GEMM rate instead, the bandwidth figures null.
Json achieved_bandwidth(const RegionSummary& s, double us, double timed_flops) {
  const double peak = s.target.bandwidth_gbs, read = s.target.read_gbs;
  if (timed_flops > 0) {
    const double tflops = us > 0 ? timed_flops / (us * 1e6) : 0.0, gemm = s.target.matmul_tflops;
    return {{"timed_flops", timed_flops},
            {"TFLOPs", tflops},
            {"pct_of_matmul", gemm > 0 ? Json(100.0 * tflops / gemm) : Json(nullptr)},
            {"matmul_TFLOPs", gemm},
            {"matmul_source", s.target.matmul_source},
            {"bytes", nullptr},
            {"GBps", nullptr},
            {"pct_of_bandwidth", nullptr},
            {"bandwidth_GBps", peak},
            {"bandwidth_source", s.target.bandwidth_source},
            {"pct_of_read", nullptr},
            {"read_GBps", read > 0 ? Json(read) : Json(nullptr)}};
  }
  const double gbs = us > 0 ? s.cost.bytes() / (us * 1e3) : 0.0;
  return {{"bytes", s.cost.bytes()},
          {"GBps", gbs},
          {"pct_of_bandwidth", peak > 0 ? 100.0 * gbs / peak : 0.0},
          {"bandwidth_GBps", peak},
          {"bandwidth_source", s.target.bandwidth_source},
          {"pct_of_read", read > 0 ? Json(100.0 * gbs / read) : Json(nullptr)},
          {"read_GBps", read > 0 ? Json(read) : Json(nullptr)}};
}

// Where the backend's fast routes cannot run the model, every region runs the generic route: the
// regions with the bytes each moves, the floor those bytes set at the target's bandwidth (what a
// fast route approaches), and the measured decode step against the decode regions' floor.
Json generic_route_report(const CompileRun& r) {
  const std::string why = r.backend.generic_route_reason(r.g);
  if (why.empty()) return nullptr;
  Json regions = Json::array();
  double decode_floor_us = 0;
  for (const RegionWork& w : r.front.work) {
    if (w.is_span()) continue;
    const RegionSummary& s = w.summary;
    const double bw = s.target.bandwidth_gbs;
    const double floor_us = bw > 0 ? s.cost.bytes() / (bw * 1e3) : 0.0;
    const double n = double(s.instances.size());
    if (s.phase == Phase::Decode) decode_floor_us += floor_us * n;
    regions.push_back({{"region", std::string(region_kind_name(s.kind))},
                       {"phase", std::string(phase_name(s.phase))},
                       {"instances", s.instances.size()},
                       {"bytes", s.cost.bytes()},
                       {"floor_us", floor_us}});
  }
  const double decode_ms = r.check.decode_ms;
  return {{"why", why},
          {"regions", regions},
          {"decode_ms", decode_ms},
          {"decode_floor_ms", decode_floor_us / 1000},
          {"pct_of_floor", decode_ms > 0 ? 100.0 * decode_floor_us / 1000 / decode_ms : 0.0}};
}

}  // namespace

void run_report_stage(CompileRun& r) {
  const CompileOptions& o = r.o;
  Json regions = Json::array(), fallbacks = Json::array();
  size_t measured = 0, reused = 0, other_models = 0, not_explored = 0;
  double adv_sum = 0, rnd_sum = 0;
  size_t eff_n = 0;
  Json eff_rows = Json::array();
  for (size_t si = 0; si < r.searches.size(); ++si) {
    const RegionSearch& s = r.searches[si];
    const RegionWork& w = *s.work;
    const RouteEdge* e = RouteGraph::choice(r.path, si);
    measured += s.measured;
    reused += s.reused;
    not_explored += s.not_explored;
    for (const auto& c : s.outcomes) other_models += c.from_db && c.measured_by != r.model_name;
    if (w.is_span()) continue;  // spans[] below
    size_t in_spans = 0;  // instances the path runs inside a fused span
    for (const RouteEdge* pe : r.path.edges)
      if (pe->span() && pe->phase == w.summary.phase)
        for (int m : r.front.partition.classes[w.class_index].members) in_spans += pe->from <= m && m < pe->to;
    const std::string chosen = e ? e->candidate.name() : s.winner.name();
    const double chosen_us = e ? e->time_us : s.winner_us;
    const auto ranked = s.ranked();
    const double best_us = ranked.empty() ? chosen_us : ranked.front()->median_us;
    if (e && e->fallback && ranked.size() > 1)
      fallbacks.push_back({{"region", std::string(region_kind_name(w.summary.kind))},
                           {"phase", std::string(phase_name(w.summary.phase))},
                           {"reason", s.decision},
                           {"best_measured", ranked.front()->candidate.name()},
                           {"time_lost_us", chosen_us - best_us}});
    Json rej = Json::array();
    for (const auto& x : w.advice.advice.rejections) rej.push_back(x.to_json());
    if (s.measured + s.reused > 2 && s.to_within_2pct_advised > 0) {
      adv_sum += s.to_within_2pct_advised;
      rnd_sum += s.to_within_2pct_random;
      ++eff_n;
      eff_rows.push_back({{"region", std::string(region_kind_name(w.summary.kind))},
                          {"phase", std::string(phase_name(w.summary.phase))},
                          {"evaluated", s.outcomes.size()},
                          {"advised", s.to_within_2pct_advised},
                          {"random_expected", s.to_within_2pct_random}});
    }
    regions.push_back({{"region", std::string(region_kind_name(w.summary.kind))},
                       {"phase", std::string(phase_name(w.summary.phase))},
                       {"signature", w.summary.signature},
                       {"instances", w.summary.instances.size()},
                       {"summary", w.summary.to_json()},
                       {"space_size", w.space.size()},
                       {"advised_size", w.ordered.size()},
                       {"advice", w.advice.advice.to_json()},
                       {"advice_fell_back", w.advice.fell_back},
                       {"advice_note", w.advice.note},
                       {"rejected_hints", rej},
                       {"search", s.to_json()},
                       {"chosen", chosen},
                       {"chosen_us", chosen_us},
                       {"speedup_vs_fallback", chosen_us > 0 ? s.fallback_us / chosen_us : 1.0},
                       {"instances_in_fused_spans", in_spans},
                       {"achieved", achieved_bandwidth(w.summary, chosen_us, s.timed_flops)}});
    // The plan runs the step tuning's choice where it replaced the search's (its time alone: the search's record).
    if (auto it = r.step_tuned.find(si); it != r.step_tuned.end()) regions.back()["step_tuned"] = it->second;
  }
  Json repairs_j = Json::array();
  for (const auto& x : r.repairs) repairs_j.push_back(x.to_json());
  r.result.elapsed_s = seconds_since(r.start);
  // Which advice the search followed, and why not the advisor's where it fell back.
  Json advisor_summary = r.advisor->tally().to_json(r.advisor->name());
  advisor_summary["share_s"] = r.advisor_share_s;
  r.result.advisor_note = r.advisor->tally().summary(r.advisor->name());
  Json rep = {{"format", "agentcompile-report"},
              {"version", 1},
              {"model", {{"name", r.model_name}, {"dir", r.m.dir.string()}, {"hash", r.hash},
                         {"architecture", std::string(arch_name(r.m.config.arch))}}},
              {"backend", o.backend},
              {"environment", r.env.to_json()},
              {"target", r.fo.target.to_json()},
              {"advisor", r.advisor->name()},
              {"advisor_summary", advisor_summary},
              {"objective", o.objective},
              {"max_batch", o.max_batch},
              {"points", {{"decode", r.fo.decode.to_json()}, {"prefill", r.fo.prefill.to_json()}}},
              {"timing_method", r.timing_method},
              {"fallback_guard", r.fallback_guard},
              {"step_tuning", r.step_tuning},
              {"seed_plan", r.seed_plan},
              {"selection", {{"margin", r.so.margin}, {"repeats", r.so.repeats}, {"warmup", r.so.warmup},
                             {"rule", "fastest correct; ties within the measured noise go to the simpler candidate; a "
                                      "specialised candidate must beat the fallback by max(margin, noise)"}}},
              {"budget", {{"seconds", o.budget_s},
                          {"search_share", std::chrono::duration<double>(r.search_deadline - r.start).count() / o.budget_s},
                          {"reference_s", r.reference_s}, {"search_s", r.search_s},
                          {"after_search_s", r.result.elapsed_s - r.search_end_s},
                          {"overrun_s", std::max(0.0, r.result.elapsed_s - o.budget_s)},
                          {"not_explored", not_explored}, {"exhausted", Clock::now() > r.deadline}}},
              {"db", r.db_json},
              {"timing_noise", r.noise_now.to_json()},
              {"reference_backend", r.e2e->reference_report()},
              {"totals", {{"regions", r.searches.size() - r.spans.size()}, {"spans", r.spans.size()}, {"measured", measured},
                          {"reused", reused}, {"reused_from_other_models", other_models}}},
              {"regions", regions},
              {"spans", span_report(r.spans, r.searches, *r.rg, r.path)},
              {"route_graph", r.rg->to_json(r.path)},
              {"fallbacks", fallbacks},
              {"repairs", repairs_j},
              {"e2e_rule", {{"tokens", o.e2e_tokens}, {"epsilon", r.e2e->epsilon()},
                            {"rule", "greedy tokens equal to the reference backend's (teacher-forced), or where the "
                                     "reference's top-2 logit margin is below epsilon, its runner-up"}}},
              {"e2e", r.check.to_json()},
              {"regression", r.regression},
              {"efficiency", {{"regions", eff_rows},
                              {"mean_to_within_2pct_advised", eff_n ? adv_sum / double(eff_n) : 0.0},
                              {"mean_to_within_2pct_random", eff_n ? rnd_sum / double(eff_n) : 0.0}}},
              {"generic_route", generic_route_report(r)},
              {"notes", r.front.notes},
              {"elapsed_s", r.result.elapsed_s}};
  if (!r.target_note.empty()) rep["notes"].push_back(r.target_note);
  Json settings_list = Json::array();
  for (const StepSetting& st : r.settings) {
    rep[st.report_key] = r.settings_report[st.report_key];
    settings_list.push_back({{"report_key", st.report_key}, {"label", st.label}, {"ms_key", st.ms_key}});
  }
  rep["step_settings"] = settings_list;
  r.result.report_md = report_markdown(rep);
  r.result.report = std::move(rep);
  r.result.plan = std::move(r.built.plan);
}

}  // namespace ac
