#pragma once
// What the CLI (`agentcompile kernels`) and the compiler may ask of the CUDA kernel families
// without including any CUDA header.
#include <cstddef>
#include <string>
#include <vector>

namespace ac {

struct KernelFamilyInfo {
  std::string op, name, header, description;
  std::vector<std::pair<std::string, std::vector<int>>> params;
  std::vector<std::string> type_params;
  size_t space_size = 0;
  bool needs_sm90a = false;
};

struct KernelCompileInfo {
  std::string name, op, family, arch;
  bool ok = false;
  std::string status;  // "ok" or the failure
  int registers = -1, shared_bytes = -1, spill_bytes = -1, stack_bytes = -1;
  double compile_ms = 0.0;
  bool from_cache = false;
};

bool cuda_backend_built();
std::vector<KernelFamilyInfo> list_kernel_families();
// Compiles a sample of every family's space for `arch` with NVRTC (no GPU needed), in parallel.
std::vector<KernelCompileInfo> compile_all_kernels(const std::string& arch, size_t max_per_family, bool use_cache);
std::vector<std::string> supported_kernel_archs();
std::string nvrtc_version();

}  // namespace ac
