#pragma once
// The integer inputs of one executor step on the device — token ids, positions and KV-cache
// slots [n step tokens], logit rows [r] — packed back to back (tokens | positions | slots | rows)
// in one pinned staging buffer and one device buffer, so a step costs one asynchronous copy, and
// safe to replay in a captured CUDA graph: a graph is captured per step size n, and the layout
// (the offsets below) depends only on n.
#include "agentcompile/runtime/executor.h"
#include "backends/cuda/device.h"

namespace ac::cuda {

struct StepInputs {
  StepInputs() = default;
  StepInputs(long long max_tokens, long long max_rows);
  // Copies b's arrays (already validated against the executor's limits) on stream s.
  void upload(const StepBatch& b, CUstream s);

  // Device arrays of the last uploaded step.
  int* tokens() const { return dev_.as<int>(); }
  int* positions() const { return dev_.as<int>() + n_; }
  int* slots() const { return dev_.as<int>() + 2 * n_; }
  int* rows() const { return dev_.as<int>() + 3 * n_; }

 private:
  DeviceBuffer dev_;      // int32 [3 * max_tokens + max_rows]
  PinnedBuffer staging_;  // the same layout on the host
  long long max_tokens_ = 0, max_rows_ = 0, n_ = 0;
};

}  // namespace ac::cuda
