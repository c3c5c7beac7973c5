// compile_model: search, route graph, end-to-end stage with repair, regression check, plan.
#include "agentcompile/compiler/compile.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <tuple>

#include "agentcompile/compiler/route_graph.h"
#include "agentcompile/compiler/spans.h"
#include "agentcompile/compiler/timing_noise.h"
#include "agentcompile/tuning/backend.h"
#include "agentcompile/tuning/greedy.h"
#include "agentcompile/core/error.h"
#include "agentcompile/core/rng.h"
#include "agentcompile/core/stats.h"
#include "agentcompile/ir/decoder_layers.h"
#include "agentcompile/model/model.h"
#include "compiler/db_records.h"
#include "compiler/step_tuning.h"

namespace ac {

namespace {

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// ---- plan assembly ----

// Graph op names a candidate of `s` runs in the given regions: its family's steps (a fused span:
// every step), without the KV write half of attention (it belongs to attn_in, not a family step).
std::vector<std::string> ops_of(const Graph& g, const Partition& part, const RegionSearch& s, const Candidate& c,
                                const std::vector<int>& regions) {
  std::vector<std::string> ops;
  const FamilySpace* f = s.work->space.find(c.family);
  // The CPU executor binds ops; the CUDA fast path takes its parameters from cuda_fast.
  if (!f || f->route == FamilyRoute::Fallback || s.work->space.backend != "cpu") return ops;
  for (int m : regions)
    for (const RegionStep& st : part.regions[size_t(m)].steps) {
      if (st.role == StepRole::KvWrite) continue;
      const std::string& name = g.ops[size_t(st.op)].name;
      if (f->route == FamilyRoute::Fused) {
        ops.push_back(name);
        continue;
      }
      for (const auto& a : f->applies_to)
        if (name == a || (name.size() > a.size() && name.compare(name.size() - a.size(), a.size(), a) == 0 &&
                          name[name.size() - a.size() - 1] == '.'))
          ops.push_back(name);
    }
  return ops;
}

// "mlp_in+mlp_out" for a span search, the region kind otherwise.
std::string search_label(const Partition& part, const RegionSearch& s) {
  if (!s.work->is_span()) return std::string(region_kind_name(s.work->summary.kind));
  std::string name;
  for (int r : s.work->span_instances.front()) name += (name.empty() ? "" : "+") + std::string(region_kind_name(part.regions[size_t(r)].kind));
  return name;
}

// A plan and, per route, the search it came from (the repair loop checks routes one search at a time).
struct BuiltPlan {
  Plan plan;
  std::vector<size_t> search_of_route;
};

// One route per search the path uses: a region class's route lists the instances the path runs
// on its own edges (those inside a taken fused span are the span's), a span's route the
// instances the path fuses (both regions of each); a span the path does not take, or a region
// class every instance of which it fuses, has no route.
BuiltPlan plan_of(const Model& m, const Graph& g, const Partition& part, const std::vector<RegionSearch>& searches,
                  const RoutePath& path, const Environment& env, const CompileOptions& o, const std::string& hash) {
  BuiltPlan b;
  Plan& p = b.plan;
  p.model_hash = hash;
  p.model_name = m.dir.filename().string();
  if (p.model_name.empty()) p.model_name = m.dir.parent_path().filename().string();
  p.architecture = std::string(arch_name(m.config.arch));
  p.environment = env;
  p.objective = o.objective;
  p.max_batch = o.max_batch;
  std::map<std::pair<Phase, int>, bool> fused;  // regions a span edge of the path covers
  for (const RouteEdge* e : path.edges)
    if (e->span())
      for (int r = e->from; r < e->to; ++r) fused[{e->phase, r}] = true;
  for (size_t si = 0; si < searches.size(); ++si) {
    const RegionSearch& s = searches[si];
    const Phase ph = s.work->summary.phase;
    std::vector<const RouteEdge*> taken;
    for (const RouteEdge* e : path.edges)
      if (e->search == si) taken.push_back(e);
    std::vector<int> regions;
    for (const RouteEdge* e : taken)
      for (int r = e->from; r < e->to; ++r) regions.push_back(r);
    if (taken.empty()) {
      if (s.work->is_span()) continue;
      bool all_fused = true;
      for (int r : part.classes[s.work->class_index].members) {
        regions.push_back(r);
        all_fused = all_fused && fused.count({ph, r});
      }
      if (all_fused && !regions.empty()) continue;
    }
    const Candidate c = taken.empty() ? s.outcomes.front().candidate : taken.front()->candidate;
    PlanRoute r;
    r.region = search_label(part, s);
    r.phase = std::string(phase_name(ph));
    r.signature = s.work->summary.signature;
    for (int x : regions) r.instances.push_back(part.regions[size_t(x)].name);
    r.family = c.family;
    const FamilySpace* f = s.work->space.find(c.family);
    r.route = f ? std::string(family_route_name(f->route)) : "fallback";
    r.params = c.params;
    r.ops = ops_of(g, part, s, c, regions);
    r.time_us = taken.empty() ? s.fallback_us : taken.front()->time_us;
    r.fallback_us = s.fallback_us;
    p.routes.push_back(std::move(r));
    b.search_of_route.push_back(si);
  }
  if (const Backend* be = find_backend(env.backend)) be->bind_routes(p);
  return b;
}

// ---- end-to-end stage ----

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
  Json to_json() const {
    return {{"ok", ok}, {"reason", reason}, {"tokens_checked", checked}, {"ties_within_epsilon", ties},
            {"profile", {{"prefill_ms", prefill_ms}, {"decode_ms_per_token", decode_ms},
                         {"batched_us_per_token", per_token_us}, {"objective_cost_us", cost_us}}},
            {"reference_profile", {{"prefill_ms", ref_prefill_ms}, {"decode_ms_per_token", ref_decode_ms},
                                   {"batched_us_per_token", ref_per_token_us}, {"objective_cost_us", ref_cost_us},
                                   {"source", ref_source}}},
            {"speedup_vs_reference", cost_us > 0 ? ref_cost_us / cost_us : 0.0}};
  }
};

Top2 top2(const float* l, int64_t vocab) {
  Top2 t;
  t.first = argmax(l, vocab);
  float best2 = -INFINITY;
  for (int64_t i = 0; i < vocab; ++i)
    if (i != t.first && l[i] > best2) {
      best2 = l[i];
      t.second = int32_t(i);
    }
  t.margin = l[t.first] - best2;
  return t;
}

class E2eStage {
 public:
  E2eStage(const Model& m, const Graph& g, const CompileOptions& o) : m_(m), g_(g), o_(o) {
    const int64_t maxpos = m.config.max_position_embeddings;
    prompt_len_ = std::max<int64_t>(2, std::min<int64_t>(o.prefill_tokens, maxpos - o.e2e_tokens - 2));
    Rng rng(4242);
    for (int64_t i = 0; i < prompt_len_; ++i) prompt_.push_back(int32_t(rng.next_u64() % uint64_t(m.config.vocab_size)));
    lim_ = ExecutorLimits{std::max(1, o.max_batch), prompt_len_ + o.e2e_tokens + 2, prompt_len_, 0};
    ref_exec_ = usable_backend("cpu").executor(g, lim_, ExecutorRequest{});
  }

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
              std::function<TimingNoise()> probe) {
    db_ = db;
    env_ = env;
    noise_now_ = noise_now;
    probe_ = std::move(probe);
    db_key_ = "e2e-reference/1|" + model_hash + "|prompt " + std::to_string(prompt_len_) + " seed 4242|tokens " +
              std::to_string(o_.e2e_tokens) + "|" + o_.objective + "|decode " + std::to_string(o_.workload_decode_tokens) +
              "|batch " + std::to_string(lim_.max_slots);
  }

