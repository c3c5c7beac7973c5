#include "backends/cuda/step_inputs.h"

#include <cstring>

#include "agentcompile/core/error.h"

namespace ac::cuda {

StepInputs::StepInputs(long long max_tokens, long long max_rows)
    : tokens(size_t(max_tokens) * 4),
      positions(size_t(max_tokens) * 4),
      slots(size_t(max_tokens) * 4),
      rows(size_t(max_rows) * 4),
      staging(size_t(3 * max_tokens + max_rows) * 4),
      max_tokens_(max_tokens),
      max_rows_(max_rows) {}

void StepInputs::upload(const StepBatch& b, CUstream s) {
  const long long n = (long long)b.tokens.size(), r = (long long)b.logit_rows.size();
  if (n > max_tokens_ || r > max_rows_) throw_internal("cuda step", "step larger than its input buffers");
  int32_t* st = staging.as<int32_t>();
  std::memcpy(st, b.tokens.data(), size_t(n) * 4);
  std::memcpy(st + n, b.positions.data(), size_t(n) * 4);
  std::memcpy(st + 2 * n, b.slots.data(), size_t(n) * 4);
  std::memcpy(st + 3 * n, b.logit_rows.data(), size_t(r) * 4);
  tokens.upload(st, size_t(n) * 4, s);
  positions.upload(st + n, size_t(n) * 4, s);
  slots.upload(st + 2 * n, size_t(n) * 4, s);
  rows.upload(st + 3 * n, size_t(r) * 4, s);
}

}  // namespace ac::cuda
