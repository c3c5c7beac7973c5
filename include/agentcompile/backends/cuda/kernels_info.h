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
  std::vector<std::string> type_domain;  // what each type parameter may be bound to ("bf16", "f16", ...)
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

// The GPU the CUDA backend would use, as the compiler's target facts need it.
struct GpuDeviceFacts {
  std::string name, arch;  // "NVIDIA H200", "sm_90"
  int sm_count = 0, max_threads_per_block = 0, regs_per_block = 0;
  long long smem_per_block = 0, smem_per_block_optin = 0, l2_bytes = 0, memory_bytes = 0;
};
// False (why in *why_not) when no driver or GPU is usable.
bool detect_gpu_device(GpuDeviceFacts* out, std::string* why_not);

bool cuda_backend_built();
std::vector<KernelFamilyInfo> list_kernel_families();
// Compiles a sample of every family's space for `arch` with NVRTC (no GPU needed), in parallel.
std::vector<KernelCompileInfo> compile_all_kernels(const std::string& arch, size_t max_per_family, bool use_cache);
std::vector<std::string> supported_kernel_archs();
std::string nvrtc_version();

}  // namespace ac
