#include "agentcompile/tuning/greedy.h"

#include <chrono>

#include "agentcompile/core/error.h"

namespace ac {

namespace {
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

int32_t checked(int32_t tok) {
  if (tok < 0) throw_internal("sampler", "the logits hold NaN or Inf; generation stopped");
  return tok;
}
}  // namespace

GreedyRun greedy_generate(Executor& ex, const std::vector<int32_t>& prompt, int32_t from, int64_t max_tokens,
                          const std::function<bool(int32_t)>& is_stop, const std::function<void(int32_t)>& on_token) {
  const int32_t n = int32_t(prompt.size());
  if (max_tokens < 1 || from < 0 || from >= n)
    throw_internal("greedy_generate", std::to_string(max_tokens) + " tokens after " + std::to_string(from) + " of " +
                                          std::to_string(n) + " prompt tokens");
  GreedyRun r;
  auto take = [&](int32_t tok) {
    r.tokens.push_back(tok);
    if (on_token) on_token(tok);
    r.stopped = is_stop && is_stop(tok);
  };
  StepBatch step;
  step.tokens.assign(prompt.begin() + from, prompt.end());
  for (int32_t i = from; i < n; ++i) step.positions.push_back(i);
  step.slots.assign(size_t(n - from), 0);
  step.logit_rows = {n - from - 1};
  std::vector<int32_t> picked;
  const auto t0 = Clock::now();
  ex.forward(step);
  int32_t tok = checked(ex.argmax_rows(picked) ? picked.at(0) : host_greedy(ex.logits(), ex.vocab_size()));
  r.prefill_ms = ms_since(t0);
  take(tok);
  if (r.stopped || int64_t(r.tokens.size()) >= max_tokens) return r;

  // Step t + 1 is enqueued, its token to be taken from step t's argmax where the logits live,
  // before step t's token is read back.
  DecodeAheadScope ahead(ex);
  int32_t pos = n;
  step.tokens = {tok};
  step.positions = {pos++};
  step.slots = {0};
  step.logit_rows = {0};
  auto t1 = Clock::now();
  ex.decode_ahead(step, false);
  int64_t in_flight = 1;
  while (in_flight > 0) {
    if (int64_t(r.tokens.size()) + in_flight < max_tokens) {  // another token may be wanted
      step.positions = {pos++};
      ex.decode_ahead(step, true);
      ++in_flight;
    }
    ex.next_greedy(picked);
    --in_flight;
    tok = checked(picked.at(0));
    r.decode_ms.push_back(ms_since(t1));
    t1 = Clock::now();
    take(tok);
    if (r.stopped) break;  // a step still in flight computed a token nobody reads
  }
  return r;
}

}  // namespace ac