  void measure_reference() {
    if (ref_measured_) return;
    std::optional<ReferenceRun> rec;
    std::string created;
    if (db_)
      if (auto hit = db_->reference_run(env_, db_key_)) {
        rec = ReferenceRun::from_json(hit->first, o_.e2e_tokens, m_.config.vocab_size);
        created = hit->second;
      }
    ref_measured_ = true;
    if (rec) {
      ref_top2_ = rec->top2;
    } else {
      const int64_t vocab = m_.config.vocab_size;
      StepBatch step = prompt_step();
      int32_t pos = int32_t(prompt_.size());
      for (int k = 0; k < o_.e2e_tokens; ++k) {
        ref_exec_->forward(step);
        ref_top2_.push_back(top2(ref_exec_->logits(), vocab));
        step = StepBatch{{ref_top2_.back().first}, {pos}, {0}, {0}};
        ++pos;
      }
    }
    std::string why_not;  // why the record's profile is not reused
    if (rec && rec->profile) {
      why_not = rec->profile->noise ? noise_mismatch(*rec->profile->noise, noise_now_)
                                    : std::string("it was taken before timing-noise estimates were recorded");
      if (why_not.empty()) {
        ref_ = *rec->profile;
        ref_source_ = "tuning DB, measured " + created;
        return;
      }
    }
    const auto t0 = Clock::now();
    if (o_.objective == "latency") {
      latency(*ref_exec_, ref_.prefill_ms, ref_.decode_ms);
      ref_.cost_us = 1000 * (ref_.prefill_ms + o_.workload_decode_tokens * ref_.decode_ms);
    } else {
      ref_.per_token_us = batched(*ref_exec_);
      ref_.cost_us = ref_.per_token_us;
    }
    ref_.profile_s = seconds_since(t0);
    ref_.noise = probe_ ? noise_now_.worst(probe_()) : noise_now_;
    if (!why_not.empty()) ref_source_ = "measured now (the tuning DB's profile of " + created + " was not reused: " + why_not + ")";
    if (db_) db_->put_reference_run(env_, db_key_, ReferenceRun{ref_top2_, ref_}.to_json().dump());
  }

  // Seconds one profile of the reference took (recorded with it): what a profile of a plan costs.
  double profile_seconds() const { return ref_.profile_s; }
  // report.json's "reference_backend": the reference's own profile, where it came from and the
  // timing conditions it was taken under.
  Json reference_report() const {
    return {{"source", ref_source_},
            {"prefill_ms", ref_.prefill_ms},
            {"decode_ms_per_token", ref_.decode_ms},
            {"batched_us_per_token", ref_.per_token_us},
            {"objective_cost_us", ref_.cost_us},
            {"profile_s", ref_.profile_s},
            {"timing_noise", ref_.noise ? ref_.noise->to_json() : Json(nullptr)}};
  }

  // Semantic check (teacher-forced by the reference's greedy tokens) and profile.
  E2e run(const Plan& plan, bool profile) {
    E2e r;
    for (const auto& route : plan.routes)
      if (o_.e2e_fault_candidates.count(route_name(route))) {
        r.reason = "injected fault on " + route_name(route);
        return r;
      }
    measure_reference();
    release_timing_share();
    auto ex = make_plan_executor(plan, g_, lim_);
    const int64_t vocab = m_.config.vocab_size;
    StepBatch step = prompt_step();
    int32_t pos = int32_t(prompt_.size());
    for (int k = 0; k < o_.e2e_tokens; ++k) {
      ex->forward(step);
      const Top2 want = ref_top2_[size_t(k)];
      const float* got_l = ex->logits();
      for (int64_t i = 0; i < vocab; ++i)
        if (!std::isfinite(got_l[i])) {
          r.reason = "non-finite logit at generated token " + std::to_string(k);
          return r;
        }
      const int32_t got = argmax(got_l, vocab);
      ++r.checked;
      if (got != want.first) {
        if (!(want.margin < epsilon() && got == want.second)) {
          char b[200];
          std::snprintf(b, sizeof b, "greedy token %d differs from the reference (%d vs %d, reference top-2 margin %.3g >= epsilon %.0e or not the runner-up)",
                        k, got, want.first, double(want.margin), epsilon());
          r.reason = b;
          return r;
        }
        r.ties.push_back(k);
      }
      step = StepBatch{{want.first}, {pos}, {0}, {0}};
      ++pos;
    }
    r.ok = true;
    if (profile) this->profile(*ex, r);
    return r;
  }

  // bf16 weights and KV cache on the GPU round differently from the f32 reference: a wider tie band.
  double epsilon() const { return o_.backend == "cuda" ? std::max(o_.e2e_epsilon, 5e-2) : o_.e2e_epsilon; }

  std::string route_name(const PlanRoute& r) const { return Candidate{r.family, r.params}.name(); }

  // Objective cost of a plan's executor (used by the regression check too); the reference's
  // figures are the ones measure_reference took.
  void profile(Executor& ex, E2e& r) {
    measure_reference();
    if (o_.objective == "latency") {
      latency(ex, r.prefill_ms, r.decode_ms);
      r.cost_us = 1000 * (r.prefill_ms + o_.workload_decode_tokens * r.decode_ms);
    } else {
      r.per_token_us = batched(ex);
      r.cost_us = r.per_token_us;
    }
    r.ref_prefill_ms = ref_.prefill_ms;
    r.ref_decode_ms = ref_.decode_ms;
    r.ref_per_token_us = ref_.per_token_us;
    r.ref_cost_us = ref_.cost_us;
    r.ref_source = ref_source_;
  }

  // Median prefill time and decode time per token of three generations.
  void latency(Executor& e, double& pre, double& dec) {
    std::vector<double> p, d;
    for (int rep = 0; rep < 3; ++rep) {
      const GreedyRun gr = greedy_generate(e, prompt_, 0, o_.e2e_tokens, {}, {});
      p.push_back(gr.prefill_ms);
      d.push_back(median(gr.decode_ms));
    }
    pre = median(p);
    dec = median(d);
  }

  // Median decode step time at max_batch sequences, per generated token (us).
  double batched(Executor& e) {
    const int b = std::max(1, o_.max_batch);
    const int32_t plen = int32_t(std::min<int64_t>(prompt_len_, 8));
    for (int s = 0; s < b; ++s) {
      StepBatch pre;
      for (int32_t i = 0; i < plen; ++i) {
        pre.tokens.push_back(prompt_[size_t(i)]);
        pre.positions.push_back(i);
        pre.slots.push_back(s);
      }
      pre.logit_rows = {plen - 1};
      e.forward(pre);
    }
    std::vector<double> t;
    for (int k = 0; k < o_.e2e_tokens && plen + k < lim_.max_seq; ++k) {
      StepBatch st;
      for (int s = 0; s < b; ++s) {
        st.tokens.push_back(prompt_[size_t(s) % prompt_.size()]);
        st.positions.push_back(plen + k);
        st.slots.push_back(s);
        st.logit_rows.push_back(s);
      }
      const auto t0 = Clock::now();
      e.forward(st);
      t.push_back(1e6 * seconds_since(t0) / b);
    }
    return median(t);
  }

  const ExecutorLimits& limits() const { return lim_; }
  // Frees the timings' shared weights, before executors with weights of their own are built (so
  // no model is on the device three times) and once the timings are over.
  void release_timing_share() { timing_share_.state.reset(); }
  int64_t prompt_tokens() const { return prompt_len_; }

  // The plan's decode time per token: the median over the steps of one greedy generation of
  // `tokens` after the stage's prompt, on a fresh executor (the decode-step tuning's timer). The
  // executors of these timings share their device weights (ExecutorShare: uploading them was most
  // of a trial's time); the end-to-end checks (run) upload their own.
  double decode_ms(const Plan& plan, int tokens) {
    ExecutorLimits lim = lim_;
    lim.max_seq = prompt_len_ + tokens + 2;
    auto ex = make_plan_executor(plan, g_, lim, &timing_share_);
    return median(greedy_generate(*ex, prompt_, 0, tokens, {}, {}).decode_ms);
  }

