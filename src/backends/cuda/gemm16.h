#pragma once
// The launch of the project's own prompt GEMMs over 16-bit matrices, gemm.wgmma (sm_90a,
// kernels/cuda/gemm/wgmma.cuh) and gemm.mma (sm_80+, kernels/cuda/gemm/mma.cuh), shared by the
// prompt route, the kernel sweep and the GPU tests: the parameters (at gemm.wgmma's LOAD 1 with the
// TMA tensor maps of A and B its producer thread hands to the copy engine), the grid and the
// dynamic shared memory of a point.
#include "agentcompile/core/dtype.h"
#include "backends/cuda/family.h"
#include "backends/cuda/kernel_loader.h"

extern "C" {
#include "../../../kernels/cuda/common/params.h"
}

namespace ac::cuda {

// C [m, n] = A [m, k] B [n, k]^T, 16-bit A and B of type `w` (EPI 3: C = silu(A B^T) * (A B2^T), B
// the gate projection and B2 the up projection, both [n, k] with row stride ldb); the point `v`
// says whether the maps are needed (gemm.wgmma LOAD 1) and their B boxes (BN rows, EPI 3 BN / 2
// of each; divided by CLUSTER, each block of a pair copying its share). Needs the driver for the maps.
GemmW16Params gemm16_params(const Variant& v, DType w, const void* a, const void* b, void* c, long long m, long long n,
                            long long k, long long lda, long long ldb, long long ldc, const void* b2 = nullptr);
// The grid of that GEMM: a block per 128 rows of C and BN (EPI 3: BN / 2) of its columns, the rows
// rounded up to whole clusters (gemm.wgmma's CLUSTER); gemm.wgmma's SCHED 1 (persistent blocks):
// min(tiles, sms) blocks along x (`sms`: the GPU's multiprocessors; 0: a block per tile).
Dim3 gemm16_grid(const Variant& v, long long m, long long n, int sms);
// Its dynamic shared memory (gemm_wgmma_smem or gemm_mma_smem of the point's BN and STAGES).
int gemm16_smem(const Variant& v);
// Why a GEMM of K `k` and N `n` cannot run on either family ("" when it can): K whole 64-wide
// steps (gemm.wgmma's; gemm.mma needs 32), N a multiple of 8 (16-byte rows of C and of the boxes).
std::string gemm16_shape_reason(long long k, long long n);

}  // namespace ac::cuda
