#pragma once
// The integer inputs of one executor step on the device — token ids, positions and KV-cache
// slots [n step tokens], logit rows [r] — packed back to back (tokens | positions | slots | rows)
// in one pinned staging buffer and one device buffer, so a step costs one asynchronous copy, and
// safe to replay in a captured CUDA graph: a graph is captured per step size n, and the layout
// (the offsets below) depends only on n.
#include <vector>

#include "agentcompile/tuning/executor.h"
#include "backends/cuda/device.h"

namespace ac::cuda {

struct StepInputs {
  StepInputs() = default;
  StepInputs(long long max_tokens, long long max_rows);
  // Copies b's arrays (already validated against the executor's limits) on stream s; with
  // keep_tokens, all but the token ids (a chained decode step: the previous step's argmax wrote
  // them on the device). The two staging buffers alternate, so the host may fill the next step's
  // while the copy of the one before is still queued (at most two steps in flight).
  void upload(const StepBatch& b, CUstream s, bool keep_tokens = false);
  // A decode step that advanced every position on the device (argmax_finish) was enqueued; and
  // whether the device's arrays already hold b's positions, slots and rows (then a chained step
  // needs no upload).
  void advanced_on_device();
  bool on_device(const StepBatch& b) const;

  // Device arrays of the last uploaded step.
  int* tokens() const { return dev_.as<int>(); }
  int* positions() const { return dev_.as<int>() + n_; }
  int* slots() const { return dev_.as<int>() + 2 * n_; }
  int* rows() const { return dev_.as<int>() + 3 * n_; }

 private:
  DeviceBuffer dev_;      // int32 [3 * max_tokens + max_rows]
  PinnedBuffer staging_[2];  // the same layout on the host
  int next_staging_ = 0;
  long long max_tokens_ = 0, max_rows_ = 0, n_ = 0;
  std::vector<int32_t> positions_, slots_, rows_;  // what the device holds, as far as the host knows
};

}  // namespace ac::cuda