 private:
  StepBatch prompt_step() const {
    StepBatch step;
    step.tokens = prompt_;
    for (int32_t i = 0; i < int32_t(prompt_.size()); ++i) step.positions.push_back(i);
    step.slots.assign(prompt_.size(), 0);
    step.logit_rows = {int32_t(prompt_.size()) - 1};
    return step;
  }

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

// ---- report ----

std::string us_text(double us) {
  char b[32];
  if (us >= 1e6) std::snprintf(b, sizeof b, "%.2f s", us / 1e6);
  else if (us >= 1000) std::snprintf(b, sizeof b, "%.2f ms", us / 1000);
  else std::snprintf(b, sizeof b, "%.1f us", us);
  return b;
}

// Bytes the region moves at its summary's shape point (weights, activations, KV rows) over the
// chosen route's measured time, against the target's bandwidth (measured when the summary says so).
// Where the GPU's reads alone were measured too, also against them (pct_of_read; null otherwise).
Json achieved_bandwidth(const RegionSummary& s, double us) {
  const double gbs = us > 0 ? s.cost.bytes() / (us * 1e3) : 0.0;
  const double peak = s.target.bandwidth_gbs, read = s.target.read_gbs;
  return {{"bytes", s.cost.bytes()},
          {"GBps", gbs},
          {"pct_of_bandwidth", peak > 0 ? 100.0 * gbs / peak : 0.0},
          {"bandwidth_GBps", peak},
          {"bandwidth_source", s.target.bandwidth_source},
          {"pct_of_read", read > 0 ? Json(100.0 * gbs / read) : Json(nullptr)},
          {"read_GBps", read > 0 ? Json(read) : Json(nullptr)}};
}

// "812.3 (20%)", or "812.3 (20% / 18%)" when the reads' ceiling is known.
std::string bandwidth_text(const Json& a) {
  char b[80];
  if (a.contains("pct_of_read") && a["pct_of_read"].is_number())
    std::snprintf(b, sizeof b, "%.1f (%.0f%% / %.0f%%)", a["GBps"].get<double>(), a["pct_of_bandwidth"].get<double>(),
                  a["pct_of_read"].get<double>());
  else
    std::snprintf(b, sizeof b, "%.1f (%.0f%%)", a["GBps"].get<double>(), a["pct_of_bandwidth"].get<double>());
  return b;
}

// ", advice source: ..." and the first reason when the advisor fell back to the heuristic.
std::string advisor_text(const Json& rep) {
  const Json& a = rep.value("advisor_summary", Json::object());
  if (a.value("fell_back", size_t(0)) == 0) return "";
  return ", advice source: " + a.value("source", std::string()) + " (" + a.value("reason", std::string()) + ")";
}

// "60.00 s, used 80.20 s (20.20 s over the budget); reference backend ..., search ...": where the time went.
std::string budget_text(const Json& b, double elapsed_s) {
  char t[400];
  std::snprintf(t, sizeof t, "%.2f s, used %.2f s", b["seconds"].get<double>(), elapsed_s);
  std::string s = t;
  if (b["overrun_s"].get<double>() > 0) {
    std::snprintf(t, sizeof t, " (%.2f s over the budget)", b["overrun_s"].get<double>());
    s += t;
  }
  std::snprintf(t, sizeof t, "; reference backend %.2f s, search %.2f s, after the search %.2f s; candidates not explored: %zu",
                b["reference_s"].get<double>(), b["search_s"].get<double>(), b["after_search_s"].get<double>(),
                b["not_explored"].get<size_t>());
  return s + t;
}

struct Repair {
  std::string region, phase, blocked, replacement, reason;
  double time_lost_us = 0;
  Json to_json() const {
    return {{"region", region}, {"phase", phase}, {"blocked", blocked}, {"replacement", replacement},
            {"reason", reason}, {"time_lost_us", time_lost_us}};
  }
};

// The repair of a blocked edge: what the new path runs over the regions it covered and the time
// lost per step there. The window grows to whole edges of both paths (a fused span replaced by
// the separate regions, or a region edge by a span over it and its neighbour), so both sums
// cover the same regions of one instance.
Repair repair_of(const Partition& part, const RegionSearch& s, const RouteEdge* was, const RoutePath& before,
                 const RoutePath& after, const std::string& reason) {
  int a = was->from, b = was->to;
  for (bool grown = true; grown;) {
    grown = false;
    for (const RoutePath* p : {&before, &after})
      for (const RouteEdge* e : p->edges)
        if (e->phase == was->phase && e->from < b && e->to > a && (e->from < a || e->to > b)) {
          a = std::min(a, e->from);
          b = std::max(b, e->to);
          grown = true;
        }
  }
  auto within = [&](const RoutePath& p, double* us) {
    std::string names;
    for (const RouteEdge* e : p.edges)
      if (e->phase == was->phase && e->from >= a && e->to <= b) {
        *us += e->time_us;
        names += (names.empty() ? "" : " + ") + e->candidate.name();
      }
    return names;
  };
  double before_us = 0, after_us = 0;
  within(before, &before_us);
  Repair rp;
  rp.region = search_label(part, s);
  rp.phase = std::string(phase_name(was->phase));
  rp.blocked = was->candidate.name();
  rp.replacement = within(after, &after_us);
  rp.reason = reason;
  rp.time_lost_us = after_us - before_us;
  return rp;
}

std::string report_markdown(const Json& rep) {
  std::string md = "# Compile report: " + rep["model"]["name"].get<std::string>() + "\n\n";
  md += "- backend: " + rep["backend"].get<std::string>() + ", device: " + rep["environment"]["device"].get<std::string>() +
        "\n- objective: " + rep["objective"].get<std::string>() + ", advisor: " + rep["advisor"].get<std::string>() +
        advisor_text(rep) +
        "\n- budget: " + budget_text(rep["budget"], rep["elapsed_s"].get<double>()) + "\n- tuning DB: " + rep["db"]["path"].get<std::string>() +
        " (measured now " + std::to_string(rep["totals"]["measured"].get<size_t>()) + ", reused " +
        std::to_string(rep["totals"]["reused"].get<size_t>()) + ", of them from other models " +
        std::to_string(rep["totals"]["reused_from_other_models"].get<size_t>()) + ")" +
        (rep["db"]["note"].get<std::string>().empty() ? std::string() : "; " + rep["db"]["note"].get<std::string>()) + "\n\n";
  // Whether the target's reads alone were measured (one target per compile: the first region says).
  const bool reads = !rep["regions"].empty() && rep["regions"].front()["achieved"].contains("read_GBps") &&
                     rep["regions"].front()["achieved"]["read_GBps"].is_number();
  if (!rep["regions"].empty()) {  // what "% of bandwidth" is relative to (one target per compile)
    // Built without a fixed buffer: a long bandwidth source once cut the line short, and with it
    // the blank line that must separate the list from the table.
    const Json& a = rep["regions"].front()["achieved"];
    char gbs[32];
    std::snprintf(gbs, sizeof gbs, "%.0f", a["bandwidth_GBps"].get<double>());
    md.resize(md.size() - 1);  // the line joins the header list
    md += std::string("- bandwidth for \"% of bandwidth\": ") + gbs + " GB/s (" + a["bandwidth_source"].get<std::string>() +
          "); bytes are the region summary's at its shape point; a copy both reads and writes, so a region "
          "that only reads can pass 100%";
    if (reads) {
      std::snprintf(gbs, sizeof gbs, "%.0f", a["read_GBps"].get<double>());
      md += std::string("; the second percentage is of what reads alone streamed: ") + gbs + " GB/s (" +
            rep["target"]["read_source"].get<std::string>() + ")";
    }
    md += "\n\n";
  }
  md += std::string("| region | phase | n | candidates ok/failed/skipped | winner | time | fallback | speedup | ") +
        (reads ? "GB/s (% of bandwidth / % of reads)" : "GB/s (% of bandwidth)") + " | decision |\n";
  md += "|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : rep["regions"]) {
    size_t ok = 0, failed = 0;
    for (const auto& c : r["search"]["candidates"]) (c["status"] == "ok" ? ok : failed)++;
    char b[128];
    std::snprintf(b, sizeof b, "%.2fx", r["search"]["speedup"].get<double>());
    md += "| " + r["region"].get<std::string>() + " | " + r["phase"].get<std::string>() + " | " +
          std::to_string(r["instances"].get<size_t>()) + " | " + std::to_string(ok) + "/" + std::to_string(failed) + "/" +
          std::to_string(r["search"]["not_explored"].get<size_t>()) + " | `" + r["chosen"].get<std::string>() + "` | " +
          us_text(r["chosen_us"].get<double>()) + " | " + us_text(r["search"]["fallback_us"].get<double>()) + " | " + b +
          " | " + bandwidth_text(r["achieved"]) + " | " + r["search"]["decision"].get<std::string>() +
          (r["instances_in_fused_spans"].get<size_t>() > 0
               ? "; " + std::to_string(r["instances_in_fused_spans"].get<size_t>()) + " instance(s) run in fused spans"
               : std::string()) +
          " |\n";
  }
  md += span_markdown(rep["spans"]);
  md += "\n## Fallbacks and repairs\n\n";
  if (rep["fallbacks"].empty() && rep["repairs"].empty()) md += "none\n";
  for (const auto& f : rep["fallbacks"])
    md += "- fallback " + f["region"].get<std::string>() + " " + f["phase"].get<std::string>() + ": " +
          f["reason"].get<std::string>() + " (time lost against the best measured route: " +
          us_text(f["time_lost_us"].get<double>()) + " per instance)\n";
  for (const auto& f : rep["repairs"])
    md += "- repair " + f["region"].get<std::string>() + " " + f["phase"].get<std::string>() + ": blocked `" +
          f["blocked"].get<std::string>() + "` (" + f["reason"].get<std::string>() + "), now `" +
          f["replacement"].get<std::string>() + "`, time lost " + us_text(f["time_lost_us"].get<double>()) + " per step\n";
  const Json& e = rep["e2e"];
  md += "\n## End-to-end\n\n- semantic check: " + std::string(e["ok"].get<bool>() ? "passed" : "FAILED") + " (" +
        std::to_string(e["tokens_checked"].get<int>()) + " greedy tokens against the reference backend, epsilon " +
        rep["e2e_rule"]["epsilon"].dump() + ", ties " + e["ties_within_epsilon"].dump() + ")\n";
  md += "- profile: " + e["profile"].dump() + "\n- reference: " + e["reference_profile"].dump() + "\n";
  md += "- speedup against the reference backend under the objective: " + e["speedup_vs_reference"].dump() + "\n";
  const Json& fg = rep["fallback_guard"];
  md += "- against every region's fallback: " + fg["status"].get<std::string>();
  if (fg.contains("plan_us"))
    md += " (plan " + us_text(fg["plan_us"].get<double>()) + ", fallbacks " + us_text(fg["fallback_us"].get<double>()) + ", " +
          fg["fallback_source"].get<std::string>() + ")";
  if (fg.contains("reason")) md += ": " + fg["reason"].get<std::string>();
  md += "\n";
  md += "- regression check: " + rep["regression"]["status"].get<std::string>() + "\n";
  const Json& st = rep["step_tuning"];
  md += "\n## Decode-step tuning\n\n- " + st["status"].get<std::string>();
  if (st.contains("trials")) {
    char b[200];
    std::snprintf(b, sizeof b, " (%zu trials of %d tokens; ", st["trials"].size(), st["tokens"].get<int>());
    md += b;
    if (st["start_ms"].get<double>() > 0) {  // a confirmation ran (something was kept on the way)
      std::snprintf(b, sizeof b, "confirmed %.4f ms/token against %.4f at the start; ", st["tuned_ms"].get<double>(),
                    st["start_ms"].get<double>());
      md += b;
    }
    md += st["source"].get<std::string>() + ")";
    if (!st["note"].get<std::string>().empty()) md += "; " + st["note"].get<std::string>();
    md += "\n";
    for (const auto& c : st["changes"]) md += "- " + c.get<std::string>() + "\n";
    md += "\n| pass | region | candidate | decode ms/token | kept |\n|---:|---|---|---:|---|\n";
    for (const auto& t : st["trials"]) {
      std::snprintf(b, sizeof b, "%.4f", t["decode_ms"].get<double>());
      // Passes from 1 for the descent's trials; the start, combined and confirming ones have none.
      const bool descent = t["region"].get<std::string>() != "plan";
      md += "| " + (descent ? std::to_string(t.value("pass", 0) + 1) : std::string()) + " | " + t["region"].get<std::string>() +
            " | " + t["candidate"].get<std::string>() + " | " +
            (t.contains("error") ? "failed: " + t["error"].get<std::string>() : std::string(b)) + " | " +
            (t["kept"].get<bool>() ? "yes" : "") + " |\n";
    }
  } else {
    md += "\n";
  }
  // The whole-step alternatives: each one's decision and, when measured, its medians.
  std::vector<std::tuple<std::string, std::string, std::string>> alternatives = {
      {"seed_plan", "the seed plan's choices as one plan (timed first)", "seed_ms"}};
  for (const Json& st : rep["step_settings"])
    alternatives.emplace_back(st["report_key"], st["label"], st["ms_key"].get<std::string>() + "_ms");
  for (const auto& [key, label, ms] : alternatives) {
    const Json pl = rep.contains(key) ? rep[key] : Json{{"status", "not recorded"}};
    md += std::string("- ") + label + ": " + pl["status"].get<std::string>();
    if (pl.contains("chain_ms")) {
      char b[200];
      std::snprintf(b, sizeof b, " (%s; medians of %d whole-step timings each: %.4f ms/token, the kernel chain %.4f)",
                    pl["variant"].get<std::string>().c_str(), pl["timings"].get<int>(), pl[ms].get<double>(),
                    pl["chain_ms"].get<double>());
      md += b;
    }
    md += "\n";
  }
  md += "\n## Search efficiency\n\n" + rep["efficiency"].dump() + "\n";
  return md;
}

