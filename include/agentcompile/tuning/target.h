#pragma once
// The machine a plan is made for: the GPU the CUDA backend finds, a named GPU from a table of
// published and measured facts (--target h200|h100|a100), or the host CPU. Rooflines use the
// measured ceilings when known (copy bandwidth, bf16 GEMM rate: ../shared/GPU.md for the H200),
// else the datasheet ones, and say which.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "agentcompile/core/json.h"

namespace ac {

struct TargetFacts {
  std::string name;     // "h200", "cpu", or the detected device's name
  std::string kind;     // "gpu" | "cpu"
  std::string device;   // "NVIDIA H200", "x86_64 host"
  std::string arch;     // "sm_90", "sm_80", "x86_64", "aarch64"
  std::string origin;   // "detected" | "table" | "host"

  // GPU facts (0 when unknown / not a GPU)
  int sm_count = 0;
  int max_threads_per_block = 0;
  int64_t smem_per_block = 0;        // without opt-in
  int64_t smem_per_block_optin = 0;  // largest dynamic shared memory a block may ask for
  int regs_per_block = 0;
  int64_t memory_bytes = 0;

  // CPU facts (0 when not a CPU)
  int cores = 0;
  int simd_floats = 0;     // f32 lanes of the vector unit the build targets
  int simd_registers = 0;  // architectural vector registers

  int64_t l2_bytes = 0;    // GPU L2; CPU: the last-level cache
  // Ceilings the roofline uses (bytes moved counted once, read or write).
  double bandwidth_gbs = 0;
  std::string bandwidth_source;
  double matmul_tflops = 0;   // GPU: bf16 tensor-core GEMM; CPU: f32 FMA rate of all cores
  std::string matmul_source;
  bool bandwidth_measured = false, matmul_measured = false;
  // What reads alone stream (GPU, measured in this process only; 0: not measured). A decode step
  // only reads its weights, and reads may stream faster than the copy above.
  double read_gbs = 0;
  std::string read_source;
  // Datasheet values, kept beside the measured ones.
  double datasheet_bandwidth_gbs = 0, datasheet_matmul_tflops = 0;
  std::string datasheet_source;

  // Intensity (FLOP/byte) where the roofline's two limits meet.
  double ridge_intensity() const;
  Json to_json() const;
};

// Named GPU targets from the table in target.cpp (sources noted there).
std::vector<std::string> named_targets();  // "h200", "h100", "a100", "cpu"
// A named target; "cpu" is the host CPU with nominal figures. BadInput naming --target otherwise.
TargetFacts named_target(const std::string& name);

// The host CPU. measure: time a copy and an FMA loop (about 0.1 s) instead of nominal figures.
TargetFacts host_cpu_target(bool measure);
// The host's architecture ("x86_64", "aarch64") and CPU model name (/proc/cpuinfo).
std::string host_arch();
std::string host_cpu_name();
// A detected GPU's ceilings from the target table when the chip (name, SM count, architecture)
// is in it; the sources say "unknown" otherwise.
void apply_target_table(TargetFacts& t);

// The GPU the CUDA backend would use, facts filled from the device and completed from the table
// when its name matches a row; false (why in *why_not) when there is none or no CUDA in the build.
bool detect_gpu_target(TargetFacts* out, std::string* why_not);

// A detected GPU's ceilings measured now, on this device (the copy over 1 GiB read + write counted,
// and what reads alone stream): bandwidth_gbs becomes the copy's, read_gbs the reads', each with
// its source. The table's figures were measured once on another day; the percentages of a
// compile report are against the device as it runs now. False (why in *why_not) when the target
// is not a detected GPU, the build has no CUDA or the measurement failed (e.g. no 2 GiB free); the
// facts are then unchanged.
// `bytes`: the size of each measurement, 0 for bench's (tests pass one no GPU holds to see the
// failure path).
bool measure_gpu_ceilings(TargetFacts* t, std::string* why_not, size_t bytes = 0);

// --target resolution for a backend: "" means the detected GPU (backend cuda, else the host CPU);
// backend cuda without a GPU and without --target uses the h200 row and says so in *note.
TargetFacts resolve_target(const std::string& requested, const std::string& backend, bool measure_cpu,
                           std::string* note);

}  // namespace ac
