#include "agentcompile/runtime/engine.h"

#include <algorithm>
#include <chrono>

#include "agentcompile/core/error.h"
#include "agentcompile/core/stats.h"
#include "agentcompile/tuning/greedy.h"

namespace ac {

namespace {
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }
}  // namespace

void check_context(const ModelConfig& cfg, int64_t prompt_tokens, int64_t max_tokens) {
  if (prompt_tokens < 1) throw_input("prompt", "is empty (need at least one token)");
  if (max_tokens < 0) throw_input("--max-tokens", "must be >= 0");
  const int64_t limit = cfg.context_limit();
  if (prompt_tokens + max_tokens > limit)
    throw_input("prompt", std::to_string(prompt_tokens) + " prompt tokens + " + std::to_string(max_tokens) +
                              " new tokens exceed the model's context of " + std::to_string(limit) + " positions");
}

GenerateResult generate(Executor& ex, const ModelConfig& cfg, const std::vector<int32_t>& prompt,
                        const GenerateOptions& opts, const std::function<void(int32_t)>& on_token) {
  check_context(cfg, int64_t(prompt.size()), opts.max_tokens);
  if (int64_t(prompt.size()) + opts.max_tokens > ex.limits().max_seq + 1)
    throw_internal("generate", "executor sized for fewer positions than requested");
  validate_sampling(opts.sampling);
  Sampler sampler(opts.sampling);
  GenerateResult r;
  r.finish_reason = "length";
  if (opts.max_tokens == 0) return r;

  auto is_stop = [&](int32_t t) {
    return !opts.ignore_eos && std::find(opts.stop_ids.begin(), opts.stop_ids.end(), int64_t(t)) != opts.stop_ids.end();
  };

  const int32_t n = int32_t(prompt.size());
  if (opts.cached_prefix < 0 || opts.cached_prefix >= n)
    throw_internal("generate", "a cached prefix of " + std::to_string(opts.cached_prefix) + " tokens for a prompt of " +
                                   std::to_string(n));
  const int32_t from = int32_t(opts.cached_prefix);
  const bool greedy = opts.sampling.temperature == 0.0f;
  if (greedy) {  // the loop the compiler times plans with (tuning/greedy.h)
    GreedyRun g = greedy_generate(ex, prompt, from, opts.max_tokens, is_stop, on_token);
    r.tokens = std::move(g.tokens);
    r.prefill_ms = g.prefill_ms;
    r.decode_ms = std::move(g.decode_ms);
    if (g.stopped) r.finish_reason = "stop";
    r.decode_ms_per_token = median(r.decode_ms);
    return r;
  }
  // Top-k sampling draws among the k candidates the backend selects where it can (the same draw
  // as from the whole row: Sampler::sample_candidates).
  std::vector<LogitCandidate> candidates;
  auto choose = [&]() -> int32_t {
    const int k = opts.sampling.top_k;
    if (k > 0 && k < ex.vocab_size() && ex.top_k_rows(k, candidates)) {
      if (candidates.at(0).second < 0) throw_internal("sampler", "the logits hold NaN or Inf; generation stopped");
      candidates.resize(size_t(k));  // the first row: generate runs one sequence
      return sampler.sample_candidates(std::move(candidates));
    }
    return sampler.sample(ex.logits(), ex.vocab_size());
  };
  StepBatch step;
  step.tokens.assign(prompt.begin() + from, prompt.end());
  for (int32_t i = from; i < n; ++i) step.positions.push_back(i);
  step.slots.assign(size_t(n - from), 0);
  step.logit_rows = {n - from - 1};
  auto t0 = Clock::now();
  ex.forward(step);
  int32_t tok = choose();
  r.prefill_ms = ms_since(t0);
  r.tokens.push_back(tok);
  if (on_token) on_token(tok);

  int32_t pos = n;
  while (!is_stop(tok) && int64_t(r.tokens.size()) < opts.max_tokens) {
    step.tokens = {tok};
    step.positions = {pos++};
    step.slots = {0};
    step.logit_rows = {0};
    auto t1 = Clock::now();
    ex.forward(step);
    tok = choose();
    r.decode_ms.push_back(ms_since(t1));
    r.tokens.push_back(tok);
    if (on_token) on_token(tok);
  }
  if (is_stop(tok)) r.finish_reason = "stop";
  r.decode_ms_per_token = median(r.decode_ms);
  return r;
}

void teacher_forced_logits(Executor& ex, const std::vector<int32_t>& tokens, int64_t chunk,
                           const std::function<void(int64_t, const float*)>& on_row) {
  if (chunk < 1) throw_internal("teacher_forced_logits", "chunk must be positive");
  const int64_t v = ex.vocab_size(), n = int64_t(tokens.size());
  for (int64_t begin = 0; begin < n; begin += chunk) {
    const int64_t end = std::min(n, begin + chunk);
    StepBatch step;
    for (int64_t i = begin; i < end; ++i) {
      step.tokens.push_back(tokens[size_t(i)]);
      step.positions.push_back(int32_t(i));
      step.slots.push_back(0);
      step.logit_rows.push_back(int32_t(i - begin));
    }
    ex.forward(step);
    for (int64_t i = begin; i < end; ++i) on_row(i, ex.logits() + (i - begin) * v);
  }
}

std::vector<std::vector<float>> teacher_forced_logits(Executor& ex, const std::vector<int32_t>& tokens) {
  std::vector<std::vector<float>> out(tokens.size());
  const int64_t v = ex.vocab_size();
  teacher_forced_logits(ex, tokens, std::max<int64_t>(1, int64_t(tokens.size())),
                        [&](int64_t i, const float* row) { out[size_t(i)].assign(row, row + v); });
  return out;
}

}  // namespace ac
