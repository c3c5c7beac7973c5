#pragma once
// Greedy generation over a batch of prompts (one cache slot per row; their lengths may differ, each
// row decodes at its own positions) with timings, and the teacher-forced pass the semantic check
// uses. Batch 1 goes through the engine's own generate(), the path `agentcompile generate` takes.
#include <cstdint>
#include <vector>

#include "agentcompile/bench/validator.h"
#include "agentcompile/model/hf_config.h"
#include "agentcompile/tuning/executor.h"

namespace ac::bench {

struct RunOut {
  std::vector<std::vector<int32_t>> tokens;  // per row
  double prefill_ms = 0.0;                   // all rows' prompts in one step, to the first tokens
  std::vector<double> step_ms;               // every decode step (all rows advance one token)
};

RunOut run_greedy(Executor& ex, const ModelConfig& cfg, const std::vector<std::vector<int32_t>>& prompts, int64_t gen);

// Our greedy choice at positions 0..n-1 after `prompt`, fed reference[0..i) through decode steps,
// for `batch` copies of the prompt at once (each row must choose the same).
std::vector<std::vector<int32_t>> teacher_forced_choices(Executor& ex, const std::vector<int32_t>& prompt,
                                                         const std::vector<int32_t>& reference, int n, int64_t batch);

// A reference made here: `ex`'s greedy tokens after `prompt` for n positions, with the runner-up
// and the top-1 minus top-2 logit margin at each (from the logits of row 0). bench e2e runs it on
// the CPU reference backend with the weights the measured executor runs (e.g. FP8 quantized at
// load, where a peer's reference of the 16-bit model does not apply).
Reference greedy_reference(Executor& ex, const std::vector<int32_t>& prompt, int n, const std::string& source);

}  // namespace ac::bench