// Turns `with` (the plan with one decode-step switch set) in if it still passes the end-to-end
// check (then `check` is that check); otherwise leaves both as they are and returns why not.
std::optional<std::string> adopt_step_alternative(Plan& plan, const Plan& with, E2e& check, E2eStage& e2e) {
  E2e again = e2e.run(with, true);
  if (!again.ok) return "not kept: the end-to-end check failed (" + again.reason + ")";
  plan = with;
  check = std::move(again);
  return std::nullopt;
}

// A whole-step alternative to the plan's kernel chain: the kernel it adds and the plan with it on.
struct StepAlternative {
  std::string variant;
  Plan plan;
  Json setting;  // what the report and the tuning DB record of it, e.g. {"attn_o": 1}
};

// An alternative against the plan's kernel chain: whole-step timings interleaved, three each; it
// is kept when its median is faster by the margin and the plan still passes the end-to-end
// check. Its median is reported as "<key>_ms".
Json try_step_alternative(Plan& plan, const StepAlternative& alt, const std::string& key, E2e& check, E2eStage& e2e,
                          int tokens, double margin, Clock::time_point deadline) {
  std::vector<double> chain, with;
  try {
    for (int i = 0; i < 3 && Clock::now() < deadline; ++i) {
      chain.push_back(e2e.decode_ms(plan, tokens));
      with.push_back(e2e.decode_ms(alt.plan, tokens));
    }
  } catch (const Error& e) {
    return {{"status", "not kept: " + e.reason()}, {"variant", alt.variant}};
  }
  if (chain.empty()) return {{"status", "not tried (time budget spent)"}, {"variant", alt.variant}};
  const double a = median(chain), b = median(with);
  Json r = {{"variant", alt.variant}, {"chain_ms", a}, {key + "_ms", b}, {"timings", int(chain.size())}};
  for (const auto& [k, v] : alt.setting.items()) r[k] = v;
  if (!(b < a * (1 - margin))) {
    r["status"] = "not kept (not faster by the margin)";
    return r;
  }
  r["status"] = adopt_step_alternative(plan, alt.plan, check, e2e).value_or("kept");
  return r;
}

// A backend's whole-step setting against the plan as it then is, each of its values in turn (a
// value that does not apply is said so, not timed). Returns report.json's entry for it: the kept
// trial (or the last one), with every trial when there are several values.
Json try_step_setting(const Backend& backend, const StepSetting& st, Plan& plan, E2e& check, E2eStage& e2e,
                      const Graph& g, int tokens, double margin, Clock::time_point deadline) {
  Json trials = Json::array(), kept;
  for (int v : st.values) {
    std::string variant, why;
    const std::optional<Plan> with = backend.with_step_setting(g, plan, st.name, v, &variant, &why);
    Json r = with ? try_step_alternative(plan, {variant, *with, {{st.name, v}}}, st.ms_key, check, e2e, tokens, margin, deadline)
                  : Json{{"status", why}};
    trials.push_back(r);
    if (r.value("status", "") == "kept") kept = r;
  }
  if (trials.size() == 1) return trials.front();
  Json out = kept.is_null() ? trials.back() : kept;
  out["trials"] = trials;
  return out;
}

// One whole-step alternative in the decode-step stage: a warm compile from the same plan takes the
// decision recorded under `name` in the tuning DB (re-adopting `with_of(plan, record)` when it was
// kept, after the end-to-end check); otherwise `measure` decides and a measured decision is
// recorded. Returns the report's entry.
Json step_alternative_stage(const std::string& name, const std::string& ms_key, Plan& plan, E2e& check, E2eStage& e2e,
                            TuningDb& db, const Environment& env, const std::string& hash, const CompileOptions& o,
                            const StepTuneOptions& sto, const std::function<Json()>& measure,
                            const std::function<Plan(const Plan&, const Json&)>& with_of) {
  const std::string key = name + step_tuning_key(plan, hash, o.step_tune_tokens, e2e.prompt_tokens(), sto);
  if (auto hit = db.step_tuning(env, key)) {
    if (std::optional<Json> rec = step_alternative_from_json(hit->first, ms_key)) {
      Json& j = *rec;
      j["source"] = "tuning DB, measured " + hit->second;
      if (j["status"] == "kept")
        if (auto why = adopt_step_alternative(plan, with_of(plan, j), check, e2e)) j["status"] = *why;
      return j;
    }
  }
  Json r = measure();
  if (r.contains("chain_ms")) db.put_step_tuning(env, key, r.dump());  // a measured decision
  r["source"] = "measured now";
  return r;
}

// The factor CompileOptions::e2e_slowdown applies to a plan's side-by-side profiles (tests).
double injected_slowdown(const Plan& p, const CompileOptions& o) {
  double f = 1;
  for (const auto& r : p.routes)
    if (auto it = o.e2e_slowdown.find(Candidate{r.family, r.params}.name()); it != o.e2e_slowdown.end()) f *= it->second;
  return f;
}

