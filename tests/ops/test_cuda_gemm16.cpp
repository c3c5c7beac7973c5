// The project's own prompt GEMMs, gemm.wgmma (kernels/cuda/gemm/wgmma.cuh, sm_90a) and gemm.mma
// (kernels/cuda/gemm/mma.cuh, sm_80+), against a double-precision C = A B^T computed here from the
// same 16-bit A and B: every point of each space, for row counts that leave partial 128-row tiles
// (1, 7, 127, 128, 129, 300), a column count that leaves a partial column tile (200), and K of one
// 64-wide step (fewer steps than stages) and of eight. f32 C (EPI 1) within f32 accumulation error
// (1e-4); 16-bit C (EPI 0) within one rounding of it; EPI 2 adds into a C that is already there;
// EPI 3 (the MLP's gate/up with SwiGLU) against silu(G) * U of the bf16-rounded double products; no
// element outside m x n written. A family is skipped, with the reason, on a GPU it cannot run on.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>

#include "backends/cuda/family.h"
#include "backends/cuda/gemm16.h"
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

// The grid a point runs on here: gemm.wgmma's persistent blocks (SCHED 1) three of them, so that
// each walks several tiles and both consumers take turns (the GPU's count: the search's evaluator
// and the projections' tests); else a block per tile.
cuda::Dim3 grid(const cuda::Variant& v, long long m, long long n) {
  const bool persistent = v.family->name == "wgmma" && v.param("SCHED") == 1;
  return cuda::gemm16_grid(v, m, n, persistent ? 3 : 0);
}

// Every bf16 point of the family whose EPI `keep` accepts, for the architecture it compiles for
// (gemm.wgmma: sm_90a), or none with the reason this GPU cannot run it.
std::vector<cuda::Variant> points(const cuda::Family& f, const std::function<bool(int)>& keep, std::string* why) {
  const std::string gpu = arch(), target = f.needs_sm90a ? "sm_90a" : gpu;
  if (f.needs_sm90a ? gpu != "sm_90" : !cuda::arch_constraint(f, gpu).empty()) {
    *why = f.op + "." + f.name + " cannot run on this " + gpu;
    return {};
  }
  std::vector<cuda::Variant> out;
  for (cuda::Variant& v : cuda::sample_variants(f, target, SIZE_MAX))  // the whole space: a small one
    if (v.types == std::vector<DType>{DType::BF16} && keep(v.param("EPI"))) out.push_back(std::move(v));
  return out;
}

void every_point_matches(const char* name) {
  const cuda::Family& f = cuda::find_family("gemm", name);
  std::string why;
  const std::vector<cuda::Variant> vs = points(f, [](int epi) { return epi < 3; }, &why);
  if (vs.empty()) GTEST_SKIP() << why;
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
      for (const cuda::Variant& v : vs) {
        const int epi = v.param("EPI");
        SCOPED_TRACE(v.name() + " m " + std::to_string(m) + " k " + std::to_string(k));
        auto dc = epi == 2 ? to_device(resid) : poisoned(size_t(m * ldc));  // NaN: in f32 and in both halves as bf16
        const GemmW16Params p =
            cuda::gemm16_params(v, DType::BF16, da.as<void>(), db.as<void>(), dc.as<void>(), m, n, k, k, k, ldc);
        cuda::launch_kernel(cuda::load_kernel(v), grid(v, m, n), unsigned(v.threads()),
                            size_t(cuda::gemm16_smem(v)), stream(), &p);
        if (epi == 0) {
          const Check16 r = check16(to_host<uint16_t>(dc, size_t(m * ldc)), want, m, n, ldc);
          EXPECT_LE(r.rel, 4e-3);
          EXPECT_EQ(r.outside, 0u);
          continue;
        }
        const std::vector<float> got = to_host<float>(dc, size_t(m * ldc));
        double err = 0, norm = 0;
        size_t outside = 0;
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

// EPI 3: C [m, n] = silu(A G^T) * (A U^T), both products rounded to bf16 first (as the two GEMMs'
// outputs the separate pass reads); n = 200 leaves a partial tile of gate and up rows.
void swiglu_epilogue_matches(const char* name) {
  const cuda::Family& f = cuda::find_family("gemm", name);
  std::string why;
  const std::vector<cuda::Variant> vs = points(f, [](int epi) { return epi == 3; }, &why);
  if (vs.empty()) GTEST_SKIP() << why;
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
      for (const cuda::Variant& v : vs) {
        SCOPED_TRACE(v.name() + " m " + std::to_string(m) + " k " + std::to_string(k));
        auto dc = poisoned(size_t(m * ldc));
        const GemmW16Params p =
            cuda::gemm16_params(v, DType::BF16, da.as<void>(), dg.as<void>(), dc.as<void>(), m, n, k, k, k, ldc, du.as<void>());
        cuda::launch_kernel(cuda::load_kernel(v), grid(v, m, n), unsigned(v.threads()),
                            size_t(cuda::gemm16_smem(v)), stream(), &p);
        const Check16 r = check16(to_host<uint16_t>(dc, size_t(m * ldc)), want, m, n, ldc);
        EXPECT_LE(r.rel, 1e-2);  // a product rounded the other way moves by one bf16 step
        EXPECT_EQ(r.outside, 0u);
      }
    }
}

TEST(CudaGemmWgmma, EveryPointMatchesDoublePrecision) {
  AC_REQUIRE_GPU();
  every_point_matches("wgmma");
}
TEST(CudaGemmWgmma, SwigluEpilogueMatchesDoublePrecision) {
  AC_REQUIRE_GPU();
  swiglu_epilogue_matches("wgmma");
}
TEST(CudaGemmMma, EveryPointMatchesDoublePrecision) {
  AC_REQUIRE_GPU();
  every_point_matches("mma");
}
TEST(CudaGemmMma, SwigluEpilogueMatchesDoublePrecision) {
  AC_REQUIRE_GPU();
  swiglu_epilogue_matches("mma");
}

}  // namespace
