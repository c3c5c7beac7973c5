#pragma once
// Compiled variants on the GPU: compile (through the cache), load the CUBIN, read its resource
// attributes, and launch with the hardware constraints checked first.
#include <atomic>
#include <string>

#include "backends/cuda/device.h"
#include "backends/cuda/family.h"
#include "backends/cuda/nvrtc_jit.h"

namespace ac::cuda {

struct LoadedKernel {
  std::string name;
  CUfunction fn = nullptr;
  int max_threads = 0;    // CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK (accounts for registers)
  int registers = 0;
  int static_smem = 0;
  int local_bytes = 0;
  // The preferred shared-memory carveout last set on fn (launch_kernel's `carveout`); -1: the
  // driver's default. Atomic: executors on other threads may launch the same kernel.
  mutable std::atomic<int> carveout{-1};
  JitResult jit;
};

// Memoised per process; throws Internal when the variant does not compile or load. A binary
// registered with use_prebuilt_kernel for the variant's name is loaded instead of compiling,
// when its source key is the variant's (jit_key); otherwise the variant is compiled.
const LoadedKernel& load_kernel(const Variant& v);

// The developer timeline's source of `v`: instrumented (timeline.h), bounded to as many resident
// blocks per SM as the plain kernel's registers allow. The instrumentation alone raised some
// kernels' registers (gate/up 256:1:2:1: 63 -> 76 under NVRTC, 4 blocks per SM -> 3), so the
// timeline showed waves the plain step does not have. The plain source is compiled (through the
// cache) to learn its registers; where the bound would make the kernel spill, it is left out.
std::string timeline_source(const Variant& v);

// Registers a binary shipped with a compiled plan (PlanKernel: name, source key, bytes).
void use_prebuilt_kernel(const std::string& name, const std::string& source_key, std::string cubin);
// The registered binary for `v`, when there is one and its source key matches (exposed for tests).
const std::string* prebuilt_kernel_for(const Variant& v);
// Forgets every registered binary (tests: a registry holding only what the code under test adds).
void clear_prebuilt_kernels();

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

// Checks threads against the function's limit and shared memory against the device's (opting in
// above 48 KiB), then launches `params` (the kernel's single by-value argument).
// With `pdl`, the launch allows programmatic dependent launch: the kernel may start before the
// previous one on the stream ends (it must call pdl_wait() before reading that kernel's outputs).
// `carveout`: the function's preferred shared-memory carveout (percent of the L1/shared store; -1
// the driver's choice), set when it differs from the one the function has. `launch_carveout` (0-100;
// -1: none): this launch's own preference, a launch attribute that takes precedence over the
// function's (one function may serve two regions of different carveouts; a CUDA graph keeps it
// per node).
void launch_kernel(const LoadedKernel& k, Dim3 grid, unsigned threads, size_t dynamic_smem, CUstream s,
                   const void* params, bool pdl = false, int carveout = -1, int launch_carveout = -1);

// Convenience: grid-stride launch size for `count` elements.
unsigned elementwise_blocks(long long count, unsigned threads);

}  // namespace ac::cuda
