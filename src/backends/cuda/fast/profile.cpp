// AGENTCOMPILE_PROFILE=1: per-kind kernel times and bandwidth of the decode steps, printed at exit.
#include "backends/cuda/fast/executor.h"

#include <cstdio>

namespace ac::cuda {

void FastExecutor::mark(const std::string& kind, double bytes) {
  if (!profile_) return;
  CUevent e;
  CU_CHECK(drv().cuEventCreate(&e, CU_EVENT_DEFAULT));
  CU_CHECK(drv().cuEventRecord(e, s_));
  marks_.push_back({e, kind, bytes});
}

void FastExecutor::flush_profile() {
  if (marks_.empty()) return;
  CU_CHECK(drv().cuStreamSynchronize(s_));
  for (size_t i = 1; i < marks_.size(); ++i) {
    float ms = 0;
    CU_CHECK(drv().cuEventElapsedTime(&ms, marks_[i - 1].e, marks_[i].e));
    ProfileEntry& p = profile_sum_[marks_[i].kind];
    p.ms += ms;
    p.bytes += marks_[i].bytes;
    p.calls += 1;
  }
  for (auto& m : marks_) drv().cuEventDestroy(m.e);
  marks_.clear();
  ++profiled_steps_;
}

void FastExecutor::print_profile() const {
  if (profile_sum_.empty()) return;
  double total = 0;
  for (const auto& [k, p] : profile_sum_) total += p.ms;
  std::fprintf(stderr, "profile: %lld decode steps, %.3f ms/step in kernels\n", profiled_steps_, total / double(profiled_steps_));
  for (const auto& [k, p] : profile_sum_)
    std::fprintf(stderr, "  %-16s %8.4f ms/step  %5.1f%%  %7.1f GB/s  (%lld launches/step)\n", k.c_str(),
                 p.ms / double(profiled_steps_), 100 * p.ms / total, p.bytes / (p.ms * 1e6),
                 p.calls / profiled_steps_);
}

}  // namespace ac::cuda
