#pragma once
// The library route for linear layers: cuBLAS GEMM with f32 accumulation. Activations are f32 in
// this backend, so for bf16/f16 weights they are cast to the weight dtype first (what a bf16
// PyTorch model computes); f32 weights use an f32 GEMM with TF32 off.
#include <cublas_v2.h>

#include <vector>

#include "agentcompile/core/dtype.h"
#include "backends/cuda/device.h"

namespace ac::cuda {

[[noreturn]] void throw_cublas_error(cublasStatus_t s, const char* call, const char* file, int line);

#define CUBLAS_CHECK(call)                                                                          \
  do {                                                                                              \
    cublasStatus_t ac_cublas_status_ = (call);                                                      \
    if (ac_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                                 \
      ::ac::cuda::throw_cublas_error(ac_cublas_status_, #call, __FILE__, __LINE__);                 \
  } while (0)

class CublasHandle {
 public:
  explicit CublasHandle(CUstream s);
  ~CublasHandle();
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  cublasHandle_t get() const { return h_; }

 private:
  cublasHandle_t h_ = nullptr;
};

// out[n, out_dim] (f32) = x[n, in] (dtype t) * w[out_dim, in]^T (dtype t), row-major.
void cublas_linear(const CublasHandle& h, DType t, const void* x, const void* w, float* out, long long n, long long in,
                   long long out_dim);
// The same GEMM into out of dtype out_t (f32 or t), f32 accumulation, plus beta times what out
// holds (beta 1 adds the product into a residual stream, no separate add pass).
void cublas_gemm(const CublasHandle& h, DType t, const void* x, const void* w, void* out, DType out_t, long long n,
                 long long in, long long out_dim, float beta);

// One GEMM per group g, cublas_gemm's product with beta 0: out_g [m[g], out_dim] (t) =
// x_g [m[g], in] (t) * w_g [out_dim, in]^T. x, w, out: device arrays of m.size() device pointers.
// One call for all the groups (cublasGemmGroupedBatchedEx): a prompt's experts, each with its tokens.
// The output has the inputs' type: the grouped call supports no f32 output from 16-bit inputs
// (CUBLAS_STATUS_NOT_SUPPORTED on the H100 with CUDA 13.0).
void cublas_grouped_gemm(const CublasHandle& h, DType t, const void* const* x, const void* const* w, void* const* out,
                         const std::vector<int>& m, long long in, long long out_dim);

}  // namespace ac::cuda
