#pragma once
// NVRTC, cuBLAS and cuBLASLt, opened with dlopen on first use. Linking them would load ~600 MB of shared
// libraries (cuBLASLt above all) into every process at start-up, also into commands and tests
// that never touch a GPU; opened lazily, only the CUDA paths pay for them, and a machine without
// the toolkit's libraries gets a clear error instead of a loader failure.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <nvrtc.h>

namespace ac::cuda {

#define AC_NVRTC_FUNCTIONS(X)                                                                                   \
  X(nvrtcVersion) X(nvrtcGetErrorString) X(nvrtcCreateProgram) X(nvrtcDestroyProgram) X(nvrtcCompileProgram)  \
  X(nvrtcGetProgramLogSize) X(nvrtcGetProgramLog) X(nvrtcGetCUBINSize) X(nvrtcGetCUBIN)

#define AC_CUBLAS_FUNCTIONS(X)                                                                                  \
  X(cublasCreate) X(cublasDestroy) X(cublasSetStream) X(cublasSetMathMode) X(cublasSetWorkspace)              \
  X(cublasGetStatusName) X(cublasGetStatusString) X(cublasGemmGroupedBatchedEx)

#define AC_CUBLASLT_FUNCTIONS(X)                                                                                \
  X(cublasLtCreate) X(cublasLtDestroy) X(cublasLtGetStatusName) X(cublasLtGetStatusString)                      \
  X(cublasLtMatmulDescCreate) X(cublasLtMatmulDescDestroy) X(cublasLtMatmulDescSetAttribute)                    \
  X(cublasLtMatrixLayoutCreate) X(cublasLtMatrixLayoutDestroy) X(cublasLtMatmulPreferenceCreate)                \
  X(cublasLtMatmulPreferenceDestroy) X(cublasLtMatmulPreferenceSetAttribute) X(cublasLtMatmulAlgoGetHeuristic)  \
  X(cublasLtMatmulAlgoConfigGetAttribute) X(cublasLtMatmul)

struct NvrtcApi {
#define AC_DECLARE_FN(name) decltype(&::name) name = nullptr;
  AC_NVRTC_FUNCTIONS(AC_DECLARE_FN)
};

struct CublasLtApi {
  AC_CUBLASLT_FUNCTIONS(AC_DECLARE_FN)
};

struct CublasApi {
  AC_CUBLAS_FUNCTIONS(AC_DECLARE_FN)
#undef AC_DECLARE_FN
  // C++ sees two overloads of cublasGemmEx (cublasComputeType_t and the legacy cudaDataType); this is the C one.
  cublasStatus_t (*cublasGemmEx)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                                 const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                                 cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t) = nullptr;
};

// Throw Error(BadInput, "cuda", why) when the library cannot be opened.
const NvrtcApi& nvrtc();
const CublasApi& cublas();
const CublasLtApi& cublaslt();

}  // namespace ac::cuda
