#pragma once
// Developer timeline of one decode step (kernels/cuda/common/timeline.cuh): with
// AGENTCOMPILE_TIMELINE=<file.csv> in the environment, every kernel variant of the process is
// compiled with AC_TIMELINE (its blocks record start, wait return and end in %globaltimer ns), the
// loader binds each module to one device buffer under a tag, and the fast path's decode step
// number AGENTCOMPILE_TIMELINE_STEP (default 64) writes its records to <file.csv> (with
// AGENTCOMPILE_TIMELINE_STEPS=k, that step and the k - 1 after it, enqueued as they run, so the
// CSV also shows what lies between two steps). Timing only:
// the instrumented kernels are slower by an atomic and a barrier per block; they are compiled to
// as many resident blocks per SM as the plain kernels (kernel_loader's timeline_source).
#include <string>

#include "backends/cuda/driver.h"

namespace ac::cuda {

// The CSV path when the timeline is on ("" when off); read once per process.
const std::string& timeline_path();
inline bool timeline_enabled() { return !timeline_path().empty(); }
// The first decode step (counted from 1 per executor) whose kernels are recorded, and how many.
long long timeline_step();
long long timeline_steps();

// Points a freshly loaded module's timeline globals at the process's buffer under a new tag for
// kernel `name` (no-op when off).
void timeline_bind(CUmodule mod, const std::string& name);
// Before the recorded step: zero the record count on stream s. After it: wait for s and write the
// records (kernel name, block, SM, start / wait / end in ns from the step's first start) to the
// CSV (and the marks, AC_TIMELINE_MARK); throws Internal on a failed write.
void timeline_reset(CUstream s);
void timeline_write(CUstream s);

}  // namespace ac::cuda
