// AGENTCOMPILE_PROFILE=1: per-kind kernel times and bandwidth (GEMMs: FLOP rate) of the decode
// steps and, apart, of the prompt steps, printed at exit.
#include "backends/cuda/fast/executor.h"

#include <cstdio>

namespace ac::cuda {

void FastExecutor::mark(const std::string& kind, double bytes, double flops) {
  if (!profile_) return;
  CUevent e;
  CU_CHECK(drv().cuEventCreate(&e, CU_EVENT_DEFAULT));
  CU_CHECK(drv().cuEventRecord(e, s_));
  marks_.push_back({e, kind, bytes, flops});
}

void FastExecutor::flush_profile(bool prefill) {
  if (marks_.empty()) return;
  CU_CHECK(drv().cuStreamSynchronize(s_));
  // The first prompt step loads cuBLAS's kernels for its GEMMs' shapes (tens of ms on an H100):
  // its times are not the prompt's, so they are dropped.
  if (prefill && !prefill_warm_) {
    prefill_warm_ = true;
    prefill_tokens_ = 0;
    for (auto& m : marks_) drv().cuEventDestroy(m.e);
    marks_.clear();
    return;
  }
  std::map<std::string, ProfileEntry>& sum = prefill ? prefill_sum_ : profile_sum_;
  for (size_t i = 1; i < marks_.size(); ++i) {
    float ms = 0;
    CU_CHECK(drv().cuEventElapsedTime(&ms, marks_[i - 1].e, marks_[i].e));
    ProfileEntry& p = sum[marks_[i].kind];
    p.ms += ms;
    p.bytes += marks_[i].bytes;
    p.flops += marks_[i].flops;
    p.calls += 1;
  }
  for (auto& m : marks_) drv().cuEventDestroy(m.e);
  marks_.clear();
  ++(prefill ? prefill_steps_ : profiled_steps_);
}

void FastExecutor::print_profile() const {
  auto print = [](const char* what, const std::map<std::string, ProfileEntry>& sums, long long steps, const std::string& extra) {
    if (sums.empty() || steps == 0) return;
    double total = 0;
    for (const auto& [k, p] : sums) total += p.ms;
    std::fprintf(stderr, "profile: %lld %s steps%s, %.3f ms/step in kernels\n", steps, what, extra.c_str(), total / double(steps));
    for (const auto& [k, p] : sums) {
      const double rate = p.flops > 0 ? p.flops / (p.ms * 1e9) : p.bytes / (p.ms * 1e6);
      std::fprintf(stderr, "  %-16s %8.4f ms/step  %5.1f%%  %7.1f %s  (%lld launches/step)\n", k.c_str(), p.ms / double(steps),
                   100 * p.ms / total, rate, p.flops > 0 ? "TFLOP/s" : "GB/s", p.calls / steps);
    }
  };
  print("decode", profile_sum_, profiled_steps_, "");
  print("prompt", prefill_sum_, prefill_steps_,
        prefill_steps_ ? " (" + std::to_string(prefill_tokens_ / prefill_steps_) + " tokens each on average)" : "");
}

}  // namespace ac::cuda
