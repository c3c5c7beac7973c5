// Staged validation and measured selection for one region class (search.h).
#include "agentcompile/compiler/search.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "agentcompile/core/error.h"
#include "agentcompile/core/rng.h"

namespace ac {

namespace {

std::string fmt_us(double us) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f us", us);
  return b;
}

CandidateOutcome outcome_of(const TuningRecord& r, const Candidate& c, int order) {
  CandidateOutcome o;
  o.candidate = c;
  o.order = order;
  o.stage = r.stage;
  o.status = r.status;
  o.reason = r.reason;
  o.median_us = r.median_us;
  o.samples_us = r.samples_us;
  o.rel_err = r.rel_err;
  o.from_db = true;
  o.measured_by = r.model;
  o.retimed_us = r.retimed_us;
  return o;
}

// Runs the stages; never throws for a candidate's own failure (an Error from the evaluator is
// that candidate's failure at the current stage).
CandidateOutcome evaluate(const RegionWork& w, Evaluator& ev, const Candidate& c, int order, const SearchOptions& o) {
  CandidateOutcome out;
  out.candidate = c;
  out.order = order;
  out.status = "failed";
  auto stage = [&](const char* name, const std::function<std::string()>& fn) {
    out.stage = name;
    try {
      out.reason = fn();
    } catch (const Error& e) {
      out.reason = e.what();
    }
    return out.reason.empty();
  };
  const FamilySpace* f = w.space.find(c.family);
  if (!stage("constraints", [&] {
        if (!f) return std::string("family not in the region's space");
        return f->constraint ? f->constraint(c.params) : std::string();
      }))
    return out;
  if (!stage("compile", [&] { return ev.compile(c); })) return out;
  if (!stage("correctness", [&] {
        CorrectnessResult r = ev.check(c);
        out.rel_err = r.rel_err;
        return r.ok ? std::string() : (r.reason.empty() ? std::string("incorrect") : r.reason);
      }))
    return out;
  if (!stage("timing", [&] {
        TimingResult t = ev.time(c, o.warmup, o.repeats);
        out.samples_us = t.samples_us;
        out.median_us = t.median_us;
        if (t.ok && !(t.median_us > 0)) return std::string("non-positive time");
        return t.ok ? std::string() : (t.reason.empty() ? std::string("timing failed") : t.reason);
      }))
    return out;
  out.status = "ok";
  return out;
}

TuningRecord record_of(const RegionSearch& s, const CandidateOutcome& c, const std::string& model) {
  TuningRecord r;
  r.signature = s.work->summary.signature;
  r.bucket = s.bucket;
  r.backend = s.work->space.backend;
  r.family = c.candidate.family;
  r.params = c.candidate.params;
  r.name = c.candidate.name();
  r.stage = c.stage;
  r.status = c.status;
  r.reason = c.reason;
  r.median_us = c.median_us;
  r.rel_err = c.rel_err;
  r.samples_us = c.samples_us;
  r.model = model;
  return r;
}

// Evaluated candidates (in order) until one is within 2% of the best; expected over random orders.
void efficiency(RegionSearch& s) {
  std::vector<double> t;
  for (const auto& c : s.outcomes)
    if (c.status != "skipped") t.push_back(c.status == "ok" ? c.median_us : INFINITY);
  double best = INFINITY;
  for (double v : t) best = std::min(best, v);
  if (!std::isfinite(best)) return;
  auto first_good = [&](const std::vector<double>& v) {
    for (size_t i = 0; i < v.size(); ++i)
      if (v[i] <= best * 1.02) return int(i) + 1;
    return int(v.size());
  };
  s.to_within_2pct_advised = first_good(t);
  Rng rng(12345);
  constexpr int kTrials = 500;
  double sum = 0;
  std::vector<double> p = t;
  for (int k = 0; k < kTrials; ++k) {
    for (size_t i = p.size(); i > 1; --i) std::swap(p[i - 1], p[size_t(rng.next_u64() % i)]);
    sum += first_good(p);
  }
  s.to_within_2pct_random = sum / kTrials;
}

}  // namespace

