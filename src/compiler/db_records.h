#pragma once
// The JSON records of the tuning database that the compile reads back, and their checks: a record
// that does not read back whole is not used (the compile measures again), never trusted in part.
//
// The reference backend's side of the end-to-end stage (table reference_runs): the greedy tokens of the checked steps with their top-2 margins, which depend
// only on the model and the settings and are reused whenever they read back; and the reference's
// profile under the objective with the host's timing conditions around it, reused only when they
// match the conditions now (timing_noise.h).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agentcompile/compiler/timing_noise.h"
#include "agentcompile/core/json.h"

namespace ac {

// One checked step: the reference's greedy token, its runner-up and their logit margin.
struct Top2 {
  int32_t first = 0, second = 0;
  float margin = 0;
};

struct ReferenceProfile {
  double prefill_ms = 0, decode_ms = 0;  // latency objective
  double per_token_us = 0;               // throughput objective
  double cost_us = 0;                    // under the objective
  double profile_s = 0;                  // seconds the profile took (0: not recorded)
  std::optional<TimingNoise> noise;      // the host's conditions around it (records before it: none)
};

struct ReferenceRun {
  std::vector<Top2> top2;
  std::optional<ReferenceProfile> profile;
  Json to_json() const;
  // A record of `tokens` steps over a vocabulary of `vocab`: nullopt unless its tokens read back
  // (each step's tokens in [0, vocab), its margin finite and >= 0); its profile is nullopt
  // unless every figure is finite and >= 0 with a positive cost (a noise estimate that does not
  // read back is none).
  static std::optional<ReferenceRun> from_json(const std::string& text, int tokens, int64_t vocab);
};

// A whole-step alternative's decision (table step_tunings, CUDA decode-step stage): its JSON when
// "status" is a string and, where it was measured ("chain_ms"), "variant" is a string, "timings"
// a count and "chain_ms" and `ms_key` ("carveout_ms", ...) finite times >= 0; a setting it names
// ("smem_carveout" a percentage, "attn_o" 0 or 1) must be in range.
std::optional<Json> step_alternative_from_json(const std::string& text, const std::string& ms_key);

}  // namespace ac
