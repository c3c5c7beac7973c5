#include "backends/cuda/cuda_libs.h"

#include <dlfcn.h>

#include <mutex>
#include <string>
#include <vector>

#include "agentcompile/core/error.h"

namespace ac::cuda {

namespace {

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

}  // namespace ac::cuda
