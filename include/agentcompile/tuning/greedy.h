#pragma once
// Greedy decoding of one sequence on an executor: the loop the runtime serves a temperature-0
// request with (generate) and the compiler times a plan with, one loop so that a plan is timed
// exactly as it runs. The host stays one step behind the device where the executor can chain
// steps (decode_ahead / next_greedy), and takes the backend's own argmax where it has one.
#include <cstdint>
#include <functional>
#include <vector>

#include "agentcompile/tuning/executor.h"

namespace ac {

struct GreedyRun {
  std::vector<int32_t> tokens;    // generated, the stop token included when one came
  bool stopped = false;           // ended on a token `is_stop` accepted
  double prefill_ms = 0;          // the prompt's step and its token (time to first token)
  std::vector<double> decode_ms;  // each later token
};

// Runs the prompt's tokens from position `from` (those before are in slot 0's KV cache already),
// then up to `max_tokens` tokens in all (>= 1). `is_stop` (may be empty) ends the run after a
// token; `on_token` (may be empty) sees each token as it comes. Internal when the logits hold NaN
// or Inf. The caller checks the context and the executor's limits.
GreedyRun greedy_generate(Executor& ex, const std::vector<int32_t>& prompt, int32_t from, int64_t max_tokens,
                          const std::function<bool(int32_t)>& is_stop, const std::function<void(int32_t)>& on_token);

}  // namespace ac
