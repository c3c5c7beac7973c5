#include "agentcompile/runtime/executor.h"

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

}  // namespace ac
