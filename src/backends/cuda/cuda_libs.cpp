#include "backends/cuda/cuda_libs.h"

#include <dlfcn.h>
#include <stdlib.h>

#include <mutex>
#include <string>
#include <vector>

#include "agentcompile/core/error.h"

namespace ac::cuda {

namespace {

// NVRTC's cubin step goes through the CUDA compute cache (~/.nv/ComputeCache): for PTX it has seen
// before (in any process), it returns the cached cubin without running ptxas, so the log has no
// "--ptxas-options=-v" resource lines and a variant's registers and spills read as unknown (seen on
// the H200: KernelJit.CompilesReportsResourcesAndCaches after the GPU tests; the same is reported
// for cuda-python, NVIDIA/cuda-python#1124). Kernels are cached on disk by agentcompile itself
// (kernel_cache.h), with their resources, so the compute cache is off for the process: set before
// main, while no other thread can read the environment.
const bool kComputeCacheOff = [] { return ::setenv("CUDA_CACHE_DISABLE", "1", 1) == 0; }();

// The toolkit's own folder first (the binary is built against it), then the loader's search path.
void* open_library(const std::vector<std::string>& names, std::string& tried) {
  for (const auto& n : names) {
    for (const std::string& path : {std::string(AC_CUDA_LIB_DIR) + "/" + n, n}) {
      if (void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
      tried += (tried.empty() ? "" : ", ") + path;
    }
  }
  return nullptr;
}

template <class Api, class Fill>
const Api& load_once(const char* what, const std::vector<std::string>& names, Fill fill) {
  static Api api;
  static std::string failure;
  static std::once_flag once;
  std::call_once(once, [&] {
    std::string tried;
    void* h = open_library(names, tried);
    if (h == nullptr) {
      failure = std::string("cannot open ") + what + " (tried " + tried + ")";
      return;
    }
    std::string missing = fill(api, h);
    if (!missing.empty()) failure = std::string(what) + " lacks " + missing;
  });
  if (!failure.empty()) throw_input("cuda", failure);
  return api;
}

}  // namespace

const NvrtcApi& nvrtc() {
  return load_once<NvrtcApi>("NVRTC", {"libnvrtc.so.13", "libnvrtc.so"}, [](NvrtcApi& a, void* h) -> std::string {
#define AC_LOAD_FN(name) \
  if (!(a.name = reinterpret_cast<decltype(a.name)>(dlsym(h, #name)))) return #name;
    AC_NVRTC_FUNCTIONS(AC_LOAD_FN)
    return "";
  });
}

const CublasApi& cublas() {
  // cublas_v2.h maps cublasCreate to cublasCreate_v2 etc.; dlsym needs the real symbol, which the
  // macro expansion gives (stringised after expansion through AC_STR).
  return load_once<CublasApi>("cuBLAS", {"libcublas.so.13", "libcublas.so"}, [](CublasApi& a, void* h) -> std::string {
#define AC_STR2(x) #x
#define AC_STR(x) AC_STR2(x)
#define AC_LOAD_CUBLAS(name) \
  if (!(a.name = reinterpret_cast<decltype(a.name)>(dlsym(h, AC_STR(name))))) return AC_STR(name);
    AC_CUBLAS_FUNCTIONS(AC_LOAD_CUBLAS)
    AC_LOAD_CUBLAS(cublasGemmEx)
    return "";
  });
}

const CublasLtApi& cublaslt() {
  return load_once<CublasLtApi>("cuBLASLt", {"libcublasLt.so.13", "libcublasLt.so"}, [](CublasLtApi& a, void* h) -> std::string {
    AC_CUBLASLT_FUNCTIONS(AC_LOAD_FN)
    return "";
  });
}

}  // namespace ac::cuda
