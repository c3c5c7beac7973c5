#include "backends/cuda/step_inputs.h"

#include <cstring>

#include "agentcompile/core/error.h"

namespace ac::cuda {

StepInputs::StepInputs(long long max_tokens, long long max_rows)
    : dev_(size_t(3 * max_tokens + max_rows) * 4),
      staging_(size_t(3 * max_tokens + max_rows) * 4),
      max_tokens_(max_tokens),
      max_rows_(max_rows) {}

void StepInputs::upload(const StepBatch& b, CUstream s) {
  const long long n = (long long)b.tokens.size(), r = (long long)b.logit_rows.size();
  if (n > max_tokens_ || r > max_rows_) throw_internal("cuda step", "step larger than its input buffers");
  int32_t* st = staging_.as<int32_t>();
  std::memcpy(st, b.tokens.data(), size_t(n) * 4);
  std::memcpy(st + n, b.positions.data(), size_t(n) * 4);
  std::memcpy(st + 2 * n, b.slots.data(), size_t(n) * 4);
  std::memcpy(st + 3 * n, b.logit_rows.data(), size_t(r) * 4);
  dev_.upload(st, size_t(3 * n + r) * 4, s);
  n_ = n;
}

}  // namespace ac::cuda
