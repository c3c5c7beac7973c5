#pragma once
// Decode-step tuning (CUDA fast path, latency objective). The region searches time each decode
// region's kernel alone (graphs of back-to-back launches); in a decode step the kernels overlap
// (programmatic dependent launch) and wait on each other, and the best point alone is not always
// the best there (bench/results/2026-11-30-gemv-points-w2/: each model had a point 1-2% faster end
// to end than the search's choice). So after the end-to-end check, each tuned route's few fastest
// points alone and its search's fallback (the engine's defaults) are timed in whole decode steps,
// one route at a time with the others at their current choice (coordinate descent; a second pass
// after a pass that kept a point, since the routes interact in the step).
// A point is kept when the step is faster by more than the margin; where two or more routes each
// had a point faster by less (and nothing kept), those points together are one more trial, kept
// by the same rule (session 25: Qwen3-1.7B's fresh compile rejected -0.37% and -0.44% on two
// routes). A route's best gain inside the margin (beyond a smaller one) is re-timed against its
// current choice in interleaved rounds first, and kept when it wins every round: whole-step
// timings of one plan spread about ±0.05% on the H200, the gains left are 0.1-0.3%. The tuned
// plan as a whole is kept only when an interleaved re-timing against the starting plan confirms it.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "agentcompile/compiler/search.h"
#include "agentcompile/plan/plan.h"

namespace ac {

struct StepTrial {
  std::string region;     // the route's region ("attn_in", ...), or "plan" for whole-plan timings
  // Candidate::name(), then " @carveout N" when the route has its own carveout (as in
  // StepTuning::final and changes); or "start" / "tuned" / "combined"
  std::string candidate;
  double ms = 0;          // decode time per token (0: the trial failed)
  bool kept = false;
  std::string error;      // why the trial failed
  int pass = 0;           // the pass of coordinate descent it ran in (from 0)
};

struct StepTuning {
  std::vector<StepTrial> trials;
  double start_ms = 0, tuned_ms = 0;  // medians of the confirming re-timing (0: none ran)
  bool changed = false;               // the plan returned differs from the one given
  std::vector<std::string> changes;   // "attn_in: <from> -> <to>"
  std::string note;                   // stopped early, reverted, ...
  std::vector<std::string> final;     // the returned plan's choice per route (Candidate::name())
  // The budget ran out before every planned trial was timed: a later compile with the same key
  // measures again rather than take this outcome from the tuning DB.
  bool cut = false;
  Json to_json() const;
  // A record written by to_json; nullopt when it does not parse.
  static std::optional<StepTuning> from_json(const Json& j);
};

struct StepTuneOptions {
  size_t top = 3;          // fastest points alone per route
  double margin = 0.005;   // relative: a point or the tuned plan must beat the incumbent by it
  int confirm_rounds = 2;  // interleaved re-timings of the start and the tuned plan
  bool combine = true;     // time the routes' gains inside the margin together (above)
  // A route's best gain inside the margin but beyond near_margin is timed again against the
  // route's current choice, near_rounds interleaved rounds (0: never), and kept when faster in
  // every round and by near_margin in the medians; so is the combination of the routes' gains
  // inside the margin (above) when it is faster by less than the margin.
  double near_margin = 0.001;
  int near_rounds = 3;
  int passes = 2;          // passes of coordinate descent at most (another only after one kept a point)
  // Shared-memory carveouts (percent) each route's points are also timed under as the route's own
  // (PlanRoute::smem_carveout; and with none), after every route's points under its current one
  // (then every route's current point, then its alternatives, under them): a point of another K
  // split may run well only under another carveout than the step's
  // (bench/results/2026-12-03-carveout-map/). Empty: routes keep the plan's.
  std::vector<int> carveouts;
  Clock::time_point deadline = Clock::time_point::max();  // no trial starts after it
};

// A route's choice as the tuning names it (StepTrial::candidate, StepTuning::final): its
// candidate's name, then " @carveout N" when the route has its own carveout.
std::string route_choice_name(const PlanRoute& r);

// Route r's alternatives: the `top` fastest correct candidates of its search (timed alone) other
// than the route's current choice, fastest first, then the search's fallback (unless current).
std::vector<Candidate> step_alternatives(const PlanRoute& r, const RegionSearch& s, size_t top);

// Points route r at candidate c of its search (family, route kind, parameters, and its time alone).
void set_route_choice(PlanRoute& r, const RegionSearch& s, const Candidate& c);

// The tuning DB key of a step tuning from `start`: everything its outcome depends on besides the
// environment (the DB's own key): the model, every route's choice, the timing's tokens and prompt,
// the options that decide.
std::string step_tuning_key(const Plan& start, const std::string& model_hash, int tokens, int64_t prompt_tokens,
                            const StepTuneOptions& o);

// Applies a recorded tuning's final choices to `plan` (each a candidate of its route's search);
// false, and `plan` untouched, when a choice is not among them or the routes do not match.
bool apply_recorded_step_tuning(Plan& plan, const StepTuning& rec, const std::vector<RegionSearch>& searches,
                                const std::vector<size_t>& search_of_route, const std::function<void(Plan&)>& refresh);

// A plan compiled before for the same model (compile --seed-plan), applied to this compile's plan:
// each tunable route pointed at the seed's choice for the same phase, region and signature when
// that choice is a correct candidate of the route's search (validated and timed in this compile);
// the seed's shared-memory carveout with it. taken / missing: "region: candidate" per route whose
// seed choice differed from the plan's and was applied / is not a correct candidate here (or the
// seed has no such route). changed: the result differs from `plan`.
struct SeededPlan {
  Plan plan;
  std::vector<std::string> taken, missing;
  bool changed = false;
};
SeededPlan seed_routes(const Plan& plan, const Plan& seed, const std::vector<RegionSearch>& searches,
                       const std::vector<size_t>& search_of_route, const std::function<bool(const PlanRoute&)>& tunable,
                       const std::function<void(Plan&)>& refresh);

// Tunes `plan` in place. search_of_route[k]: route k's search; tunable(route): whether it is tuned;
// refresh(plan): recomputes what derives from the routes (the CUDA plan's cuda_fast);
// time(plan): the plan's decode time per token (may throw ac::Error: the trial is recorded as
// failed and the point not kept).
StepTuning tune_decode_step(Plan& plan, const std::vector<RegionSearch>& searches,
                            const std::vector<size_t>& search_of_route,
                            const std::function<bool(const PlanRoute&)>& tunable,
                            const std::function<void(Plan&)>& refresh,
                            const std::function<double(const Plan&)>& time, const StepTuneOptions& o);

}  // namespace ac