// Plans a and b profiled alternately three times (side by side, so both see the same moment's
// noise): each one's profile of median objective cost, and a's smallest cost ratio to b within a
// round. A verdict that a is slower needs every round to say so: on a loaded machine one round
// can be 20% off, and a single slow round must not fail a compile.
struct SideBySide {
  E2e a, b;
  std::vector<double> a_us, b_us;  // each round's objective cost
  bool a_slower_beyond(double margin) const { return slower_in_every_round(a_us, b_us, margin); }
};
SideBySide side_by_side(E2eStage& e2e, const Graph& g, const Plan& a, const Plan& b, const CompileOptions& o) {
  std::vector<E2e> ra, rb;
  e2e.release_timing_share();
  auto ex_a = make_plan_executor(a, g, e2e.limits());
  auto ex_b = make_plan_executor(b, g, e2e.limits());
  const double fa = injected_slowdown(a, o), fb = injected_slowdown(b, o);
  for (int k = 0; k < 3; ++k) {
    ra.emplace_back();
    rb.emplace_back();
    e2e.profile(*ex_a, ra.back());
    e2e.profile(*ex_b, rb.back());
    ra.back().cost_us *= fa;
    rb.back().cost_us *= fb;
  }
  auto mid = [](std::vector<E2e> v) {
    std::sort(v.begin(), v.end(), [](const E2e& x, const E2e& y) { return x.cost_us < y.cost_us; });
    return v[v.size() / 2];
  };
  SideBySide s{mid(ra), mid(rb), {}, {}};
  for (size_t k = 0; k < ra.size(); ++k) {
    s.a_us.push_back(ra[k].cost_us);
    s.b_us.push_back(rb[k].cost_us);
  }
  return s;
}

// Copies a profile's own figures (not its reference's).
void take_profile(E2e& to, const E2e& from) {
  to.prefill_ms = from.prefill_ms;
  to.decode_ms = from.decode_ms;
  to.per_token_us = from.per_token_us;
  to.cost_us = from.cost_us;
}

// On the CPU backend a plan whose every route is the fallback runs the reference backend itself:
// its own profile, taken now, is the reference's, and its speedup is exactly 1 (a reference
// profile of another moment only adds that moment's noise: one taken under load made such a
// plan "1.69x").
void reference_is_the_plan(const Plan& plan, E2e& check) {
  if (plan.environment.backend != "cpu" || plan.cuda_fast) return;
  for (const auto& r : plan.routes)
    if (r.route != "fallback") return;
  check.ref_prefill_ms = check.prefill_ms;
  check.ref_decode_ms = check.decode_ms;
  check.ref_per_token_us = check.per_token_us;
  check.ref_cost_us = check.cost_us;
  check.ref_source = "this plan, profiled now: every route is the reference backend's (its own profile: " + check.ref_source + ")";
}

// Regions are timed alone (or in short chains), so a plan of searched routes can still run
// slower end to end than every region's fallback: the all-fallback plan (on the CUDA backend
// the fast path's default points; on the CPU backend the reference backend itself) is checked
// and profiled after the plan, alternating with it three times; if the searched plan's median
// is slower by more than the selection margin, every specialised route is blocked and the
// fallbacks are kept, each listed as a repair with the time lost. (A CPU compile once wrote a
// plan 0.55x the reference's speed without a word.) On the CPU backend these side-by-side
// profiles are also the end-to-end stage's figures: the plan's and the reference's, taken at
// one moment, so speedup_vs_reference compares like with like even on a loaded machine.
// Returns report.json's "fallback_guard".
Json guard_against_fallbacks(const Model& m, const Graph& g, const Partition& part, const std::vector<RegionSearch>& searches,
                             RouteGraph& rg, RoutePath& path, BuiltPlan& built, E2e& check, std::vector<Repair>& repairs,
                             E2eStage& e2e, const Environment& env, const CompileOptions& o, const std::string& hash,
                             double margin) {
  std::vector<size_t> specialised;
  for (size_t si = 0; si < searches.size(); ++si)
    if (const RouteEdge* e = RouteGraph::choice(path, si); e && !e->fallback) specialised.push_back(si);
  if (specialised.empty()) return {{"status", "every region on its fallback"}};
  const std::string fallbacks = o.backend == "cpu" ? "the reference backend (every region's fallback)" : "every region's fallback";
  RouteGraph fb = rg;
  for (const RouteEdge& e : fb.edges())
    if (!e.fallback) fb.block(e.search, e.candidate.name());
  const RoutePath fpath = fb.cheapest();
  BuiltPlan fbuilt = plan_of(m, g, part, searches, fpath, env, o, hash);
  E2e fcheck = e2e.run(fbuilt.plan, false);
  if (!fcheck.ok) return {{"status", "the fallback plan failed the end-to-end check: " + fcheck.reason}};
  const SideBySide sbs = side_by_side(e2e, g, built.plan, fbuilt.plan, o);
  const double plan_us = sbs.a.cost_us, fallback_us = sbs.b.cost_us;
  const std::string source = "profiled now, alternating with the plan (median of 3)";
  Json j = {{"plan_us", plan_us}, {"fallback_us", fallback_us}, {"margin", margin}, {"fallback_source", source}};
  take_profile(fcheck, sbs.b);
  if (!(fallback_us > 0) || !sbs.a_slower_beyond(margin)) {
    if (o.backend == "cpu") {  // the reference backend's figures of the same moment
      take_profile(check, sbs.a);
      check.ref_prefill_ms = sbs.b.prefill_ms;
      check.ref_decode_ms = sbs.b.decode_ms;
      check.ref_per_token_us = sbs.b.per_token_us;
      check.ref_cost_us = sbs.b.cost_us;
      check.ref_source = "the reference backend (every region's fallback), " + source;
    }
    j["status"] = "searched routes kept";
    return j;
  }
  char why[400];
  std::snprintf(why, sizeof why,
                "end-to-end profile: the searched routes ran %.1f%% slower than %s (%.1f vs %.1f us under the %s "
                "objective, beyond the margin of %.1f%%)",
                100 * (plan_us / fallback_us - 1), fallbacks.c_str(), plan_us, fallback_us, o.objective.c_str(), 100 * margin);
  const RoutePath before = path;
  std::vector<std::pair<size_t, const RouteEdge*>> old;
  for (size_t si : specialised) {
    old.emplace_back(si, RouteGraph::choice(before, si));
    rg.block(si, old.back().second->candidate.name());
  }
  path = rg.cheapest();
  for (const auto& [si, was] : old) repairs.push_back(repair_of(part, searches[si], was, before, path, why));
  built = std::move(fbuilt);
  check = fcheck;
  j["status"] = "fallbacks kept";
  j["reason"] = why;
  return j;
}

// report.json's "db": where the database is, what it holds here, and what it could not do for
// this compile ("note": empty when it did everything).
Json db_report(const TuningDb& db, const Environment& env) {
  const TuningDb::Health& h = db.health();
  const std::optional<int64_t> here = db.count(env);
  std::string note;
  if (h.not_stored() > 0)
    note = std::to_string(h.not_stored()) + " records of this compile (its measurements, the plan's figures) were not "
           "stored in the tuning database: " + h.reason + "; the plan is written, a later compile measures them again";
  else if (h.reads_failed > 0)
    note = "the tuning database could not be read " + std::to_string(h.reads_failed) + " times (" + h.reason +
           "): this compile measured instead; everything it measured is stored";
  return {{"path", db.path().string()},
          {"file", db.file().string()},
          {"environment_key", env.key()},
          {"records_here", here ? Json(*here) : Json(nullptr)},
          {"stored", h.not_stored() == 0},
          {"not_stored", h.not_stored()},
          {"reads_failed", h.reads_failed},
          {"rows_skipped", h.rows_skipped},
          {"note", note}};
}

}  // namespace

