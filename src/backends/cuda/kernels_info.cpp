#include "agentcompile/backends/cuda/kernels_info.h"

#include "agentcompile/core/threads.h"
#include "agentcompile/core/error.h"
#include "backends/cuda/device.h"
#include "backends/cuda/family.h"
#include "backends/cuda/nvrtc_jit.h"

namespace ac {

bool cuda_backend_built() { return true; }

bool detect_gpu_device(GpuDeviceFacts* out, std::string* why_not) {
  if (cuda::driver_api(why_not) == nullptr) return false;
  try {
    const cuda::DeviceInfo& d = cuda::Device::get().info();
    *out = GpuDeviceFacts{d.name, d.arch(), d.sm_count, d.max_threads_per_block, d.max_regs_per_block,
                          d.max_smem_per_block, d.max_smem_per_block_optin, d.l2_bytes, (long long)d.total_mem};
  } catch (const Error& e) {
    if (why_not) *why_not = e.reason();
    return false;
  }
  return true;
}

std::vector<std::string> supported_kernel_archs() { return cuda::supported_archs(); }
std::string nvrtc_version() { return cuda::nvrtc_version_string(); }

std::vector<KernelFamilyInfo> list_kernel_families() {
  std::vector<KernelFamilyInfo> out;
  for (const auto& f : cuda::families()) {
    KernelFamilyInfo i{f.op, f.name, f.header, f.description, {}, f.type_params, {}, cuda::space_size(f), f.needs_sm90a};
    for (const auto& d : f.params) i.params.emplace_back(d.name, d.values);
    for (DType t : f.type_domain) i.type_domain.emplace_back(dtype_user_name(t));
    out.push_back(std::move(i));
  }
  return out;
}

std::vector<KernelCompileInfo> compile_all_kernels(const std::string& arch, size_t max_per_family, bool use_cache) {
  std::vector<cuda::Variant> variants;
  for (const auto& f : cuda::families())
    for (auto& v : cuda::sample_variants(f, arch, max_per_family)) variants.push_back(std::move(v));
  std::vector<KernelCompileInfo> out(variants.size());
  parallel_for(variants.size(), 1, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) {
      const auto& v = variants[i];
      cuda::JitResult r = cuda::jit_compile(cuda::JitRequest{v.name(), v.source(), arch, {}}, use_cache);
      KernelCompileInfo& k = out[i];
      k.name = v.name();
      k.op = v.family->op;
      k.family = v.family->name;
      k.arch = arch;
      k.ok = r.ok;
      k.status = r.ok ? "ok" : r.error;
      k.registers = r.registers;
      k.shared_bytes = r.shared_bytes;
      k.spill_bytes = r.spill_bytes;
      k.stack_bytes = r.stack_bytes;
      k.compile_ms = r.compile_ms;
      k.from_cache = r.from_cache;
    }
  });
  return out;
}

}  // namespace ac
