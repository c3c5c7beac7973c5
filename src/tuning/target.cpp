// Target facts: the named-GPU table, the host CPU (nominal or measured), the detected GPU.
#include "agentcompile/tuning/target.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <chrono>
#include <cstring>
#include <thread>

#include "agentcompile/core/error.h"
#include "agentcompile/core/threads.h"
#include "agentcompile/tuning/backend.h"

namespace ac {

namespace {

constexpr int64_t kMiB = 1024 * 1024;

// Sources:
//  H200: NVIDIA H200 Tensor Core GPU datasheet (SXM: 141 GB HBM3e, 4.8 TB/s, BF16 989 TFLOPS
//        dense); 132 SMs; measured on an H200 (2026-11-29): device
//        copy 4.0 TB/s, cuBLAS bf16 8192^3 ~790 TFLOP/s; L2 60 MiB as the device reports it
//        (cudaDeviceProp::l2CacheSize, bench/results/2026-12-01-read-ceiling/read_ceiling.log).
//  H100: NVIDIA H100 Tensor Core GPU datasheet and architecture whitepaper (SXM5 80 GB: 3.35 TB/s
//        HBM3, BF16 989 TFLOPS dense, 132 SMs, 50 MiB L2).
//  A100: NVIDIA A100 datasheet and Ampere architecture whitepaper (SXM4 80 GB: 2.039 TB/s HBM2e,
//        BF16 312 TFLOPS dense, 108 SMs, 40 MiB L2).
//  Shared memory per block: CUDA C++ Programming Guide, compute capability tables (sm_90: 227 KiB
//  with opt-in, sm_80: 163 KiB; 48 KiB without opt-in); 64 Ki registers per block.
struct GpuRow {
  const char* name;
  const char* device;
  const char* match;  // substring of the CUDA device name
  const char* arch;
  int sm_count;
  int64_t smem_optin, l2, memory;
  double bw_datasheet, tflops_datasheet;
  double bw_measured, tflops_measured;  // 0: not measured
  const char* datasheet_source;
  const char* measured_source;
};

const GpuRow kGpuRows[] = {
    {"h200", "NVIDIA H200", "H200", "sm_90", 132, 227 * 1024, 60 * kMiB, 141'000'000'000LL, 4800, 989, 4000, 790,
     "NVIDIA H200 datasheet (SXM)", "measured on an H200 (2026-11-29)"},
    {"h100", "NVIDIA H100 SXM5 80GB", "H100", "sm_90", 132, 227 * 1024, 50 * kMiB, 80LL * 1024 * kMiB, 3350, 989, 0, 0,
     "NVIDIA H100 datasheet (SXM5)", ""},
    {"a100", "NVIDIA A100-SXM4-80GB", "A100", "sm_80", 108, 163 * 1024, 40 * kMiB, 80LL * 1024 * kMiB, 2039, 312, 0, 0,
     "NVIDIA A100 datasheet (SXM4 80GB)", ""},
};

void fill_ceilings(TargetFacts& t, const GpuRow& r) {
  t.datasheet_bandwidth_gbs = r.bw_datasheet;
  t.datasheet_matmul_tflops = r.tflops_datasheet;
  t.datasheet_source = r.datasheet_source;
  t.bandwidth_measured = r.bw_measured > 0;
  t.bandwidth_gbs = t.bandwidth_measured ? r.bw_measured : r.bw_datasheet;
  t.bandwidth_source = t.bandwidth_measured ? std::string("device copy, ") + r.measured_source
                                            : std::string("datasheet: ") + r.datasheet_source;
  t.matmul_measured = r.tflops_measured > 0;
  t.matmul_tflops = t.matmul_measured ? r.tflops_measured : r.tflops_datasheet;
  t.matmul_source = t.matmul_measured ? std::string("cuBLAS bf16 GEMM, ") + r.measured_source
                                      : std::string("datasheet bf16 dense: ") + r.datasheet_source;
}

TargetFacts from_row(const GpuRow& r) {
  TargetFacts t;
  t.name = r.name;
  t.kind = "gpu";
  t.device = r.device;
  t.arch = r.arch;
  t.origin = "table";
  t.sm_count = r.sm_count;
  t.max_threads_per_block = 1024;
  t.smem_per_block = 48 * 1024;
  t.smem_per_block_optin = r.smem_optin;
  t.regs_per_block = 65536;
  t.memory_bytes = r.memory;
  t.l2_bytes = r.l2;
  fill_ceilings(t, r);
  return t;
}

void host_simd(int* floats, int* regs) {
#if defined(__AVX512F__)
  *floats = 16, *regs = 32;
#elif defined(__AVX__)
  *floats = 8, *regs = 16;
#elif defined(__SSE2__)
  *floats = 4, *regs = 16;
#elif defined(__aarch64__)
  *floats = 4, *regs = 32;
#else
  *floats = 1, *regs = 8;
#endif
}


double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Copy bandwidth over all cores, read + write counted, best of three.
double measure_copy_gbs(int threads) {
  const size_t bytes = size_t(64) * kMiB;
  std::vector<char> a(bytes, 1), b(bytes, 2);
  double best = 1e30;
  for (int rep = 0; rep < 3; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    parallel_for(size_t(threads), 1, [&](size_t tb, size_t te) {
      for (size_t t = tb; t < te; ++t) {
        const size_t lo = bytes * t / size_t(threads), hi = bytes * (t + 1) / size_t(threads);
        std::memcpy(b.data() + lo, a.data() + lo, hi - lo);
      }
    });
    best = std::min(best, seconds_since(t0));
  }
  return 2.0 * double(bytes) / best / 1e9;
}

// f32 multiply-add rate over all cores: independent accumulator chains the compiler vectorises.
double measure_fma_tflops(int threads) {
  constexpr int kAcc = 32;
  constexpr int64_t kIters = 4'000'000;
  std::vector<float> sink(static_cast<size_t>(threads));
  auto t0 = std::chrono::steady_clock::now();
  parallel_for(size_t(threads), 1, [&](size_t tb, size_t te) {
    for (size_t t = tb; t < te; ++t) {
      float acc[kAcc];
      for (int j = 0; j < kAcc; ++j) acc[j] = float(j + int(t)) * 1e-3f;
      const float a = 0.999999f, c = 1e-7f;
      for (int64_t i = 0; i < kIters; ++i)
        for (int j = 0; j < kAcc; ++j) acc[j] = acc[j] * a + c;
      float s = 0;
      for (float v : acc) s += v;
      sink[t] = s;
    }
  });
  const double secs = seconds_since(t0);
  volatile float keep = sink[0];
  (void)keep;
  return 2.0 * double(kAcc) * double(kIters) * double(threads) / secs / 1e12;
}

}  // namespace

double TargetFacts::ridge_intensity() const {
  return bandwidth_gbs > 0 ? matmul_tflops * 1e12 / (bandwidth_gbs * 1e9) : 0.0;
}

Json TargetFacts::to_json() const {
  Json j = {{"name", name}, {"kind", kind}, {"device", device}, {"arch", arch}, {"origin", origin},
            {"l2_bytes", l2_bytes}};
  if (kind == "gpu") {
    j["sm_count"] = sm_count;
    j["max_threads_per_block"] = max_threads_per_block;
    j["smem_per_block"] = smem_per_block;
    j["smem_per_block_optin"] = smem_per_block_optin;
    j["regs_per_block"] = regs_per_block;
    j["memory_bytes"] = memory_bytes;
  } else {
    j["cores"] = cores;
    j["simd_floats"] = simd_floats;
    j["simd_registers"] = simd_registers;
  }
  j["bandwidth_gbs"] = bandwidth_gbs > 0 ? Json(bandwidth_gbs) : Json(nullptr);
  j["bandwidth_source"] = bandwidth_source;
  j["bandwidth_measured"] = bandwidth_measured;
  if (read_gbs > 0) {
    j["read_gbs"] = read_gbs;
    j["read_source"] = read_source;
  }
  j["matmul_tflops"] = matmul_tflops > 0 ? Json(matmul_tflops) : Json(nullptr);
  j["matmul_source"] = matmul_source;
  j["matmul_measured"] = matmul_measured;
  j["ridge_flop_per_byte"] = ridge_intensity() > 0 ? Json(ridge_intensity()) : Json(nullptr);
  if (!datasheet_source.empty())
    j["datasheet"] = {{"bandwidth_gbs", datasheet_bandwidth_gbs},
                      {"matmul_tflops", datasheet_matmul_tflops},
                      {"source", datasheet_source}};
  return j;
}

std::vector<std::string> named_targets() {
  std::vector<std::string> v;
  for (const GpuRow& r : kGpuRows) v.push_back(r.name);
  v.push_back("cpu");
  return v;
}

TargetFacts named_target(const std::string& name) {
  for (const GpuRow& r : kGpuRows)
    if (name == r.name) return from_row(r);
  if (name == "cpu") return host_cpu_target(false);
  std::string known;
  for (const auto& n : named_targets()) known += (known.empty() ? "" : ", ") + n;
  throw_input("--target", json_quote(name) + " is not one of " + known);
}

TargetFacts host_cpu_target(bool measure) {
  TargetFacts t;
  t.name = "cpu";
  t.kind = "cpu";
  t.arch = host_arch();
  t.device = t.arch + " host";
  t.origin = "host";
  const unsigned hc = std::thread::hardware_concurrency();
  t.cores = hc == 0 ? 1 : int(hc);
  host_simd(&t.simd_floats, &t.simd_registers);
  long llc = ::sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (llc <= 0) llc = ::sysconf(_SC_LEVEL2_CACHE_SIZE);
  t.l2_bytes = llc > 0 ? llc : 0;
  // Nominal: a DDR4/DDR5 share of 20 GB/s and 2.5 GHz x one vector multiply + add per cycle.
  t.datasheet_bandwidth_gbs = 20.0;
  t.datasheet_matmul_tflops = double(t.cores) * 2.5e9 * double(t.simd_floats) * 2.0 / 1e12;
  t.datasheet_source = "nominal figures (no datasheet for an unknown host)";
  if (measure) {
    t.bandwidth_gbs = measure_copy_gbs(t.cores);
    t.bandwidth_source = "measured: 64 MiB copy on all cores, best of 3";
    t.bandwidth_measured = true;
    t.matmul_tflops = measure_fma_tflops(t.cores);
    t.matmul_source = "measured: f32 multiply-add loop on all cores";
    t.matmul_measured = true;
  } else {
    t.bandwidth_gbs = t.datasheet_bandwidth_gbs;
    t.bandwidth_source = "nominal: 20 GB/s";
    t.matmul_tflops = t.datasheet_matmul_tflops;
    t.matmul_source = "nominal: cores x 2.5 GHz x " + std::to_string(t.simd_floats) + " lanes x 2";
  }
  return t;
}

std::string host_arch() {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "aarch64";
#else
  return "unknown";
#endif
}

std::string host_cpu_name() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0 || line.rfind("Model", 0) == 0)
      if (auto c = line.find(':'); c != std::string::npos) {
        std::string v = line.substr(c + 1);
        v.erase(0, v.find_first_not_of(" \t"));
        return v;
      }
  return "unknown CPU";
}

