#include "backends/cuda/driver.h"

#include <cuda_runtime_api.h>

#include <mutex>

#include "agentcompile/core/error.h"

namespace ac::cuda {

namespace {

struct Loaded {
  DriverApi api;
  bool ok = false;
  std::string why;
};

Loaded load() {
  Loaded l;
  int runtime_driver = 0;
  // cudart_static answers this without a driver: "CUDA driver version is insufficient" or 0.
  cudaError_t e = cudaDriverGetVersion(&runtime_driver);
  if (e != cudaSuccess || runtime_driver == 0) {
    l.why = "no CUDA driver on this machine";
    return l;
  }
  auto get = [&](const char* symbol, void** fn) {
    cudaDriverEntryPointQueryResult status{};
    cudaError_t r = cudaGetDriverEntryPointByVersion(symbol, fn, CUDA_VERSION, cudaEnableDefault, &status);
    if (r != cudaSuccess || status != cudaDriverEntryPointSuccess || *fn == nullptr) {
      if (l.why.empty()) l.why = std::string("the CUDA driver lacks ") + symbol + " (driver too old?)";
      return false;
    }
    return true;
  };
  bool all = true;
#define AC_CU_LOAD(name) all = get(#name, reinterpret_cast<void**>(&l.api.name)) && all;
  AC_CU_FUNCTIONS(AC_CU_LOAD)
#undef AC_CU_LOAD
  if (!all) return l;
  if (l.api.cuInit(0) != CUDA_SUCCESS) {
    l.why = "cuInit failed (no usable GPU)";
    return l;
  }
  int count = 0;
  if (l.api.cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) {
    l.why = "no CUDA device";
    return l;
  }
  l.ok = true;
  return l;
}

}  // namespace

const DriverApi* driver_api(std::string* why_not) {
  static const Loaded loaded = load();
  if (!loaded.ok) {
    if (why_not) *why_not = loaded.why;
    return nullptr;
  }
  return &loaded.api;
}

const DriverApi& drv() {
  std::string why;
  const DriverApi* api = driver_api(&why);
  if (api == nullptr) throw_input("cuda", why);
  return *api;
}

void throw_cu_error(CUresult r, const char* call, const char* file, int line) {
  const char* name = "?";
  const char* text = "?";
  if (const DriverApi* api = driver_api()) {
    api->cuGetErrorName(r, &name);
    api->cuGetErrorString(r, &text);
  }
  std::string where = std::string(file);
  if (auto p = where.rfind("/src/"); p != std::string::npos) where = where.substr(p + 1);
  throw_internal("cuda", where + ":" + std::to_string(line) + ": " + call + ": " + name + ": " + text);
}

}  // namespace ac::cuda