CompileResult compile_model(const Model& m, const CompileOptions& o) {
  const auto start = Clock::now();
  const auto deadline_total = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.budget_s));
  if (o.objective != "latency" && o.objective != "throughput")
    throw_input("--objective", json_quote(o.objective) + " is not latency or throughput");
  if (o.max_batch < 1 || o.max_batch > 256) throw_input("--max-batch", "must be in [1, 256]");
  if (!(o.budget_s > 0)) throw_input("--budget", "must be a positive number of seconds");

  const Graph g = build_decoder_graph(m.config, m.weights);
  const Environment env = current_environment(o.backend);
  const Backend& backend = usable_backend(o.backend);
  if (!(o.db_wait_s >= 0) || o.db_wait_s > 86400) throw_input("--db-wait", "must be between 0 and 86400 seconds");
  TuningDb db(o.db_path.empty() ? TuningDb::default_path() : o.db_path, o.db_wait_s);
  const std::string hash = model_hash(m);
  const std::string model_name = m.dir.filename().empty() ? m.dir.parent_path().filename().string() : m.dir.filename().string();
  if (o.seed_plan && o.seed_plan->model_hash != hash)
    throw_input("--seed-plan " + o.seed_from, "made for another model (" + o.seed_plan->model_name + ", hash " +
                                                  o.seed_plan->model_hash.substr(0, 12) + ")");

  FrontOptions fo;
  fo.backend = o.backend;
  std::string target_note;
  fo.target = resolve_target("", o.backend, false, &target_note);
  // On the GPU the report's percentages are against the ceilings measured now (before the front,
  // whose summaries copy the target), not the table's figures of another day.
  std::string unmeasured;
  if (o.backend == "cuda" && fo.target.origin == "detected" && !measure_gpu_ceilings(&fo.target, &unmeasured))
    target_note += std::string(target_note.empty() ? "" : "; ") + "the GPU's ceilings were not measured (" + unmeasured +
                   "): percentages are against the target table's figures";
  const int64_t maxpos = m.config.max_position_embeddings;
  fo.decode = decode_point(o.objective == "throughput" ? o.max_batch : 1, std::min<int64_t>(o.decode_context, maxpos));
  fo.prefill = prefill_point(std::min<int64_t>(o.prefill_tokens, maxpos));
  // Waiting for the advisor counts against the budget, and only a share of it: an endpoint that
  // is slow, silent or gone leaves the search its time (those regions get the heuristic advice).
  constexpr double kAdvisorBudgetShare = 0.25;
  AdvisorConfig advisor_cfg = o.advisor;
  const double advisor_share_s = kAdvisorBudgetShare * o.budget_s;
  const auto advisor_deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(advisor_share_s));
  advisor_cfg.deadline = advisor_cfg.deadline ? std::min(*advisor_cfg.deadline, advisor_deadline) : advisor_deadline;
  char share_text[96];
  std::snprintf(share_text, sizeof share_text, "the advisor's share of the budget (%.3g of %.3g s)", advisor_share_s, o.budget_s);
  advisor_cfg.deadline_what = share_text;
  auto advisor = make_advisor(advisor_cfg);
  FrontResult front = run_front(g, fo, *advisor, [&](const std::string& sig, const std::string& backend) {
    return measured_history(db, env, sig, backend);
  });

  // What the backend said about its spaces (why a region has no family), once each.
  for (const RegionWork& w : front.work)
    for (const std::string& n : w.space.notes)
      if (std::find(front.notes.begin(), front.notes.end(), n) == front.notes.end()) front.notes.push_back(n);
  SearchOptions so = o.search;
  so.model_name = model_name;
  std::vector<RegionSearch> searches;
  // Fused spans (CPU: each layer's mlp_in + mlp_out); their searches follow the regions'.
  std::vector<SpanWork> spans = layer_mlp_spans(g, front, o.backend);
  CompileProgress prog;
  prog.regions_total = front.work.size() + spans.size();
  auto report_progress = [&](const std::string& stage) {
    if (!o.progress) return;
    prog.stage = stage;
    prog.budget_left_s = std::max(0.0, o.budget_s - seconds_since(start));
    o.progress(prog);
  };
  auto on_candidate = [&](const CandidateOutcome& c) {
    (c.from_db ? prog.candidates_reused : prog.candidates_measured)++;
    report_progress(prog.stage);
  };

  // The reference backend's half of the end-to-end stage first (it does not depend on the plan),
  // then the search until what the stages after it need is left: the plan's own check and
  // profile (on the CPU backend as slow as the reference's), the kernel binaries. The deadline is
  // checked between candidates only, so the last candidate of each region may run past it.
  E2eStage e2e(m, g, o);
  // The host's timing conditions now: a stored reference profile is reused only under the same.
  const std::function<TimingNoise()> probe = o.timing_noise ? o.timing_noise : std::function<TimingNoise()>(measure_timing_noise);
  const TimingNoise noise_now = probe();
  e2e.use_db(&db, env, hash, noise_now, probe);
  report_progress("reference backend (end-to-end check and profile)");
  const auto ref_start = Clock::now();
  e2e.measure_reference();
  const double reference_s = seconds_since(ref_start);
  // On CUDA the decode-step tuning (latency objective) runs after the search, which then ends at
  // 60% of the budget instead of 80%; the tuning stops starting trials at 95%.
  const bool step_tune = backend.tunes_whole_steps() && o.step_tuning && o.objective == "latency";
  // On the CPU the plan's check and profile and the fallback guard's six profiles alternating
  // with the reference's take about eight of the reference's profiles.
  const double after_search_s = o.backend == "cpu" ? std::max({0.2 * o.budget_s, reference_s, 8 * e2e.profile_seconds()})
                                                   : (step_tune ? 0.4 : 0.2) * o.budget_s;
  const auto search_start = Clock::now();
  const auto search_deadline =
      std::max(search_start, start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.budget_s - after_search_s)));

  // Every region the backend searches gets its evaluator first, so that the budget can be divided
  // by the candidates each has: each region (and fused span) gets a share of the search time left
  // in proportion to its candidates (time a region does not use passes to the next); an equal
  // share cut the large spaces short while the small ones left theirs unused. Regions go in the
  // backend's order; spans come last: their order starts from the tiles the region searches chose.
  std::vector<std::pair<const RegionWork*, std::unique_ptr<Evaluator>>> to_search;
  for (const RegionWork& w : front.work)
    if (auto ev = backend.evaluator(g, front.partition, w)) to_search.emplace_back(&w, std::move(ev));
  std::stable_sort(to_search.begin(), to_search.end(), [&](const auto& a, const auto& b) {
    return backend.search_rank(*a.first) < backend.search_rank(*b.first);
  });
  // A span is searched when each of its regions is and the backend has its evaluator.
  std::vector<std::unique_ptr<Evaluator>> span_evs;
  std::erase_if(spans, [&](const SpanWork& sp) {
    for (size_t k : sp.parts)
      if (std::none_of(to_search.begin(), to_search.end(), [&](const auto& t) { return t.first == &front.work[k]; })) return true;
    return false;
  });
  for (const SpanWork& sp : spans) span_evs.push_back(backend.evaluator(g, front.partition, sp.work));
  for (size_t i = spans.size(); i-- > 0;)
    if (!span_evs[i]) {
      spans.erase(spans.begin() + long(i));
      span_evs.erase(span_evs.begin() + long(i));
    }
  std::vector<std::string> timing_methods;
  size_t left = 0;
  for (const auto& [w, ev] : to_search) left += w->ordered.size();
  for (const auto& sp : spans) left += sp.work.space.size();
  prog.regions_total = to_search.size() + spans.size();
  auto search_one = [&](const RegionWork& w, Evaluator& ev, const std::string& label) {
    const auto now = Clock::now();
    const auto share = now < search_deadline
                           ? (search_deadline - now) * long(w.ordered.size()) / long(std::max<size_t>(left, 1))
                           : Clock::duration(0);
    left -= std::min(left, w.ordered.size());
    report_progress("search " + label + " " + std::string(phase_name(w.summary.phase)));
    if (const std::string m = ev.timing_method();
        std::find(timing_methods.begin(), timing_methods.end(), m) == timing_methods.end())
      timing_methods.push_back(m);
    searches.push_back(search_region(w, ev, &db, env, so, now + share, on_candidate));
    ++prog.regions_done;
  };
  for (auto& [w, ev] : to_search) {
    search_one(*w, *ev, std::string(region_kind_name(w->summary.kind)));
    ev.reset();  // its buffers (up to a GB of LM head weights on a GPU) are no longer needed
  }
  for (size_t i = 0; i < spans.size(); ++i) {
    SpanWork& sp = spans[i];
    // The span's parts become indices of their searches.
    for (size_t& k : sp.parts) {
      const auto it = std::find_if(searches.begin(), searches.end(), [&](const RegionSearch& r) { return r.work == &front.work[k]; });
      k = size_t(it - searches.begin());
    }
    order_span_candidates(sp, searches);
    search_one(sp.work, *span_evs[i], sp.name + " (fused span)");
    span_evs[i].reset();
    double separate_us = 0;
    for (size_t k : sp.parts) separate_us += searches[k].winner_us;
    decide_span(searches.back(), separate_us, so.margin);
  }
  std::string timing_method;
  for (const std::string& m : timing_methods) timing_method += (timing_method.empty() ? "" : "; ") + m;
  if (searches.empty())
    throw_input("--backend " + o.backend, "nothing to search for this model on this backend" +
                                              (front.notes.empty() ? std::string() : ": " + front.notes.front()));

  CompileResult result;
  // Route graph and end-to-end stage with repair.
  const double dw = o.objective == "latency" ? double(o.workload_decode_tokens) : 1.0 / o.max_batch;
  const double pw = o.objective == "latency" ? 1.0 : 0.0;
  RouteGraph rg(front.partition, searches, dw, pw, so.margin);
  RoutePath path = rg.cheapest();
  const double search_s = seconds_since(search_start), search_end_s = seconds_since(start);
  report_progress("end-to-end check");
  std::vector<Repair> repairs;
  BuiltPlan built = plan_of(m, g, front.partition, searches, path, env, o, hash);
  E2e check = e2e.run(built.plan, false);
  size_t rounds = 0;
  std::set<std::pair<size_t, std::string>> passed_alone;  // routes already checked alone
  while (!check.ok) {
    // Every round blocks at least one edge of the path, so the edges bound the rounds.
    if (++rounds > rg.edges().size() + 1) throw_internal("compile", "repair did not converge: " + check.reason);
    // Find the routes that fail alone (every other route on its fallback) and block them; out
    // of budget, block every specialised route at once (the fallback plan is the reference).
    const bool out_of_budget = Clock::now() > deadline_total;
    std::vector<size_t> culprits;
    for (size_t si = 0; si < searches.size() && !out_of_budget; ++si) {
      const RouteEdge* e = RouteGraph::choice(path, si);
      if (!e || e->fallback || passed_alone.count({si, e->candidate.name()})) continue;
      Plan single = built.plan;
      for (size_t k = 0; k < single.routes.size(); ++k)
        if (built.search_of_route[k] != si) {
          single.routes[k].family = searches[built.search_of_route[k]].outcomes.front().candidate.family;
          single.routes[k].route = "fallback";
          single.routes[k].params.clear();
          single.routes[k].ops.clear();
        }
      backend.bind_routes(single);
      if (!e2e.run(single, false).ok) culprits.push_back(si);
      else passed_alone.insert({si, e->candidate.name()});
    }
    if (culprits.empty())  // only a combination fails (or no budget): block every specialised route
      for (size_t si = 0; si < searches.size(); ++si)
        if (const RouteEdge* e = RouteGraph::choice(path, si); e && !e->fallback) culprits.push_back(si);
    std::vector<std::pair<size_t, const RouteEdge*>> old;
    for (size_t si : culprits) {
      old.emplace_back(si, RouteGraph::choice(path, si));
      rg.block(si, old.back().second->candidate.name());
    }
    const RoutePath before = path;
    path = rg.cheapest();
    for (const auto& [si, was] : old)
      repairs.push_back(repair_of(front.partition, searches[si], was, before, path,
                                  "end-to-end: " + check.reason +
                                      (out_of_budget ? " (budget exhausted: every specialised route blocked)" : "")));
    built = plan_of(m, g, front.partition, searches, path, env, o, hash);
    check = e2e.run(built.plan, false);
  }
  report_progress("end-to-end profile");
  {
    auto ex = make_plan_executor(built.plan, g, e2e.limits());
    e2e.profile(*ex, check);
  }
  const Json fallback_guard = guard_against_fallbacks(m, g, front.partition, searches, rg, path, built, check, repairs, e2e,
                                                      env, o, hash, so.margin);
  // Decode-step tuning (CUDA fast path): the tuned plan is checked end to end again and profiled;
  // should the check fail, the plan as it was is kept.
  Json step_tuning = {{"status", step_tune ? "not run (no fast-path plan)" : "off (CPU backend, throughput objective or --no-step-tuning)"}};
  std::map<size_t, std::string> step_tuned;  // search -> the candidate the step tuning chose
  // The backend's whole-step settings (report.json's entries under their report keys).
  const std::vector<StepSetting> settings = step_tune ? backend.step_settings() : std::vector<StepSetting>{};
  Json settings_report = Json::object();
  for (const StepSetting& st : settings) settings_report[st.report_key] = {{"status", "not tried"}};
  Json seed_plan = {{"status", !o.seed_plan ? "none given" : "not applied (CUDA latency plans only)"}};
  if (step_tune) {
    StepTuneOptions sto;
    sto.deadline = deadline_total - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(0.05 * o.budget_s));
    const std::string prefix = backend.name() + ":";
    auto tunable = [&](const PlanRoute& r) { return r.phase == "decode" && r.family.rfind(prefix, 0) == 0; };
    auto refresh = [&](Plan& p) { backend.bind_routes(p); };  // the routes' points; the step's settings stay
    // A plan compiled before (--seed-plan) as a whole against the searched one: which points win
    // in the chain depends on the others and on the carveout, and the tuning below only times a
    // few alternatives per route, ranked by their time alone (bench/results/2026-12-02-two-pass/:
    // a fresh Qwen3-1.7B compile never tried the output projection point of the best plan known).
    if (o.seed_plan) {
      report_progress("seed plan");
      const SeededPlan sp = seed_routes(built.plan, *o.seed_plan, searches, built.search_of_route, tunable, refresh);
      Json r = sp.changed ? try_step_alternative(built.plan, {"seed plan " + o.seed_from, sp.plan, {}}, "seed", check, e2e,
                                                 o.step_tune_tokens, sto.margin, deadline_total)
                          : Json{{"status", "same as the searched plan"}};
      r["from"] = o.seed_from;
      r["taken"] = sp.taken;
      r["missing"] = sp.missing;
      seed_plan = r;
    }
    // Each setting against the plan as it then is; a warm compile from the same plan takes the
    // recorded decision (re-checked end to end when it was kept). Those tried before the routes'
    // tuning (one shared-memory carveout for every kernel) go first, so that the tuning times its
    // points under them: which points win in the chain depends on it (on the H200, Qwen3-1.7B's
    // output projection at half the blocks was 1.7% faster under carveout 40 and 0.4% without one,
    // under the tuning's margin: bench/results/2026-12-02-o-grid/).
    auto run_setting = [&](const StepSetting& st) {
      report_progress(st.label);
      settings_report[st.report_key] = step_alternative_stage(
          st.record, st.ms_key + "_ms", built.plan, check, e2e, db, env, hash, o, sto,
          [&] { return try_step_setting(backend, st, built.plan, check, e2e, g, o.step_tune_tokens, sto.margin, deadline_total); },
          [&](const Plan& p, const Json& rec) {
            return backend.with_step_setting(g, p, st.name, rec.value(st.name, st.values.back()), nullptr, nullptr).value_or(p);
          });
    };
    for (const StepSetting& st : settings)
      if (st.before_routes) run_setting(st);
    // Then each route's points under their own carveouts too: the other values of the stage's
    // (a route under the kept one is the plan's).
    for (int v : backend.route_carveouts())
      if (!built.plan.cuda_fast || built.plan.cuda_fast->get("smem_carveout") != v) sto.carveouts.push_back(v);
    report_progress("decode-step tuning");
    const Plan before = built.plan;
    // A warm compile from the same starting plan takes the recorded outcome (as the region
    // searches take their recorded candidates); otherwise measure and record every trial.
    const std::string key = step_tuning_key(built.plan, hash, o.step_tune_tokens, e2e.prompt_tokens(), sto);
    std::optional<StepTuning> recorded;
    std::string source = "measured now";
    if (auto hit = db.step_tuning(env, key)) {
      recorded = StepTuning::from_json(Json::parse(hit->first, nullptr, false));
      source = "tuning DB, measured " + hit->second;
    }
    StepTuning st;
    // A record the budget cut short is measured again: this compile may have the time to finish.
    if (recorded && !recorded->cut &&
        apply_recorded_step_tuning(built.plan, *recorded, searches, built.search_of_route, refresh)) {
      st = *recorded;
    } else {
      source = recorded && recorded->cut ? "measured now (the tuning DB's record was cut by its budget)" : "measured now";
      st = tune_decode_step(built.plan, searches, built.search_of_route, tunable, refresh,
                            [&](const Plan& p) { return e2e.decode_ms(p, o.step_tune_tokens); }, sto);
      db.put_step_tuning(env, key, st.to_json().dump());
    }
    if (st.changed) {
      E2e again = e2e.run(built.plan, true);
      if (again.ok) {
        check = again;
        for (size_t k = 0; k < built.plan.routes.size(); ++k)
          if (route_choice_name(built.plan.routes[k]) != route_choice_name(before.routes[k]))
            step_tuned[built.search_of_route[k]] = route_choice_name(built.plan.routes[k]);
      } else {
        st.changed = false;
        st.note = "reverted: the tuned plan failed the end-to-end check (" + again.reason + ")";
        built.plan = before;
      }
    }
    step_tuning = st.to_json();
    step_tuning["status"] = st.changed ? "tuned" : "kept the searched plan";
    step_tuning["source"] = source;
    step_tuning["tokens"] = o.step_tune_tokens;
    step_tuning["margin"] = sto.margin;
    step_tuning["top"] = sto.top;
    step_tuning["passes"] = sto.passes;
    for (const StepSetting& st : settings)
      if (!st.before_routes) run_setting(st);
    e2e.release_timing_share();
  }
  Plan& plan = built.plan;
  reference_is_the_plan(plan, check);
  plan.e2e = check.to_json();
  report_progress("kernel binaries");
  result.kernels = backend.plan_kernels(g, plan);
  for (const auto& k : result.kernels) plan.kernels.push_back(k.kernel);

  // Regression check against the best plan recorded for this model here.
  Json regression = {{"threshold", o.regression_threshold}};
  const size_t unread = db.health().reads_failed;
  std::optional<PlanRecord> best = db.best_plan(env, hash, o.objective);
  if (db.health().reads_failed > unread) {
    regression["status"] = "not checked: the tuning database could not be read (" + db.health().reason + ")";
  } else if (!best) {
    regression["status"] = "no earlier plan for this model here";
  } else {
    Plan prev = Plan::from_json(Json::parse(best->plan_json), "tuning db plan");
    auto routes_of = [](const Plan& p) {
      Json r = Json::array();
      for (const auto& x : p.routes) r.push_back({x.signature, x.phase, x.family, x.params});
      return r;
    };
    if (routes_of(prev) == routes_of(plan)) {
      regression["status"] = "same routes as the best recorded plan";
    } else {
      // Measure both now, side by side: recorded figures from another moment carry other noise.
      const SideBySide sbs = side_by_side(e2e, g, plan, prev, o);
      const double now_us = sbs.a.cost_us, best_us = sbs.b.cost_us;
      regression["plan_us"] = now_us;
      regression["best_recorded_us"] = best_us;
      regression["min_round_ratio"] = min_round_ratio(sbs.a_us, sbs.b_us);
      if (sbs.a_slower_beyond(o.regression_threshold)) {
        char msg[300];
        std::snprintf(msg, sizeof msg,
                      "the new plan is %.1f%% slower end to end than the best plan recorded for this model here "
                      "(%.1f us vs %.1f us under the %s objective); use --allow-regression to accept it",
                      100 * (now_us / best_us - 1), now_us, best_us, o.objective.c_str());
        regression["status"] = o.allow_regression ? std::string("regression allowed: ") + msg : std::string("FAILED: ") + msg;
        if (!o.allow_regression) result.regression = msg;
      } else {
        regression["status"] = "ok (within the threshold of the best recorded plan)";
      }
    }
  }
  if (result.regression.empty()) db.put_plan(env, PlanRecord{hash, model_name, o.objective, check.cost_us, plan.to_json().dump(), ""});
  // Whatever the database could not take yet is stored now, waiting for a lock with backoff; if it
  // stays unavailable the plan is still written and the report says what was not stored.
  if (db.health().pending > 0) report_progress("tuning database (storing what it could not take earlier)");
  db.flush();
  const Json db_json = db_report(db, env);
  result.db_note = db_json["note"].get<std::string>();

  // Report.
  Json regions = Json::array(), fallbacks = Json::array();
  size_t measured = 0, reused = 0, other_models = 0, not_explored = 0;
  double adv_sum = 0, rnd_sum = 0;
  size_t eff_n = 0;
  Json eff_rows = Json::array();
  for (size_t si = 0; si < searches.size(); ++si) {
    const RegionSearch& s = searches[si];
    const RegionWork& w = *s.work;
    const RouteEdge* e = RouteGraph::choice(path, si);
    measured += s.measured;
    reused += s.reused;
    not_explored += s.not_explored;
    for (const auto& c : s.outcomes) other_models += c.from_db && c.measured_by != model_name;
    if (w.is_span()) continue;  // spans[] below
    size_t in_spans = 0;  // instances the path runs inside a fused span
    for (const RouteEdge* pe : path.edges)
      if (pe->span() && pe->phase == w.summary.phase)
        for (int m : front.partition.classes[w.class_index].members) in_spans += pe->from <= m && m < pe->to;
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
    for (const auto& r : w.advice.advice.rejections) rej.push_back(r.to_json());
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
                       {"achieved", achieved_bandwidth(w.summary, chosen_us)}});
    // The plan runs the step tuning's choice where it replaced the search's (its time alone: the search's record).
    if (auto it = step_tuned.find(si); it != step_tuned.end()) regions.back()["step_tuned"] = it->second;
  }
  Json repairs_j = Json::array();
  for (const auto& r : repairs) repairs_j.push_back(r.to_json());
  result.elapsed_s = seconds_since(start);
  // Which advice the search followed, and why not the advisor's where it fell back.
  Json advisor_summary = advisor->tally().to_json(advisor->name());
  advisor_summary["share_s"] = advisor_share_s;
  result.advisor_note = advisor->tally().summary(advisor->name());
  Json rep = {{"format", "agentcompile-report"},
              {"version", 1},
              {"model", {{"name", model_name}, {"dir", m.dir.string()}, {"hash", hash},
                         {"architecture", std::string(arch_name(m.config.arch))}}},
              {"backend", o.backend},
              {"environment", env.to_json()},
              {"target", fo.target.to_json()},
              {"advisor", advisor->name()},
              {"advisor_summary", advisor_summary},
              {"objective", o.objective},
              {"max_batch", o.max_batch},
              {"points", {{"decode", fo.decode.to_json()}, {"prefill", fo.prefill.to_json()}}},
              {"timing_method", timing_method},
              {"fallback_guard", fallback_guard},
              {"step_tuning", step_tuning},
              {"seed_plan", seed_plan},
              {"selection", {{"margin", so.margin}, {"repeats", so.repeats}, {"warmup", so.warmup},
                             {"rule", "fastest correct; ties within the measured noise go to the simpler candidate; a "
                                      "specialised candidate must beat the fallback by max(margin, noise)"}}},
              {"budget", {{"seconds", o.budget_s},
                          {"search_share", std::chrono::duration<double>(search_deadline - start).count() / o.budget_s},
                          {"reference_s", reference_s}, {"search_s", search_s},
                          {"after_search_s", result.elapsed_s - search_end_s},
                          {"overrun_s", std::max(0.0, result.elapsed_s - o.budget_s)},
                          {"not_explored", not_explored}, {"exhausted", Clock::now() > deadline_total}}},
              {"db", db_json},
              {"timing_noise", noise_now.to_json()},
              {"reference_backend", e2e.reference_report()},
              {"totals", {{"regions", searches.size() - spans.size()}, {"spans", spans.size()}, {"measured", measured},
                          {"reused", reused}, {"reused_from_other_models", other_models}}},
              {"regions", regions},
              {"spans", span_report(spans, searches, rg, path)},
              {"route_graph", rg.to_json(path)},
              {"fallbacks", fallbacks},
              {"repairs", repairs_j},
              {"e2e_rule", {{"tokens", o.e2e_tokens}, {"epsilon", e2e.epsilon()},
                            {"rule", "greedy tokens equal to the reference backend's (teacher-forced), or where the "
                                     "reference's top-2 logit margin is below epsilon, its runner-up"}}},
              {"e2e", check.to_json()},
              {"regression", regression},
              {"efficiency", {{"regions", eff_rows},
                              {"mean_to_within_2pct_advised", eff_n ? adv_sum / double(eff_n) : 0.0},
                              {"mean_to_within_2pct_random", eff_n ? rnd_sum / double(eff_n) : 0.0}}},
              {"notes", front.notes},
              {"elapsed_s", result.elapsed_s}};
  if (!target_note.empty()) rep["notes"].push_back(target_note);
  Json settings_list = Json::array();
  for (const StepSetting& st : settings) {
    rep[st.report_key] = settings_report[st.report_key];
    settings_list.push_back({{"report_key", st.report_key}, {"label", st.label}, {"ms_key", st.ms_key}});
  }
  rep["step_settings"] = settings_list;
  result.report_md = report_markdown(rep);
  result.report = std::move(rep);
  result.plan = std::move(plan);
  return result;
}

void write_plan_folder(const fs::path& out, const CompileResult& r) {
  StagingDir dir(out, plan_folder_kind());
  for (const auto& k : r.kernels) {
    fs::create_directories((dir.path() / k.kernel.file).parent_path());
    write_file_atomic(dir.path() / k.kernel.file, k.bytes);
  }
  write_file_atomic(dir.path() / "plan.json", r.plan.to_json().dump(2) + "\n");
  write_file_atomic(dir.path() / "report.json", r.report.dump(2) + "\n");
  write_file_atomic(dir.path() / "report.md", r.report_md);
  dir.commit();
}

}  // namespace ac
