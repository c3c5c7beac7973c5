#pragma once
// Software versions of the CUDA stack, for environment fingerprints (plans, tuning DB). No CUDA
// headers here.
#include <string>

namespace ac {

struct CudaVersions {
  std::string driver;   // "12.8" from cuDriverGetVersion, "" without a driver
  std::string toolkit;  // CUDA headers the build used ("12.8")
  std::string nvrtc;    // "12.8"
};
CudaVersions cuda_versions();

}  // namespace ac
