#include "backends/cuda/kernel_loader.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>

#include "agentcompile/core/error.h"
#include "backends/cuda/timeline.h"

namespace ac::cuda {

namespace {
struct Prebuilt {
  std::string key, cubin;
};
std::mutex prebuilt_mu;
std::map<std::string, Prebuilt>& prebuilt() {
  static std::map<std::string, Prebuilt> m;
  return m;
}
}  // namespace

void use_prebuilt_kernel(const std::string& name, const std::string& source_key, std::string cubin) {
  if (source_key.empty() || cubin.empty()) return;  // older plans carry no key: compile as usual
  std::lock_guard<std::mutex> lock(prebuilt_mu);
  prebuilt()[name] = Prebuilt{source_key, std::move(cubin)};
}

const std::string* prebuilt_kernel_for(const Variant& v) {
  std::lock_guard<std::mutex> lock(prebuilt_mu);
  auto it = prebuilt().find(v.name());
  if (it == prebuilt().end()) return nullptr;
  // Same name, other source (the engine's templates changed since the plan was built): stale.
  if (it->second.key != jit_key(JitRequest{v.name(), v.source(), v.arch, {}})) return nullptr;
  return &it->second.cubin;
}

void clear_prebuilt_kernels() {
  std::lock_guard<std::mutex> lock(prebuilt_mu);
  prebuilt().clear();
}

std::string timeline_source(const Variant& v) {
  const std::string loose = v.source_with(true, 0);
  const JitResult plain = jit_compile(JitRequest{v.name(), v.source_with(false, 0), v.arch, {}});
  if (!plain.ok || plain.registers <= 0) return loose;  // its own error shows when compiled
  const std::string bounded =
      v.source_with(true, std::max(1, resident_blocks_by_registers(plain.registers, v.threads(), v.arch)));
  // Spilling to keep the bound would distort the timing the other way (the cluster attention did,
  // 104 bytes at 40 registers, before the record's slot moved to the block's start).
  const JitResult b = jit_compile(JitRequest{v.name(), bounded, v.arch, {}});
  return b.ok && b.spill_bytes > plain.spill_bytes ? loose : bounded;
}

const LoadedKernel& load_kernel(const Variant& v) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<LoadedKernel>> loaded;
  const std::string name = v.name();
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = loaded.find(name); it != loaded.end()) return *it->second;

  Device& dev = Device::get();
  auto k = std::make_unique<LoadedKernel>();
  k->name = name;
  if (const std::string* cubin = prebuilt_kernel_for(v)) {  // shipped with the plan: no NVRTC
    k->jit.ok = true;
    k->jit.cubin = *cubin;
    k->jit.from_cache = true;
  } else {
    k->jit = jit_compile(JitRequest{name, timeline_enabled() ? timeline_source(v) : v.source(), v.arch, {}});
  }
  if (!k->jit.ok) throw_internal(name, k->jit.error);
  CUmodule mod;
  CU_CHECK(drv().cuModuleLoadData(&mod, k->jit.cubin.data()));
  CU_CHECK(drv().cuModuleGetFunction(&k->fn, mod, name.c_str()));
  timeline_bind(mod, name);  // the developer timeline, when on
  auto attr = [&](CUfunction_attribute a) {
    int x = 0;
    CU_CHECK(drv().cuFuncGetAttribute(&x, a, k->fn));
    return x;
  };
  k->max_threads = attr(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  k->registers = attr(CU_FUNC_ATTRIBUTE_NUM_REGS);
  k->static_smem = attr(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
  k->local_bytes = attr(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES);
  // A compiled-in cluster of more than 8 blocks (attn_decode.cluster's CLUSTER 16) launches only
  // once the function opts in to non-portable cluster sizes.
  const int cluster = std::max(1, attr(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH)) *
                      std::max(1, attr(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT)) *
                      std::max(1, attr(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH));
  if (cluster > 8) CU_CHECK(drv().cuFuncSetAttribute(k->fn, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1));
  (void)dev;
  return *loaded.emplace(name, std::move(k)).first->second;
}

void launch_kernel(const LoadedKernel& k, Dim3 grid, unsigned threads, size_t dynamic_smem, CUstream s,
                   const void* params, bool pdl, int carveout, int launch_carveout) {
  const DeviceInfo& info = Device::get().info();
  if (threads == 0 || int(threads) > k.max_threads)
    throw_internal(k.name, "launch with " + std::to_string(threads) + " threads; the kernel allows " +
                               std::to_string(k.max_threads));
  const size_t smem = dynamic_smem + size_t(k.static_smem);
  if (smem > size_t(info.max_smem_per_block_optin))
    throw_internal(k.name, "needs " + std::to_string(smem) + " bytes of shared memory; the device has " +
                               std::to_string(info.max_smem_per_block_optin));
  if (smem > size_t(info.max_smem_per_block))
    CU_CHECK(drv().cuFuncSetAttribute(k.fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(dynamic_smem)));
  // The caller's shared-memory carveout (the fast path gives every kernel of its chain the same
  // one: faster decode on the H200, bench/results/2026-12-01-smem-carveout/); -1 restores the
  // driver's choice. Set only when it differs from the function's.
  if (k.carveout.exchange(carveout) != carveout)
    CU_CHECK(drv().cuFuncSetAttribute(k.fn, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, carveout));
  if (grid.x == 0 || grid.y == 0 || grid.z == 0) return;  // nothing to do
  void* args[] = {const_cast<void*>(params)};
  if (!pdl && launch_carveout < 0) {
    CU_CHECK(drv().cuLaunchKernel(k.fn, grid.x, grid.y, grid.z, threads, 1, 1, unsigned(dynamic_smem), s, args, nullptr));
    return;
  }
  CUlaunchAttribute attrs[2]{};
  unsigned n = 0;
  if (pdl) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attrs[n++].value.programmaticStreamSerializationAllowed = 1;
  }
  if (launch_carveout >= 0) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT;
    attrs[n++].value.sharedMemCarveout = unsigned(launch_carveout);
  }
  CUlaunchConfig cfg{};
  cfg.gridDimX = grid.x;
  cfg.gridDimY = grid.y;
  cfg.gridDimZ = grid.z;
  cfg.blockDimX = threads;
  cfg.blockDimY = 1;
  cfg.blockDimZ = 1;
  cfg.sharedMemBytes = unsigned(dynamic_smem);
  cfg.hStream = s;
  cfg.attrs = attrs;
  cfg.numAttrs = n;
  CU_CHECK(drv().cuLaunchKernelEx(&cfg, k.fn, args, nullptr));
}

unsigned elementwise_blocks(long long count, unsigned threads) {
  long long b = (count + threads - 1) / threads;
  return unsigned(std::clamp<long long>(b, 1, 65535LL * 16));
}

}  // namespace ac::cuda
