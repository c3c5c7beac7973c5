#include "backends/cuda/cublas_route.h"

#include <cuda_runtime_api.h>

#include "agentcompile/core/error.h"
#include "backends/cuda/cuda_libs.h"

namespace ac::cuda {

void throw_cublas_error(cublasStatus_t s, const char* call, const char* file, int line) {
  std::string where = file;
  if (auto p = where.rfind("/src/"); p != std::string::npos) where = where.substr(p + 1);
  throw_internal("cublas", where + ":" + std::to_string(line) + ": " + call + ": " + cublas().cublasGetStatusName(s) + ": " +
                               cublas().cublasGetStatusString(s));
}

CublasHandle::CublasHandle(CUstream s) {
  Device::get();  // primary context current on this thread; cuBLAS uses it through the runtime
  CUBLAS_CHECK(cublas().cublasCreate(&h_));
  CUBLAS_CHECK(cublas().cublasSetStream(h_, reinterpret_cast<cudaStream_t>(s)));
  CUBLAS_CHECK(cublas().cublasSetMathMode(h_, CUBLAS_DEFAULT_MATH));  // no TF32 for f32 GEMMs
}

CublasHandle::~CublasHandle() {
  if (h_) cublas().cublasDestroy(h_);
}

void cublas_linear(const CublasHandle& h, DType t, const void* x, const void* w, float* out, long long n, long long in,
                   long long out_dim) {
  cublas_gemm(h, t, x, w, out, DType::F32, n, in, out_dim, 0.0f);
}

void cublas_gemm(const CublasHandle& h, DType t, const void* x, const void* w, void* out, DType out_t, long long n,
                 long long in, long long out_dim, float beta) {
  // Column-major view: out^T [out_dim, n] = W [out_dim, in] (= W^T stored, op T) * x^T [in, n].
  const float alpha = 1.0f;
  auto cuda_type = [](DType d) { return d == DType::BF16 ? CUDA_R_16BF : d == DType::F16 ? CUDA_R_16F : CUDA_R_32F; };
  const cudaDataType_t ty = cuda_type(t);
  CUBLAS_CHECK(cublas().cublasGemmEx(h.get(), CUBLAS_OP_T, CUBLAS_OP_N, int(out_dim), int(n), int(in), &alpha, w, ty, int(in), x,
                                     ty, int(in), &beta, out, cuda_type(out_t), int(out_dim), CUBLAS_COMPUTE_32F,
                                     CUBLAS_GEMM_DEFAULT));
}

void cublas_grouped_gemm(const CublasHandle& h, DType t, const void* const* x, const void* const* w, void* const* out,
                         const std::vector<int>& m, long long in, long long out_dim) {
  if (m.empty()) return;
  // cublas_gemm's column-major view per group, every group of one problem.
  const size_t g = m.size();
  const std::vector<cublasOperation_t> ta(g, CUBLAS_OP_T), tb(g, CUBLAS_OP_N);
  const std::vector<int> rows(g, int(out_dim)), depth(g, int(in)), ld_in(g, int(in)), ld_out(g, int(out_dim)), size(g, 1);
  const std::vector<float> alpha(g, 1.0f), beta(g, 0.0f);
  auto cuda_type = [](DType d) { return d == DType::BF16 ? CUDA_R_16BF : d == DType::F16 ? CUDA_R_16F : CUDA_R_32F; };
  CUBLAS_CHECK(cublas().cublasGemmGroupedBatchedEx(h.get(), ta.data(), tb.data(), rows.data(), m.data(), depth.data(), alpha.data(),
                                                   w, cuda_type(t), ld_in.data(), x, cuda_type(t), ld_in.data(), beta.data(), out,
                                                   cuda_type(t), ld_out.data(), int(g), size.data(), CUBLAS_COMPUTE_32F));
}

}  // namespace ac::cuda
