#include "backends/cuda/step_inputs.h"

#include <cstring>

#include "agentcompile/core/error.h"

namespace ac::cuda {

StepInputs::StepInputs(long long max_tokens, long long max_rows)
    : dev_(size_t(3 * max_tokens + max_rows) * 4),
      staging_{PinnedBuffer(size_t(3 * max_tokens + max_rows) * 4), PinnedBuffer(size_t(3 * max_tokens + max_rows) * 4)},
      max_tokens_(max_tokens),
      max_rows_(max_rows) {}

void StepInputs::upload(const StepBatch& b, CUstream s, bool keep_tokens) {
  const long long n = (long long)b.tokens.size(), r = (long long)b.logit_rows.size();
  if (n > max_tokens_ || r > max_rows_) throw_internal("cuda step", "step larger than its input buffers");
  if (keep_tokens && n != n_) throw_internal("cuda step", "kept token ids of a step of another size");
  int32_t* st = staging_[next_staging_].as<int32_t>();
  next_staging_ ^= 1;
  std::memcpy(st, b.tokens.data(), size_t(n) * 4);
  std::memcpy(st + n, b.positions.data(), size_t(n) * 4);
  std::memcpy(st + 2 * n, b.slots.data(), size_t(n) * 4);
  std::memcpy(st + 3 * n, b.logit_rows.data(), size_t(r) * 4);
  const long long skip = keep_tokens ? n : 0;
  CU_CHECK(drv().cuMemcpyHtoDAsync(dev_.ptr() + size_t(skip) * 4, st + skip, size_t(3 * n + r - skip) * 4, s));
  n_ = n;
  positions_ = b.positions;
  slots_ = b.slots;
  rows_ = b.logit_rows;
}

void StepInputs::advanced_on_device() {
  for (int32_t& p : positions_) ++p;
}

bool StepInputs::on_device(const StepBatch& b) const {
  return (long long)b.tokens.size() == n_ && b.positions == positions_ && b.slots == slots_ && b.logit_rows == rows_;
}

}  // namespace ac::cuda