Json CandidateOutcome::to_json() const {
  Json j = {{"candidate", candidate.name()}, {"family", candidate.family}, {"params", candidate.params},
            {"order", order}, {"stage", stage}, {"status", status}, {"reason", reason},
            {"rel_err", rel_err}, {"from_db", from_db}};
  j["median_us"] = status == "ok" ? Json(median_us) : Json(nullptr);
  j["samples_us"] = samples_us;
  if (from_db) j["measured_by"] = measured_by;
  if (retimed_us > 0) j["retimed_us"] = retimed_us;
  return j;
}

std::vector<const CandidateOutcome*> RegionSearch::ranked() const {
  std::vector<const CandidateOutcome*> v;
  for (const auto& c : outcomes)
    if (c.status == "ok") v.push_back(&c);
  std::stable_sort(v.begin(), v.end(), [](auto* a, auto* b) { return a->median_us < b->median_us; });
  return v;
}

Json RegionSearch::to_json() const {
  Json cands = Json::array();
  for (const auto& c : outcomes) cands.push_back(c.to_json());
  return {{"bucket", bucket},
          {"candidates", cands},
          {"not_explored", not_explored},
          {"winner", winner.name()},
          {"winner_us", winner_us},
          {"fallback_us", fallback_us},
          {"speedup", speedup()},
          {"noise", noise},
          {"decision", decision},
          {"notes", notes},
          {"measured", measured},
          {"reused_from_db", reused},
          {"failed", failed},
          {"timed_flops", timed_flops > 0 ? Json(timed_flops) : Json(nullptr)},
          {"efficiency", {{"to_within_2pct_advised", to_within_2pct_advised}, {"to_within_2pct_random", to_within_2pct_random}}}};
}

int candidate_complexity(const Candidate& c, const CandidateSpace& space) {
  const FamilySpace* f = space.find(c.family);
  if (!f || f->route == FamilyRoute::Fallback) return 0;
  int score = 1000;
  for (const auto& p : f->params) {
    auto it = c.params.find(p.name);
    if (it == c.params.end()) continue;
    const auto at = std::find(p.values.begin(), p.values.end(), it->second);
    const int idx = int(at - p.values.begin());
    score += (p.name == "THREADS" ? 100 : 1) * idx;  // extra threads cost the most simplicity
  }
  return score;
}

