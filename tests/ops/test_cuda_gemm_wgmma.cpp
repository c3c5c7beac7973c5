// gemm.wgmma (kernels/cuda/gemm/wgmma.cuh) against a double-precision C = A B^T computed here from
// the same 16-bit A and B: every point of its space, for row counts that leave partial 128-row
// tiles (1, 7, 127, 128, 129, 300), a column count that leaves a partial BN tile (200), and K of
// one 64-wide step (fewer steps than stages) and of eight. f32 C (EPI 1) within f32 accumulation
// error (1e-4); 16-bit C (EPI 0) within one rounding of it; EPI 2 adds into a C that is already there; no
// element outside m x n written. Skipped, with the reason, without an sm_90 GPU (wgmma is sm_90a).
#include <gtest/gtest.h>

#include <cmath>

#include "backends/cuda/family.h"
#include "backends/cuda/gemm_wgmma.h"
#include "backends/cuda/kernel_loader.h"
#include "ops/cuda_test_util.h"

extern "C" {
#include "../../kernels/cuda/common/params.h"
}

using namespace ac;
using namespace ac::test;

namespace {

TEST(CudaGemmWgmma, EveryPointMatchesDoublePrecision) {
  AC_REQUIRE_GPU();
  if (arch() != "sm_90") GTEST_SKIP() << "gemm.wgmma needs an sm_90 GPU (wgmma, the sm_90a target); this one is " << arch();
  const cuda::Family& f = cuda::find_family("gemm", "wgmma");
  const long long n = 200, ldc = 208;  // C rows padded: the columns past n must stay untouched
  for (long long k : {64LL, 512LL})
    for (long long m : {1LL, 7LL, 127LL, 128LL, 129LL, 300LL}) {
      std::vector<float> a_r, b_r;
      const std::vector<uint8_t> a16 = store_as(random_vec(size_t(m * k), 71), DType::BF16, a_r);
      const std::vector<uint8_t> b16 = store_as(random_vec(size_t(n * k), 72), DType::BF16, b_r);
      const std::vector<float> resid = random_vec(size_t(m * ldc), 73);
      std::vector<double> want(size_t(m * n));
      for (long long i = 0; i < m; ++i)
        for (long long j = 0; j < n; ++j) {
          double s = 0;
          for (long long q = 0; q < k; ++q) s += double(a_r[size_t(i * k + q)]) * b_r[size_t(j * k + q)];
          want[size_t(i * n + j)] = s;
        }
      auto da = to_device(a16), db = to_device(b16);
      for (int bn : {64, 128})
        for (int stages : {3, 4, 5})
          for (int epi : {0, 1, 2})
          for (int pipe : {0, 1})
          for (int load : {0, 1}) {
            const cuda::Variant v = cuda::make_variant(
                f, {{"BLOCK", 384}, {"BN", bn}, {"STAGES", stages}, {"EPI", epi}, {"PIPE", pipe}, {"LOAD", load}},
                {DType::BF16}, "sm_90a");
            SCOPED_TRACE(v.name() + " m " + std::to_string(m) + " k " + std::to_string(k));
            auto dc = epi == 2 ? to_device(resid) : poisoned(size_t(m * ldc));  // NaN: in f32 and in both halves as bf16
            const GemmW16Params p =
                cuda::gemm_wgmma_params(v, DType::BF16, da.as<void>(), db.as<void>(), dc.as<void>(), m, n, k, k, k, ldc);
            const cuda::Dim3 grid{unsigned((n + bn - 1) / bn), unsigned((m + 127) / 128)};
            cuda::launch_kernel(cuda::load_kernel(v), grid, 384, size_t(cuda::gemm_wgmma_smem(bn, stages)), stream(), &p);
            double err = 0, norm = 0;
            size_t outside = 0;
            if (epi == 0) {
              const std::vector<uint16_t> got = to_host<uint16_t>(dc, size_t(m * ldc));
              for (long long i = 0; i < m; ++i)
                for (long long j = 0; j < ldc; ++j) {
                  const uint16_t g = got[size_t(i * ldc + j)];
                  if (j >= n) {  // untouched: the poison's low (even) or high (odd) half
                    outside += g != (j % 2 ? 0x7fc0 : 0x0000);
                    continue;
                  }
                  const double w = want[size_t(i * n + j)];
                  err += (bf16_to_f32(g) - w) * (bf16_to_f32(g) - w);
                  norm += w * w;
                }
              EXPECT_LE(std::sqrt(err / norm), 4e-3);
              EXPECT_EQ(outside, 0u);
            } else {
              const std::vector<float> got = to_host<float>(dc, size_t(m * ldc));
              for (long long i = 0; i < m; ++i)
                for (long long j = 0; j < ldc; ++j) {
                  const float g = got[size_t(i * ldc + j)];
                  if (j >= n) {  // untouched: the poison, or the residual as it was
                    outside += epi == 2 ? g != resid[size_t(i * ldc + j)] : !std::isnan(g);
                    continue;
                  }
                  const double w = want[size_t(i * n + j)] + (epi == 2 ? resid[size_t(i * ldc + j)] : 0.0);
                  err += (g - w) * (g - w);
                  norm += w * w;
                }
              EXPECT_LE(std::sqrt(err / norm), 1e-4);
              EXPECT_EQ(outside, 0u);
            }
          }
    }
}

}  // namespace
