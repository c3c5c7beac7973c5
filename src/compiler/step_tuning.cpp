#include "compiler/step_tuning.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

#include "agentcompile/core/error.h"
#include "agentcompile/core/stats.h"

namespace ac {

namespace {

Candidate choice_of(const PlanRoute& r) { return Candidate{r.family, r.params}; }

constexpr const char* kCarveoutTag = " @carveout ";

// A route's choice as the tuning records it: the candidate's name, then its own carveout if any.
std::string choice_name(const Candidate& c, std::optional<int> carveout) {
  return c.name() + (carveout ? kCarveoutTag + std::to_string(*carveout) : std::string());
}

// choice_name's parts: the candidate's name and the carveout (nullopt: none); false when the tag
// is followed by no percentage.
bool split_choice_name(const std::string& s, std::string& name, std::optional<int>& carveout) {
  const size_t at = s.rfind(kCarveoutTag);
  name = s.substr(0, at);
  carveout.reset();
  if (at == std::string::npos) return true;
  const std::string v = s.substr(at + std::string(kCarveoutTag).size());
  if (v.empty() || v.size() > 3 || v.find_first_not_of("0123456789") != std::string::npos) return false;
  carveout = std::stoi(v);
  return *carveout <= 100;
}

// Points `plan`'s route k at candidate c of its search, with `carveout` as the route's own.
void point_route(Plan& plan, size_t k, const RegionSearch& s, const Candidate& c, std::optional<int> carveout) {
  set_route_choice(plan.routes[k], s, c);
  plan.routes[k].smem_carveout = carveout;
}

// The search's correct outcome of the candidate named `name`, whose family is in the region's
// space (a choice a recorded tuning or a seed plan may point the route at); null when none.
const CandidateOutcome* correct_candidate(const RegionSearch& s, const std::string& name) {
  const CandidateOutcome* found = nullptr;
  for (const CandidateOutcome& c : s.outcomes)
    if (c.status == "ok" && c.candidate.name() == name) found = &c;
  return found && s.work && s.work->space.find(found->candidate.family) ? found : nullptr;
}

}  // namespace

std::string route_choice_name(const PlanRoute& r) { return choice_name(choice_of(r), r.smem_carveout); }

Json StepTuning::to_json() const {
  Json t = Json::array();
  for (const StepTrial& x : trials) {
    Json j = {{"region", x.region}, {"candidate", x.candidate}, {"decode_ms", x.ms}, {"kept", x.kept}};
    if (!x.error.empty()) j["error"] = x.error;
    if (x.pass > 0) j["pass"] = x.pass;
    t.push_back(j);
  }
  return {{"trials", t},        {"start_ms", start_ms}, {"tuned_ms", tuned_ms}, {"changed", changed},
          {"changes", changes}, {"note", note},         {"final", final},         {"cut", cut}};
}

std::optional<StepTuning> StepTuning::from_json(const Json& j) {
  try {
    StepTuning t;
    for (const Json& x : j.at("trials")) {
      StepTrial s{x.at("region").get<std::string>(), x.at("candidate").get<std::string>(), x.at("decode_ms").get<double>(),
                  x.at("kept").get<bool>(), x.value("error", std::string()), x.value("pass", 0)};
      t.trials.push_back(s);
    }
    t.start_ms = j.at("start_ms").get<double>();
    t.tuned_ms = j.at("tuned_ms").get<double>();
    t.changed = j.at("changed").get<bool>();
    t.changes = j.at("changes").get<std::vector<std::string>>();
    t.note = j.at("note").get<std::string>();
    t.final = j.at("final").get<std::vector<std::string>>();
    // Records written before "cut" existed say so in their note only.
    t.cut = j.value("cut", t.note.rfind("the budget ran out", 0) == 0);
    return t;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::string step_tuning_key(const Plan& start, const std::string& model_hash, int tokens, int64_t prompt_tokens,
                            const StepTuneOptions& o) {
  char b[160];
  std::snprintf(b, sizeof b, "|tokens %d|prompt %lld|top %zu|margin %g|confirm %d|combine %d|passes %d|near %g x%d", tokens,
                (long long)prompt_tokens, o.top, o.margin, o.confirm_rounds, int(o.combine), o.passes, o.near_margin,
                o.near_rounds);
  std::string k = "step-tuning/1|" + model_hash + b;
  for (const PlanRoute& r : start.routes) k += "|" + r.phase + " " + r.region + " " + route_choice_name(r);
  // The points' times in the chain depend on the shared-memory carveout the step runs under.
  if (auto c = start.cuda_fast ? start.cuda_fast->get("smem_carveout") : std::nullopt) k += "|carveout " + std::to_string(*c);
  if (!o.carveouts.empty()) {
    k += "|route carveouts";
    for (int v : o.carveouts) k += " " + std::to_string(v);
  }
  return k;
}

bool apply_recorded_step_tuning(Plan& plan, const StepTuning& rec, const std::vector<RegionSearch>& searches,
                                const std::vector<size_t>& search_of_route, const std::function<void(Plan&)>& refresh) {
  if (rec.final.size() != plan.routes.size() || search_of_route.size() < plan.routes.size()) return false;
  Plan out = plan;
  for (size_t k = 0; k < out.routes.size(); ++k) {
    if (route_choice_name(out.routes[k]) == rec.final[k]) continue;
    std::string name;
    std::optional<int> carveout;
    if (!split_choice_name(rec.final[k], name, carveout)) return false;
    out.routes[k].smem_carveout = carveout;
    if (choice_of(out.routes[k]).name() == name) continue;
    const RegionSearch& s = searches.at(search_of_route[k]);
    const CandidateOutcome* found = correct_candidate(s, name);
    if (!found) return false;
    set_route_choice(out.routes[k], s, found->candidate);
  }
  refresh(out);
  plan = std::move(out);
  return true;
}

std::vector<Candidate> step_alternatives(const PlanRoute& r, const RegionSearch& s, size_t top) {
  const std::string current = choice_of(r).name();
  std::vector<Candidate> out;
  auto add = [&](const Candidate& c) {
    if (c.name() == current) return false;
    for (const Candidate& o : out)
      if (o.name() == c.name()) return false;
    out.push_back(c);
    return true;
  };
  size_t taken = 0;
  for (const CandidateOutcome* c : s.ranked()) {
    if (taken == top) break;
    const FamilySpace* f = s.work ? s.work->space.find(c->candidate.family) : nullptr;
    if (f && f->route == FamilyRoute::Fallback) continue;  // added below, whatever its rank
    taken += add(c->candidate) ? 1 : 0;
  }
  for (const CandidateOutcome& c : s.outcomes) {
    const FamilySpace* f = s.work ? s.work->space.find(c.candidate.family) : nullptr;
    if (c.status == "ok" && f && f->route == FamilyRoute::Fallback) add(c.candidate);
  }
  return out;
}

void set_route_choice(PlanRoute& r, const RegionSearch& s, const Candidate& c) {
  const FamilySpace* f = s.work ? s.work->space.find(c.family) : nullptr;
  if (!f) throw_internal("step tuning", c.family + " is not a family of the region's search");
  r.family = c.family;
  r.params = c.params;
  r.route = std::string(family_route_name(f->route));
  for (const CandidateOutcome& o : s.outcomes)  // its time alone, as the search measured it
    if (o.status == "ok" && o.candidate.name() == c.name()) r.time_us = o.median_us;
}

SeededPlan seed_routes(const Plan& plan, const Plan& seed, const std::vector<RegionSearch>& searches,
                       const std::vector<size_t>& search_of_route, const std::function<bool(const PlanRoute&)>& tunable,
                       const std::function<void(Plan&)>& refresh) {
  SeededPlan out;
  out.plan = plan;
  for (size_t k = 0; k < plan.routes.size() && k < search_of_route.size(); ++k) {
    const PlanRoute& r = plan.routes[k];
    if (!tunable(r)) continue;
    const PlanRoute* from = nullptr;
    for (const PlanRoute& x : seed.routes)
      if (x.phase == r.phase && x.region == r.region && x.signature == r.signature) from = &x;
    if (!from) {
      out.missing.push_back(r.region + ": (none in the seed)");
      continue;
    }
    const Candidate want = choice_of(*from);
    if (from->smem_carveout != r.smem_carveout) {  // the seed route's own carveout with its point
      out.plan.routes[k].smem_carveout = from->smem_carveout;
      out.taken.push_back(r.region + ": carveout " + (from->smem_carveout ? std::to_string(*from->smem_carveout) : "none"));
    }
    if (want.name() == choice_of(r).name()) continue;
    const RegionSearch& s = searches.at(search_of_route[k]);
    if (!correct_candidate(s, want.name())) {
      out.missing.push_back(r.region + ": " + want.name());
      continue;
    }
    set_route_choice(out.plan.routes[k], s, want);
    out.taken.push_back(r.region + ": " + want.name());
  }
  refresh(out.plan);
  if (out.plan.cuda_fast && seed.cuda_fast && seed.cuda_fast->get("smem_carveout") != out.plan.cuda_fast->get("smem_carveout")) {
    const std::optional<int> c = seed.cuda_fast->get("smem_carveout");
    out.plan.cuda_fast->set("smem_carveout", c);
    out.taken.push_back("smem_carveout: " + (c ? std::to_string(*c) : std::string("none")));
  }
  out.changed = !out.taken.empty();
  if (!out.changed) out.plan = plan;
  return out;
}

StepTuning tune_decode_step(Plan& plan, const std::vector<RegionSearch>& searches,
                            const std::vector<size_t>& search_of_route,
                            const std::function<bool(const PlanRoute&)>& tunable,
                            const std::function<void(Plan&)>& refresh,
                            const std::function<double(const Plan&)>& time, const StepTuneOptions& o) {
  StepTuning t;
  const Plan start = plan;
  const Clock::time_point began = Clock::now();
  auto timed = [&](const Plan& p, StepTrial& trial) {
    try {
      trial.ms = time(p);
    } catch (const Error& e) {
      trial.ms = 0;
      trial.error = e.what();
    }
    return trial.ms;
  };
  StepTrial first{"plan", "start", 0, true, ""};
  double best = timed(plan, first);
  t.trials.push_back(first);
  auto finish = [&]() -> StepTuning& {
    for (const PlanRoute& r : plan.routes) t.final.push_back(route_choice_name(r));
    return t;
  };
  if (best <= 0) {
    t.note = "the starting plan could not be timed: " + first.error;
    return finish();
  }
  bool stopped = false;
  // Per route where nothing was kept: its fastest point that beat the incumbent by less than the
  // margin (route index, point, ms).
  struct Near {
    size_t route;
    Candidate c;
    std::optional<int> carveout;
    double ms;
  };
  // `cand` against `plan` in o.near_rounds interleaved rounds (trials of `region`, the candidate
  // named `name`, the incumbent "current"): whether it was faster in every round and by
  // near_margin in the medians; its median in `ms`.
  auto rounds_agree = [&](const Plan& cand, const std::string& region, const std::string& name, int pass, double& ms) {
    std::vector<double> a, b;
    std::vector<size_t> mine;
    bool always = true;
    for (int r = 0; r < o.near_rounds; ++r) {
      StepTrial ta{region, "current", 0, false, "", pass}, tb{region, name, 0, false, "", pass};
      a.push_back(timed(plan, ta));
      b.push_back(timed(cand, tb));
      always = always && ta.ms > 0 && tb.ms > 0 && tb.ms < ta.ms;
      t.trials.push_back(ta);
      mine.push_back(t.trials.size());
      t.trials.push_back(tb);
    }
    const bool won = always && median(b) < median(a) * (1 - o.near_margin);
    if (won)
      for (size_t i : mine) t.trials[i].kept = true;
    ms = median(b);
    return won;
  };
  // Route k's trials in tier `tier` of a pass: 0, its alternatives under its current carveout;
  // with o.carveouts, 1, its current point under every other carveout and none; 2, each
  // alternative under every carveout and none but the one tier 0 timed them under (`timed`: a
  // point kept in tier 1 moves the route's carveout, and its alternatives under the new one are
  // still to be timed). A pass runs tier 0 over every route before tier 1, so a compile whose
  // budget runs out early has still timed every route's points (about 4 trials a route) before
  // the carveouts' 15 (bench/results/2026-12-03-region-carveout/: ~250 trials in all).
  struct Alt {
    Candidate c;
    std::optional<int> carveout;
  };
  constexpr int kTiers = 3;
  auto trials_of = [&](size_t k, const RegionSearch& s, int tier, std::optional<int> timed) {
    const PlanRoute& r = plan.routes[k];
    const std::vector<Candidate> points = step_alternatives(r, s, o.top);
    std::vector<Alt> out;
    if (tier == 0) {
      for (const Candidate& c : points) out.push_back({c, r.smem_carveout});
      return out;
    }
    if (o.carveouts.empty()) return out;
    std::vector<std::optional<int>> values = {std::nullopt};
    for (int v : o.carveouts) values.push_back(v);
    const std::vector<Candidate> current = {choice_of(r)};
    for (const Candidate& c : tier == 1 ? current : points)
      for (const std::optional<int>& v : values)
        if (v != (tier == 1 ? r.smem_carveout : timed)) out.push_back({c, v});
    return out;
  };
  auto tunable_route = [&](size_t k) { return k < search_of_route.size() && tunable(plan.routes[k]); };
  // Per route, the carveout it had when the pass began: the one its tier-0 trials run under (only
  // tiers 1 and 2 move a route's carveout, and they start after every route's tier 0).
  std::vector<std::optional<int>> pass_carveout;
  auto timed_under = [&](size_t k) { return pass_carveout.at(k); };
  // Trials the pass still had planned from route k's segment of `tier` on, `done` of that segment
  // run (counted on the plan as it is now; for the budget note).
  auto planned_left = [&](int tier, size_t k, size_t done) {
    size_t left = 0;
    for (int t2 = tier; t2 < kTiers; ++t2)
      for (size_t j = t2 == tier ? k : 0; j < plan.routes.size(); ++j)
        if (tunable_route(j)) left += trials_of(j, searches.at(search_of_route[j]), t2, timed_under(j)).size();
    return left - std::min(left, done);
  };
  auto stop_at = [&](const std::string& where) {
    t.note = "the budget ran out after " + std::to_string(t.trials.size() - 1) + " trials" + where;
    t.cut = stopped = true;
  };
  std::vector<Near> near;
  // One pass of coordinate descent: each tier's list of every tunable route in turn, the others at
  // their current choice; whether it kept a point. `near` gets the pass's gains inside the margin
  // (per route, the fastest of a segment that kept nothing, dropped when a later one keeps).
  auto descend = [&](int pass) {
    near.clear();
    pass_carveout.clear();
    for (const PlanRoute& r : plan.routes) pass_carveout.push_back(r.smem_carveout);
    std::map<size_t, Near> pass_near;
    bool pass_kept = false;
    for (int tier = 0; tier < kTiers && !stopped; ++tier)
      for (size_t k = 0; k < plan.routes.size() && !stopped; ++k) {
        if (!tunable_route(k)) continue;
        const RegionSearch& s = searches.at(search_of_route[k]);
        std::optional<Near> route_near;
        bool route_kept = false;
        size_t done = 0;
        for (const Alt& a : trials_of(k, s, tier, timed_under(k))) {
          if (Clock::now() >= o.deadline) {
            // What the rest would take at this tuning's pace so far (whole seconds, rounded up).
            const size_t left = planned_left(tier, k, done);
            const double per_trial = std::chrono::duration<double>(Clock::now() - began).count() / double(t.trials.size());
            stop_at(", " + std::to_string(left) + " more planned in pass " + std::to_string(pass + 1) + " (a budget about " +
                    std::to_string(long(std::ceil(per_trial * double(left)))) + " s larger runs them)");
            break;
          }
          ++done;
          // A point kept earlier in this route's list makes the rest relative to it: skip its
          // own choice should the list name it again.
          if (choice_name(a.c, a.carveout) == route_choice_name(plan.routes[k])) continue;
          Plan trial_plan = plan;
          point_route(trial_plan, k, s, a.c, a.carveout);
          refresh(trial_plan);
          StepTrial trial{plan.routes[k].region, choice_name(a.c, a.carveout), 0, false, "", pass};
          const double ms = timed(trial_plan, trial);
          trial.kept = ms > 0 && ms < best * (1 - o.margin);
          if (trial.kept) {
            t.changes.push_back(plan.routes[k].region + ": " + route_choice_name(plan.routes[k]) + " -> " +
                                trial.candidate);
            plan = std::move(trial_plan);
            best = ms;
            route_kept = pass_kept = true;
          } else if (ms > 0 && ms < best && (!route_near || ms < route_near->ms)) {
            route_near = Near{k, a.c, a.carveout, ms};
          }
          t.trials.push_back(trial);
        }
        // The segment's best gain inside the margin, beyond near_margin: re-timed against the
        // route's current choice in interleaved rounds; kept when faster in every round and by
        // near_margin in the medians (a single timing cannot tell gains of 0.1-0.3% from noise;
        // a sign test over the rounds and the medians can).
        if (route_near && !route_kept && o.near_rounds > 0 && route_near->ms < best * (1 - o.near_margin) && !stopped) {
          if (Clock::now() >= o.deadline) {
            stop_at(" (a gain inside the margin was not re-timed)");
          } else {
            Plan cand = plan;
            point_route(cand, k, s, route_near->c, route_near->carveout);
            refresh(cand);
            const std::string name = choice_name(route_near->c, route_near->carveout);
            double ms = 0;
            if (rounds_agree(cand, plan.routes[k].region, name, pass, ms)) {
              t.changes.push_back(plan.routes[k].region + ": " + route_choice_name(plan.routes[k]) + " -> " + name);
              plan = std::move(cand);
              best = ms;
              route_kept = pass_kept = true;
            }
          }
        }
        if (route_kept) {
          pass_near.erase(k);
        } else if (route_near) {
          auto it = pass_near.find(k);
          if (it == pass_near.end() || route_near->ms < it->second.ms) pass_near.insert_or_assign(k, *route_near);
        }
      }
    for (const auto& [k, n] : pass_near) near.push_back(n);
    return pass_kept;
  };
  // Another pass only after one kept a point: the routes interact in the step (the attention,
  // tuned last, shares the SMs with the output projection before it), so the points kept move
  // what the other routes' alternatives give. The near gains combined below are the last pass's.
  for (int pass = 0; pass < std::max(1, o.passes) && !stopped; ++pass)
    if (!descend(pass)) break;
  // Gains inside the margin on two or more routes may add up beyond it: all of them at once are
  // timed as one more trial and kept like any point (then confirmed with the rest). One such gain
  // alone was already timed.
  if (o.combine && near.size() >= 2 && !stopped && Clock::now() >= o.deadline) stop_at(" (the gains inside the margin were not combined)");
  if (o.combine && near.size() >= 2 && !stopped) {
    Plan comb = plan;
    for (const Near& n : near) point_route(comb, n.route, searches.at(search_of_route[n.route]), n.c, n.carveout);
    refresh(comb);
    StepTrial trial{"plan", "combined", 0, false, ""};
    double ms = timed(comb, trial);
    trial.kept = ms > 0 && ms < best * (1 - o.margin);
    t.trials.push_back(trial);
    const size_t at = t.trials.size() - 1;
    // Inside the margin but beyond near_margin: the rounds decide, as for one route's gain.
    if (!trial.kept && o.near_rounds > 0 && ms > 0 && ms < best * (1 - o.near_margin)) {
      if (Clock::now() >= o.deadline)
        stop_at(" (the combination inside the margin was not re-timed)");
      else
        t.trials[at].kept = trial.kept = rounds_agree(comb, "plan", "combined", 0, ms);
    }
    if (trial.kept) {
      for (const Near& n : near)
        t.changes.push_back(plan.routes[n.route].region + ": " + route_choice_name(plan.routes[n.route]) + " -> " +
                            choice_name(n.c, n.carveout));
      plan = std::move(comb);
      best = ms;
    }
  }
  if (t.changes.empty()) return finish();
  // Confirm: the start and the tuned plan timed in turn; the tuned one must still win by the margin.
  std::vector<double> a, b;
  for (int r = 0; r < std::max(1, o.confirm_rounds); ++r) {
    StepTrial sa{"plan", "start", 0, false, ""}, sb{"plan", "tuned", 0, false, ""};
    a.push_back(timed(start, sa));
    b.push_back(timed(plan, sb));
    t.trials.push_back(sa);
    t.trials.push_back(sb);
  }
  t.start_ms = median(a);
  t.tuned_ms = median(b);
  const bool failed = std::find(b.begin(), b.end(), 0.0) != b.end() || std::find(a.begin(), a.end(), 0.0) != a.end();
  // Gains kept by the re-timed rounds may add up to less than the margin: then the smaller one.
  const double need = o.near_rounds > 0 ? std::min(o.margin, o.near_margin) : o.margin;
  if (failed || !(t.tuned_ms < t.start_ms * (1 - need))) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "reverted: the tuned plan re-timed at %.4f ms/token against %.4f for the start", t.tuned_ms,
                  t.start_ms);
    t.note = (t.note.empty() ? std::string() : t.note + "; ") +
             (failed ? std::string("reverted: a confirming run failed") : std::string(buf));
    plan = start;
    return finish();
  }
  t.changed = true;
  for (StepTrial& x : t.trials)
    if (x.region == "plan" && x.candidate == "tuned") x.kept = true;
  return finish();
}

}  // namespace ac
