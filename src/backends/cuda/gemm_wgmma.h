#pragma once
// gemm.wgmma's launch parameters (kernels/cuda/gemm/wgmma.cuh), shared by the prompt route, the
// kernel sweep and the GPU test: the matrices, and at LOAD 1 the TMA tensor maps of A and B that
// the kernel's producer thread hands to the copy engine.
#include "backends/cuda/family.h"
#include "backends/cuda/kernel_loader.h"
#include "agentcompile/core/dtype.h"

extern "C" {
#include "../../../kernels/cuda/common/params.h"
}

namespace ac::cuda {

// C [m, n] = A [m, k] B [n, k]^T, 16-bit A and B of type `w` (EPI 3: C = silu(A B^T) * (A B2^T), B
// the gate projection and B2 the up projection, both [n, k] with row stride ldb); the point `v` of
// gemm.wgmma says whether the maps are needed (LOAD 1) and their B boxes (BN rows, EPI 3 BN / 2
// of each). Needs the driver at LOAD 1.
GemmW16Params gemm_wgmma_params(const Variant& v, DType w, const void* a, const void* b, void* c, long long m, long long n,
                                long long k, long long lda, long long ldb, long long ldc, const void* b2 = nullptr);
// The grid of that GEMM: a block per 128 rows of C and BN (EPI 3: BN / 2) of its columns.
Dim3 gemm_wgmma_grid(const Variant& v, long long m, long long n);

}  // namespace ac::cuda
