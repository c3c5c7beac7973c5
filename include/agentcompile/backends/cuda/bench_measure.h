#pragma once
// GPU measurements for `agentcompile bench` (src/bench calls these only in CUDA builds; no CUDA
// headers here). Times are GPU times from CUDA events after warm-up; figures are medians of the
// samples, which are all returned.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "agentcompile/core/dtype.h"
#include "agentcompile/core/json.h"
#include "agentcompile/model/hf_config.h"
#include "agentcompile/plan/plan.h"

namespace ac::cuda {

struct Measured {
  double median = 0.0;
  std::vector<double> samples;
};

// The copy and read ceilings' size and samples, the same for `bench` and `compile`: far past L2,
// so the figures are DRAM's; 10 samples take a few milliseconds.
constexpr size_t kCeilingBytes = size_t(1) << 30;
constexpr int kCeilingRepeats = 10;

// GPU name, architecture, SMs, memory, L2, CUDA driver/runtime versions, kernel driver version.
Json gpu_environment();

// Device-to-device copy of `bytes` (filled with a non-zero pattern), GB/s with read + write counted.
Measured copy_bandwidth_GBps(size_t bytes, int repeats);

// What reads alone stream (probe/read.cuh: one 64 KiB tile per block with the GEMVs' weight load)
// over `bytes` of a non-zero pattern, GB/s of bytes read; each block's sum is checked. A decode
// step only reads its weights, and reads may stream faster than a copy.
Measured read_bandwidth_GBps(size_t bytes, int repeats);
// The probe's per-block sums of `words` (16-byte words in tiles of words_per_block; for tests).
std::vector<uint32_t> read_probe_sums(const std::vector<uint32_t>& words, long long words_per_block);

// cuBLAS bf16 GEMM [m, k] x [k, n] (f32 accumulate, the engine's library route) on random data, TFLOP/s.
Measured gemm_bf16_tflops(int m, int n, int k, int repeats);

struct KernelBenchOptions {
  int64_t context = 1024;            // KV positions for the attention region
  std::vector<int64_t> batches = {1};
  int repeats = 7;
  double copy_GBps = 0.0, read_GBps = 0.0, gemm_tflops = 0.0;  // ceilings for the percentages (0: none)
  std::optional<KnobValues> plan;              // a compiled plan's choices instead of the defaults
};

// Every decode region of a model with this config (qkv, attention, o, gate_up, down, lm_head):
// the fast route's kernel (the plan's choices, else FastConfig's defaults) vs the reference kernel vs cuBLAS, on random
// weights rotated over enough copies to exceed L2. One JSON row per (region, batch).
Json bench_decode_kernels(const ModelConfig& c, DType weights, const KernelBenchOptions& o);

}  // namespace ac::cuda
