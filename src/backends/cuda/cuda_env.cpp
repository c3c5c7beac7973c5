#include "agentcompile/backends/cuda/cuda_env.h"

#include "agentcompile/backends/cuda/kernels_info.h"
#include "backends/cuda/driver.h"

namespace ac {

namespace {
std::string dotted(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }
}  // namespace

CudaVersions cuda_versions() {
  CudaVersions v;
  v.toolkit = dotted(CUDA_VERSION);
  if (const cuda::DriverApi* d = cuda::driver_api(nullptr)) {
    int ver = 0;
    if (d->cuDriverGetVersion(&ver) == CUDA_SUCCESS) v.driver = dotted(ver);
  }
  try {
    v.nvrtc = nvrtc_version();
  } catch (const std::exception&) {
    v.nvrtc = "";  // no NVRTC library: the fingerprint says so
  }
  return v;
}

}  // namespace ac