RegionSearch search_region(const RegionWork& w, Evaluator& ev, TuningDb* db, const Environment& env,
                           const SearchOptions& o, Clock::time_point deadline,
                           const std::function<void(const CandidateOutcome&)>& on_candidate) {
  RegionSearch s;
  s.work = &w;
  const ShapePoint& pt = w.summary.point;
  s.bucket = shape_bucket(w.summary.phase == Phase::Decode, pt.batch, pt.tokens, pt.context);
  bool begun = false;
  // The DB's records first: what it lacks (and passes its constraints) goes to prepare at once.
  std::vector<std::optional<TuningRecord>> recs(w.ordered.size());
  std::vector<Candidate> to_build;
  for (size_t i = 0; i < w.ordered.size(); ++i) {
    const Candidate& c = w.ordered[i];
    if (db) recs[i] = db->find(env, w.summary.signature, s.bucket, c.name());
    // A row under this name whose family or parameters are not this candidate's was not written
    // for it: measured again (and replaced), never trusted.
    if (recs[i] && (recs[i]->family != c.family || recs[i]->params != c.params || recs[i]->backend != w.space.backend))
      recs[i].reset();
    if (recs[i]) continue;
    const FamilySpace* f = w.space.find(c.family);
    try {
      if (f && (!f->constraint || f->constraint(c.params).empty())) to_build.push_back(c);
    } catch (const Error&) {
      // the constraints stage records it
    }
  }
  if (const auto now = Clock::now(); !to_build.empty() && now < deadline) {
    ev.begin(w);
    begun = true;
    // At most half of what is left: the other half measures what was built.
    try {
      ev.prepare(to_build, now + (deadline - now) / 2);
    } catch (const Error&) {
      // No verdict on any candidate: compile() builds each one and records its failure.
    }
  }
  for (size_t i = 0; i < w.ordered.size(); ++i) {
    const Candidate& c = w.ordered[i];
    const bool is_fallback = i == 0;  // ordered_candidates puts the fallback first
    if (!is_fallback && Clock::now() >= deadline) {
      s.not_explored = w.ordered.size() - i;
      break;
    }
    CandidateOutcome out;
    const std::optional<TuningRecord>& rec = recs[i];
    if (rec) {
      out = outcome_of(*rec, c, int(i));
      ++s.reused;
    } else {
      if (!begun) {
        ev.begin(w);
        begun = true;
      }
      out = evaluate(w, ev, c, int(i), o);
      ++s.measured;
      if (db) db->put(env, record_of(s, out, o.model_name));
    }
    if (out.status != "ok") ++s.failed;
    s.outcomes.push_back(out);
    if (on_candidate) on_candidate(s.outcomes.back());
  }
  if (s.outcomes.empty() || s.outcomes.front().status != "ok")
    throw_internal("search " + w.summary.signature,
                   "the fallback route failed: " + (s.outcomes.empty() ? std::string("not run") : s.outcomes.front().reason));
  s.fallback_us = s.outcomes.front().median_us;

  auto ranked = s.ranked();
  // Noise: time the best two again (fresh samples, same conditions), or reuse the re-timing the
  // DB holds for both, so a warm compile decides exactly as the one that measured.
  const size_t check = std::min<size_t>(2, ranked.size());
  if (check > 1) {
    for (size_t k = 0; k < check; ++k) {
      const CandidateOutcome& c = *ranked[k];
      double again = c.retimed_us;
      if (!(again > 0)) {
        if (!begun) {
          ev.begin(w);
          begun = true;
        }
        TimingResult t = ev.time(c.candidate, 1, o.repeats);
        if (!t.ok) continue;
        again = t.median_us;
        if (db) db->set_retimed(env, w.summary.signature, s.bucket, c.candidate.name(), t.samples_us, again);
        s.notes.push_back("re-timed " + c.candidate.name() + ": " + fmt_us(again));
      }
      s.noise = std::max(s.noise, std::abs(again - c.median_us) / c.median_us);
    }
  }
  const CandidateOutcome* best = ranked.front();
  if (check > 1) {
    const CandidateOutcome* second = ranked[1];
    // Within noise: the simpler of the two.
    if (second->median_us <= best->median_us * (1 + s.noise) &&
        candidate_complexity(second->candidate, w.space) < candidate_complexity(best->candidate, w.space)) {
      s.notes.push_back("tie within noise (" + fmt_us(best->median_us) + " vs " + fmt_us(second->median_us) +
                        "): the simpler " + second->candidate.name() + " is kept");
      best = second;
    }
  }
  const double margin = std::max(o.margin, s.noise);
  const CandidateOutcome& fb = s.outcomes.front();
  if (best != &fb && s.fallback_us < best->median_us * (1 + margin)) {
    char b[256];
    std::snprintf(b, sizeof b, "fallback: unprofitable (best %s at %.2f us is %.1f%% faster than the fallback at %.2f us; margin %.1f%%)",
                  best->candidate.name().c_str(), best->median_us, 100 * (s.fallback_us / best->median_us - 1),
                  s.fallback_us, 100 * margin);
    s.decision = b;
    best = &fb;
  } else if (best == &fb) {
    s.decision = ranked.size() > 1 ? "fallback: fastest measured" : "fallback: no other correct candidate";
  } else {
    s.decision = "specialised";
  }
  s.winner = best->candidate;
  s.winner_us = best->median_us;
  efficiency(s);
  return s;
}

std::vector<MeasuredCandidate> measured_history(const TuningDb& db, const Environment& env, const std::string& signature,
                                                const std::string& backend) {
  std::vector<MeasuredCandidate> out;
  const auto recs = db.for_signature(env, signature, backend);
  std::map<std::string, double> fallback_us;  // per bucket
  for (const auto& r : recs)
    if (r.family == backend + ":fallback" && r.status == "ok") fallback_us[r.bucket] = r.median_us;
  for (const auto& r : recs) {
    MeasuredCandidate m;
    m.family = r.family;
    m.params = r.params;
    m.status = r.status == "ok" ? "ok" : r.stage;
    m.time_us = r.median_us;
    auto fb = fallback_us.find(r.bucket);
    m.speedup = r.status == "ok" && fb != fallback_us.end() && r.median_us > 0 ? fb->second / r.median_us : 0;
    m.detail = r.reason.substr(0, 200);
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace ac
