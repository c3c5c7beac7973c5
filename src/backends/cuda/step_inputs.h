#pragma once
// The integer inputs of one executor step on the device — token ids, positions and KV-cache
// slots [step tokens], logit rows [logit rows] — copied in through one pinned staging buffer so
// the copies are asynchronous and safe to replay in a captured CUDA graph.
#include "agentcompile/runtime/executor.h"
#include "backends/cuda/device.h"

namespace ac::cuda {

struct StepInputs {
  StepInputs() = default;
  StepInputs(long long max_tokens, long long max_rows);
  // Copies b's arrays (already validated against the executor's limits) on stream s.
  void upload(const StepBatch& b, CUstream s);

  DeviceBuffer tokens, positions, slots;  // int32 [max_tokens]
  DeviceBuffer rows;                      // int32 [max_rows]
  PinnedBuffer staging;                   // tokens | positions | slots | rows

 private:
  long long max_tokens_ = 0, max_rows_ = 0;
};

}  // namespace ac::cuda
