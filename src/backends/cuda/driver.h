#pragma once
// The CUDA driver API, reached through cudaGetDriverEntryPointByVersion: the binary links only
// cudart_static (which loads libcuda lazily), so it starts on machines without a driver and says
// "no driver" instead of failing to load (../shared/GPU.md). Every call is checked by CU_CHECK,
// which throws ac::Error naming file, line, call and the driver's error string.
#include <cuda.h>

#include <string>

namespace ac::cuda {

#define AC_CU_FUNCTIONS(X)                                                                                      \
  X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString) X(cuDeviceGet) X(cuDeviceGetCount)     \
  X(cuDeviceGetName) X(cuDeviceGetAttribute) X(cuDeviceTotalMem) X(cuDevicePrimaryCtxRetain)                    \
  X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent) X(cuCtxSynchronize) X(cuMemGetInfo) X(cuMemAlloc)             \
  X(cuMemFree) X(cuMemAllocHost) X(cuMemFreeHost) X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync)                     \
  X(cuMemcpyDtoDAsync) X(cuMemsetD8Async) X(cuMemsetD32Async) X(cuStreamCreate) X(cuStreamDestroy)             \
  X(cuStreamSynchronize) X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord) X(cuEventSynchronize)             \
  X(cuEventElapsedTime) X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction) X(cuFuncGetAttribute)     \
  X(cuFuncSetAttribute) X(cuLaunchKernel) X(cuLaunchKernelEx) X(cuStreamBeginCapture) X(cuStreamEndCapture)    \
  X(cuGraphInstantiateWithFlags) X(cuGraphLaunch) X(cuGraphDestroy) X(cuGraphExecDestroy) X(cuGraphExecUpdate)      \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor) X(cuModuleGetGlobal) X(cuTensorMapEncodeTiled)

struct DriverApi {
#define AC_CU_DECLARE(name) decltype(&::name) name = nullptr;
  AC_CU_FUNCTIONS(AC_CU_DECLARE)
#undef AC_CU_DECLARE
};

// The loaded table, or nullptr with the reason (no driver, too old, no device) in *why_not.
const DriverApi* driver_api(std::string* why_not = nullptr);
// The table; throws Error(BadInput, "cuda", reason) when there is none.
const DriverApi& drv();

[[noreturn]] void throw_cu_error(CUresult r, const char* call, const char* file, int line);

}  // namespace ac::cuda

#define CU_CHECK(call)                                                                       \
  do {                                                                                       \
    CUresult ac_cu_status_ = (call);                                                         \
    if (ac_cu_status_ != CUDA_SUCCESS) ::ac::cuda::throw_cu_error(ac_cu_status_, #call, __FILE__, __LINE__); \
  } while (0)
