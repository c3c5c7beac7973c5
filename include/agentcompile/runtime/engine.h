#pragma once
// The generation loop: prefill the prompt, then decode one token at a time until a stop token
// or the token limit, with real timings. Also teacher-forced logits for checking against
// references.
#include <functional>
#include <string>
#include <vector>

#include "agentcompile/model/hf_config.h"
#include "agentcompile/tuning/executor.h"
#include "agentcompile/runtime/sampler.h"

namespace ac {

struct GenerateOptions {
  int64_t max_tokens = 128;
  SamplingParams sampling;
  bool ignore_eos = false;
  std::vector<int64_t> stop_ids;  // usually the config's eos ids
  // Positions [0, cached_prefix) of the prompt are already in the executor's cache of slot 0 (an
  // earlier turn of the same conversation wrote them): only the rest is prefilled. At most
  // prompt.size() - 1, since the last prompt token must run to give the first logits. Whatever
  // the cache holds beyond it is overwritten.
  int64_t cached_prefix = 0;
};

struct GenerateResult {
  std::vector<int32_t> tokens;  // generated, including the stop token if one was produced
  std::string finish_reason;    // "stop" or "length"
  double prefill_ms = 0.0;      // time to first token
  double decode_ms_per_token = 0.0;  // median over decode steps (0 when none ran)
  std::vector<double> decode_ms;     // every decode step
};

// Checks that prompt + max_tokens fits the model's context and the executor; BadInput otherwise.
void check_context(const ModelConfig& cfg, int64_t prompt_tokens, int64_t max_tokens);

GenerateResult generate(Executor& ex, const ModelConfig& cfg, const std::vector<int32_t>& prompt,
                        const GenerateOptions& opts, const std::function<void(int32_t)>& on_token);

// Logits of every position of `tokens` (teacher forcing), [tokens.size()][vocab].
std::vector<std::vector<float>> teacher_forced_logits(Executor& ex, const std::vector<int32_t>& tokens);

// The same, `chunk` positions per step (the executor's limits must allow chunk tokens and logit
// rows), each row handed to on_row(position, row of vocab floats) as soon as it is computed and
// never kept: memory stays at one chunk's rows however long the sequence.
void teacher_forced_logits(Executor& ex, const std::vector<int32_t>& tokens, int64_t chunk,
                           const std::function<void(int64_t, const float*)>& on_row);

}  // namespace ac
