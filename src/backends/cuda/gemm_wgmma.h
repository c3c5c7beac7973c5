#pragma once
// gemm.wgmma's launch parameters (kernels/cuda/gemm/wgmma.cuh), shared by the prompt route, the
// kernel sweep and the GPU test: the matrices, and at LOAD 1 the TMA tensor maps of A and B that
// the kernel's producer thread hands to the copy engine.
#include "backends/cuda/family.h"
#include "agentcompile/core/dtype.h"

extern "C" {
#include "../../../kernels/cuda/common/params.h"
}

namespace ac::cuda {

// C [m, n] = A [m, k] B [n, k]^T, 16-bit A and B of type `w`; the point `v` of gemm.wgmma says
// whether the maps are needed (LOAD 1) and their B box (BN rows). Needs the driver at LOAD 1.
GemmW16Params gemm_wgmma_params(const Variant& v, DType w, const void* a, const void* b, void* c, long long m, long long n,
                                long long k, long long lda, long long ldb, long long ldc);

}  // namespace ac::cuda
