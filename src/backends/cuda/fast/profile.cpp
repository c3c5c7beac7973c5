// Per-kind kernel times and bandwidth (GEMMs: FLOP rate) of the decode steps and, apart, of the
// prompt steps: with AGENTCOMPILE_PROFILE=1 over the executor's life, printed at exit; or between
// profile_kernels(true) and (false), read by kernel_profile() (bench e2e --profile).
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

bool FastExecutor::profile_kernels(bool on) {
  drop_ahead();
  CU_CHECK(drv().cuStreamSynchronize(s_));
  for (auto& m : marks_) drv().cuEventDestroy(m.e);
  marks_.clear();
  if (on) {
    profile_sum_.clear();
    prefill_sum_.clear();
    profiled_steps_ = prefill_steps_ = prefill_tokens_ = 0;
    prefill_warm_ = prefill_warm_ || prompt_ran_;  // only a first prompt step is dropped
  }
  // Profiled decode steps run eagerly (run_decode_step); the graphs captured without the marks
  // stay valid for the steps after.
  profile_ = on || profile_env_;
  return true;
}

KernelProfile FastExecutor::kernel_profile() const {
  KernelProfile out;
  out.decode_steps = profiled_steps_;
  out.prompt_steps = prefill_steps_;
  out.prompt_tokens = prefill_tokens_;
  auto add = [&](const char* phase, const std::map<std::string, ProfileEntry>& sums, long long steps) {
    if (steps <= 0) return;
    for (const auto& [kind, p] : sums)
      out.kinds.push_back({phase, kind, p.ms / double(steps), p.bytes / double(steps), p.flops / double(steps),
                           double(p.calls) / double(steps)});
  };
  add("decode", profile_sum_, profiled_steps_);
  add("prompt", prefill_sum_, prefill_steps_);
  return out;
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
