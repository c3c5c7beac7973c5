#pragma once
// NVRTC: rendered kernel source -> CUBIN for one architecture, with the resource usage ptxas
// reports (registers, spills, shared memory, stack). Needs no GPU. Results are cached on disk
// (kernel_cache.h) under a key hashing the source, every included template, the options, the
// NVRTC version and the architecture.
#include <string>
#include <vector>

namespace ac::cuda {

struct JitRequest {
  std::string name;    // the variant name; also the extern "C" entry point
  std::string source;  // rendered source (includes templates from kernels/cuda by relative path)
  std::string arch;    // "sm_80", "sm_90", "sm_90a", "sm_100", ...
  std::vector<std::string> options;  // extra NVRTC options
};

struct JitResult {
  bool ok = false;
  std::string error;   // compile failure (first lines of the log) when !ok
  std::string log;     // full NVRTC/ptxas log
  std::string cubin;
  std::string key;     // cache key
  int registers = -1;
  int spill_bytes = -1;   // spill stores + loads
  int shared_bytes = -1;  // static shared memory
  int stack_bytes = -1;
  double compile_ms = 0.0;
  bool from_cache = false;
};

// Architectures the JIT targets.
const std::vector<std::string>& supported_archs();
bool is_supported_arch(const std::string& arch);

std::string nvrtc_version_string();  // "13.0"
// Compiles (or fetches from the cache when `use_cache`); never throws for a compile failure of
// the kernel itself (that is a recorded result), only for a broken NVRTC installation.
JitResult jit_compile(const JitRequest& req, bool use_cache = true);

// The cache key jit_compile gives `req` (without compiling).
std::string jit_key(const JitRequest& req);

// Parses "ptxas info : Used 32 registers, ..." lines into r (exposed for tests).
void parse_ptxas_log(const std::string& log, JitResult& r);

}  // namespace ac::cuda
