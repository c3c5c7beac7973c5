// gemm.wgmma (kernels/cuda/gemm/wgmma.cuh) against a double-precision C = A B^T computed here from
// the same 16-bit A and B: every point of its space, for row counts that leave partial 128-row
// tiles (1, 7, 127, 128, 129, 300), a column count that leaves a partial BN tile (200), and K of
// one 64-wide step (fewer steps than stages) and of eight. f32 C (EPI 1) within f32 accumulation
// error (1e-4); 16-bit C (EPI 0) within one rounding of it; EPI 2 adds into a C that is already there; no
// element outside m x n written (EPI 0-2; EPI 3, SwiGLU in the epilogue, has its own test below).
// Skipped, with the reason, without an sm_90 GPU (wgmma is sm_90a).
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

// A 16-bit C [m, ldc] read back against `want` [m, n]: the relative l2 error over the first n
// columns, and how many of the columns past n changed from the poison (NaN's low half at even
// columns, its high half at odd ones).
struct Check16 {
  double rel = 0;
  size_t outside = 0;
};
Check16 check16(const std::vector<uint16_t>& got, const std::vector<double>& want, long long m, long long n, long long ldc) {
  double err = 0, norm = 0;
  Check16 r;
  for (long long i = 0; i < m; ++i)
    for (long long j = 0; j < ldc; ++j) {
      const uint16_t g = got[size_t(i * ldc + j)];
      if (j >= n) {
        r.outside += g != (j % 2 ? 0x7fc0 : 0x0000);
        continue;
      }
      const double w = want[size_t(i * n + j)];
      err += (bf16_to_f32(g) - w) * (bf16_to_f32(g) - w);
      norm += w * w;
    }
  r.rel = std::sqrt(err / norm);
  return r;
}

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
            cuda::launch_kernel(cuda::load_kernel(v), cuda::gemm_wgmma_grid(v, m, n), 384,
                                size_t(cuda::gemm_wgmma_smem(bn, stages)), stream(), &p);
            double err = 0, norm = 0;
            size_t outside = 0;
            if (epi == 0) {
              const Check16 r = check16(to_host<uint16_t>(dc, size_t(m * ldc)), want, m, n, ldc);
              EXPECT_LE(r.rel, 4e-3);
              EXPECT_EQ(r.outside, 0u);
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

// EPI 3, the MLP's gate/up with SwiGLU in the epilogue: C [m, n] = silu(A G^T) * (A U^T) with both
// products rounded to bf16 first (as the two GEMMs' outputs the separate pass reads), against the
// same computed here in double from double-precision products, at every BN, STAGES, PIPE and LOAD;
// n = 200 leaves a partial tile of BN / 2 gate and up rows; nothing past n written.
TEST(CudaGemmWgmma, SwigluEpilogueMatchesDoublePrecision) {
  AC_REQUIRE_GPU();
  if (arch() != "sm_90") GTEST_SKIP() << "gemm.wgmma needs an sm_90 GPU (wgmma, the sm_90a target); this one is " << arch();
  const cuda::Family& f = cuda::find_family("gemm", "wgmma");
  const long long n = 200, ldc = 208;
  for (long long k : {64LL, 512LL})
    for (long long m : {1LL, 129LL, 300LL}) {
      std::vector<float> a_r, g_r, u_r;
      const std::vector<uint8_t> a16 = store_as(random_vec(size_t(m * k), 81), DType::BF16, a_r);
      const std::vector<uint8_t> g16 = store_as(random_vec(size_t(n * k), 82), DType::BF16, g_r);
      const std::vector<uint8_t> u16 = store_as(random_vec(size_t(n * k), 83), DType::BF16, u_r);
      std::vector<double> want(size_t(m * n));
      for (long long i = 0; i < m; ++i)
        for (long long j = 0; j < n; ++j) {
          double g = 0, u = 0;
          for (long long q = 0; q < k; ++q) {
            g += double(a_r[size_t(i * k + q)]) * g_r[size_t(j * k + q)];
            u += double(a_r[size_t(i * k + q)]) * u_r[size_t(j * k + q)];
          }
          g = bf16_to_f32(f32_to_bf16(float(g)));
          u = bf16_to_f32(f32_to_bf16(float(u)));
          want[size_t(i * n + j)] = g / (1.0 + std::exp(-g)) * u;
        }
      auto da = to_device(a16), dg = to_device(g16), du = to_device(u16);
      for (int bn : {64, 128})
        for (int stages : {3, 4, 5})
          for (int pipe : {0, 1})
            for (int load : {0, 1}) {
              const cuda::Variant v = cuda::make_variant(
                  f, {{"BLOCK", 384}, {"BN", bn}, {"STAGES", stages}, {"EPI", 3}, {"PIPE", pipe}, {"LOAD", load}},
                  {DType::BF16}, "sm_90a");
              SCOPED_TRACE(v.name() + " m " + std::to_string(m) + " k " + std::to_string(k));
              auto dc = poisoned(size_t(m * ldc));
              const GemmW16Params p = cuda::gemm_wgmma_params(v, DType::BF16, da.as<void>(), dg.as<void>(), dc.as<void>(), m, n,
                                                              k, k, k, ldc, du.as<void>());
              cuda::launch_kernel(cuda::load_kernel(v), cuda::gemm_wgmma_grid(v, m, n), 384,
                                  size_t(cuda::gemm_wgmma_smem(bn, stages)), stream(), &p);
              const Check16 r = check16(to_host<uint16_t>(dc, size_t(m * ldc)), want, m, n, ldc);
              EXPECT_LE(r.rel, 1e-2);  // a product rounded the other way moves by one bf16 step
              EXPECT_EQ(r.outside, 0u);
            }
    }
}

}  // namespace
