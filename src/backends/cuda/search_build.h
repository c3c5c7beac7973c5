#pragma once
// NVRTC results of this process by variant name, shared by the CUDA evaluators. prepare() fills it
// from parallel threads so that the per-candidate compile stage is a lookup (the first version
// compiled 121 GEMV points one after another, 0.3-1 s each, and spent the whole budget there).
// Only what compile() needs is kept; load_kernel later gets the CUBIN from jit_compile's disk cache
// (kernel_cache.h), which the parallel build filled, instead of compiling again.
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agentcompile/tuning/evaluator.h"
#include "backends/cuda/family.h"
#include "backends/cuda/nvrtc_jit.h"

namespace ac::cuda {

struct Built {
  bool ok = false;
  std::string error;
  int spill_bytes = 0;
};

class BuildMemo {
 public:
  static BuildMemo& get();
  // The variant's build, compiled now (on this thread) when absent.
  Built build(const Variant& v);
  // Builds the variants not built yet with NVRTC in worker threads (in the given order, so the
  // first candidates are ready first); no compile starts after `deadline`.
  void build_all(const std::vector<Variant>& vs, Clock::time_point deadline);

 private:
  std::optional<Built> find(const std::string& name);
  Built put(const std::string& name, const JitResult& r);
  std::mutex mu_;
  std::map<std::string, Built> done_;
};

}  // namespace ac::cuda