void apply_target_table(TargetFacts& t) {
  // Ceilings from the table only for the same chip (name and SM count), so an H100 PCIe does
  // not inherit the SXM part's bandwidth.
  t.bandwidth_source = "unknown: device not in the target table";
  t.matmul_source = t.bandwidth_source;
  for (const GpuRow& r : kGpuRows)
    if (t.device.find(r.match) != std::string::npos && t.sm_count == r.sm_count && t.arch == r.arch) {
      t.name = r.name;
      fill_ceilings(t, r);
    }
}

bool detect_gpu_target(TargetFacts* out, std::string* why_not) {
  const Backend* b = find_backend("cuda");
  if (!b) {
    if (why_not) *why_not = "this build has no CUDA backend";
    return false;
  }
  return b->detect_target(out, why_not);
}

bool measure_gpu_ceilings(TargetFacts* t, std::string* why_not, size_t bytes) {
  if (t->kind != "gpu" || t->origin != "detected") {
    if (why_not) *why_not = "the target is not a detected GPU";
    return false;
  }
  const Backend* b = find_backend("cuda");
  if (!b) {
    if (why_not) *why_not = "this build has no CUDA backend";
    return false;
  }
  return b->measure_ceilings(t, bytes, why_not);
}

TargetFacts resolve_target(const std::string& requested, const std::string& backend, bool measure_cpu,
                           std::string* note) {
  if (!requested.empty()) {
    TargetFacts t = requested == "cpu" ? host_cpu_target(measure_cpu) : named_target(requested);
    if (backend == "cpu" && t.kind != "cpu") throw_input("--target", "backend cpu needs --target cpu");
    if (backend == "cuda" && t.kind != "gpu") throw_input("--target", "backend cuda needs a GPU target");
    return t;
  }
  if (backend == "cpu") return host_cpu_target(measure_cpu);
  TargetFacts t;
  std::string why;
  if (detect_gpu_target(&t, &why)) return t;
  if (note) *note = "no GPU detected (" + why + "): target h200 from the table";
  return named_target("h200");
}

}  // namespace ac
