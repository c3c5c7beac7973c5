#include "agentcompile/tuning/executor.h"

#include <cmath>

#include "agentcompile/core/error.h"

namespace ac {

// Checked once per step on the host so no backend reads outside its caches.
void validate_step(const StepBatch& b, const ExecutorLimits& lim, int64_t vocab) {
  const size_t n = b.tokens.size();
  if (n == 0) throw_internal("step", "empty batch");
  if (b.positions.size() != n || b.slots.size() != n) throw_internal("step", "tokens, positions and slots differ in length");
  if (static_cast<int64_t>(n) > lim.step_tokens()) throw_internal("step", "more tokens than the executor was sized for");
  if (static_cast<int64_t>(b.logit_rows.size()) > lim.logit_rows())
    throw_internal("step", "more logit rows than the executor was sized for");
  for (size_t i = 0; i < n; ++i) {
    if (b.tokens[i] < 0 || b.tokens[i] >= vocab)
      throw_input("tokens", "token id " + std::to_string(b.tokens[i]) + " is outside the vocabulary (" +
                                std::to_string(vocab) + ")");
    if (b.slots[i] < 0 || b.slots[i] >= lim.max_slots) throw_internal("step", "slot out of range");
    if (b.positions[i] < 0 || b.positions[i] >= lim.max_seq) throw_internal("step", "position beyond the cache");
    if (i > 0 && b.slots[i] == b.slots[i - 1] && b.positions[i] != b.positions[i - 1] + 1)
      throw_internal("step", "positions of a sequence must be consecutive");
  }
  for (size_t i = 0; i < b.logit_rows.size(); ++i)
    if (b.logit_rows[i] < 0 || static_cast<size_t>(b.logit_rows[i]) >= n) throw_internal("step", "logit row out of range");
}

int32_t argmax(const float* logits, int64_t vocab) {
  int64_t best = 0;
  for (int64_t i = 1; i < vocab; ++i)
    if (logits[i] > logits[best]) best = i;
  return int32_t(best);
}

int32_t host_greedy(const float* row, int64_t vocab) {
  for (int64_t i = 0; i < vocab; ++i)
    if (!std::isfinite(row[i])) return -1;
  return argmax(row, vocab);
}

void Executor::decode_ahead(const StepBatch& batch, bool chained) {
  if (ahead_.size() >= 2) throw_internal("decode ahead", "more than two steps in flight");
  StepBatch b = batch;
  if (chained) {
    if (ahead_last_.size() != b.tokens.size()) throw_internal("decode ahead", "a chained step differs from the step before it");
    // A row whose previous token is not one (NaN logits) feeds nothing: the caller stops at it.
    for (int32_t t : ahead_last_)
      if (t < 0) {
        ahead_.push_back(ahead_last_);
        return;
      }
    b.tokens = ahead_last_;
  }
  forward(b);
  std::vector<int32_t> t;
  if (!argmax_rows(t)) {
    t.clear();
    for (size_t r = 0; r < b.logit_rows.size(); ++r) t.push_back(host_greedy(logits() + int64_t(r) * vocab_size(), vocab_size()));
  }
  if (t.size() != b.logit_rows.size()) throw_internal("decode ahead", "the backend returned a token count unlike the rows");
  ahead_last_ = t;
  ahead_.push_back(std::move(t));
}

void Executor::next_greedy(std::vector<int32_t>& out) {
  if (ahead_.empty()) throw_internal("decode ahead", "no step in flight");
  out = std::move(ahead_.front());
  ahead_.pop_front();
}

void Executor::end_ahead() {
  ahead_.clear();
  ahead_last_.clear();
}

DecodeAheadScope::~DecodeAheadScope() {
  try {
    ex_.end_ahead();
  } catch (...) {
    // The error that unwinds the loop (or the next call) reports the device's state.
  }
}

}  // namespace ac
