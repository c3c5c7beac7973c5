// moe_gate_up.gemv and moe_down.gemv (kernels/cuda/moe/gemv.cuh) against a double-precision
// computation here from the same bf16 experts: every (BLOCK, ROWS) point on a small case whose
// widths leave partial warps of rows, with tokens that pick the same expert, and the Qwen3-30B-A3B
// shapes (hidden 2048, 128 experts of width 768, 8 per token) at the default point. The down GEMV
// adds into a residual row that is already there. Skipped, with the reason, where there is no GPU.
#include <gtest/gtest.h>

#include <cmath>

#include "backends/cuda/family.h"
#include "backends/cuda/kernel_loader.h"
#include "ops/cuda_test_util.h"

extern "C" {
#include "../../kernels/cuda/common/params.h"
}

using namespace ac;
using namespace ac::test;

namespace {

struct MoeCase {
  long long n, hidden, experts, top_k, inter;
  std::vector<std::pair<int, int>> points;  // (BLOCK, ROWS)
};

void check_moe(const MoeCase& c) {
  const long long E = c.experts, k = c.top_k, H = c.hidden, F = c.inter, n = c.n;
  // The experts: gate | up | down per expert, bf16, scaled like a trained layer's (about 1/sqrt(K)).
  std::vector<std::vector<float>> w(size_t(3 * E));
  std::vector<cuda::DeviceBuffer> dw;
  std::vector<CUdeviceptr> table(size_t(3 * E));
  for (long long part = 0; part < 3; ++part)
    for (long long e = 0; e < E; ++e) {
      const long long rows = part < 2 ? F : H, cols = part < 2 ? H : F;
      std::vector<float>& r = w[size_t(part * E + e)];
      const auto bytes = store_as(random_vec(size_t(rows * cols), uint64_t(100 + part * E + e), 1.0f / std::sqrt(float(cols))),
                                  DType::BF16, r);
      dw.push_back(to_device(bytes));
      table[size_t(part * E + e)] = dw.back().ptr();
    }
  const std::vector<float> x = random_vec(size_t(n * H), 7), resid = random_vec(size_t(n * H), 8);
  // Picks: increasing per token, token 1 sharing expert ids with token 0 where there are two.
  std::vector<int32_t> ids(size_t(n * k));
  std::vector<float> wts(size_t(n * k));
  for (long long t = 0; t < n; ++t)
    for (long long j = 0; j < k; ++j) {
      ids[size_t(t * k + j)] = int32_t((j * (E / k) + (t == 1 ? 0 : t)) % E);
      wts[size_t(t * k + j)] = 0.5f / float(j + 1);
    }
  // The reference: act = silu(gate x) * (up x); out = resid + sum_j w_j down_j act_j.
  std::vector<float> act(size_t(n * k * F)), out(resid);
  for (long long t = 0; t < n; ++t)
    for (long long j = 0; j < k; ++j) {
      const long long e = ids[size_t(t * k + j)];
      for (long long f = 0; f < F; ++f) {
        double g = 0, u = 0;
        for (long long i = 0; i < H; ++i) {
          g += double(w[size_t(e)][size_t(f * H + i)]) * x[size_t(t * H + i)];
          u += double(w[size_t(E + e)][size_t(f * H + i)]) * x[size_t(t * H + i)];
        }
        act[size_t((t * k + j) * F + f)] = float(g / (1 + std::exp(-g)) * u);
      }
    }
  for (long long t = 0; t < n; ++t)
    for (long long o = 0; o < H; ++o) {
      double total = 0;
      for (long long j = 0; j < k; ++j) {
        const long long e = ids[size_t(t * k + j)];
        double d = 0;
        for (long long f = 0; f < F; ++f) d += double(w[size_t(2 * E + e)][size_t(o * F + f)]) * act[size_t((t * k + j) * F + f)];
        total += double(wts[size_t(t * k + j)]) * d;
      }
      out[size_t(t * H + o)] += float(total);
    }

  auto dx = to_device(x), dids = to_device(ids), dwts = to_device(wts), dtable = to_device(table);
  for (auto [block, rows] : c.points) {
    auto dact = poisoned(act.size());
    auto dout = to_device(resid);
    MoeGemvParams p{dx.as<float>(), dids.as<int>(), dwts.as<float>(), reinterpret_cast<const void* const*>(dtable.ptr()),
                    dact.as<float>(), dout.as<float>(), n, k, E, H, F};
    const cuda::Variant gu = cuda::make_variant(cuda::find_family("moe_gate_up", "gemv"), {{"BLOCK", block}, {"ROWS", rows}},
                                                {DType::BF16}, arch());
    const cuda::Variant dn = cuda::make_variant(cuda::find_family("moe_down", "gemv"), {{"BLOCK", block}, {"ROWS", rows}},
                                                {DType::BF16}, arch());
    const unsigned per_block = unsigned(block / 32 * rows);
    cuda::launch_kernel(cuda::load_kernel(gu), cuda::Dim3{unsigned((F + per_block - 1) / per_block), unsigned(n * k)},
                        unsigned(block), size_t(H) * 4, stream(), &p);
    EXPECT_LE(rel_l2(to_host<float>(dact, act.size()), act), 1e-5) << gu.name();
    cuda::launch_kernel(cuda::load_kernel(dn), cuda::Dim3{unsigned((H + per_block - 1) / per_block), unsigned(n)},
                        unsigned(block), size_t(k * F) * 4, stream(), &p);
    EXPECT_LE(rel_l2(to_host<float>(dout, out.size()), out), 1e-5) << dn.name();
  }
}

TEST(CudaMoeGemv, EveryPointMatchesDoublePrecision) {
  AC_REQUIRE_GPU();
  std::vector<std::pair<int, int>> all;
  for (int block : {128, 256})
    for (int rows : {1, 2, 4}) all.push_back({block, rows});
  // 72 features and 264 outputs: the last warps hold partial rows; width 264 and 72 are 8-multiples.
  check_moe(MoeCase{3, 264, 6, 2, 72, all});
}

TEST(CudaMoeGemv, Qwen3_30bA3bShapes) {
  AC_REQUIRE_GPU();
  check_moe(MoeCase{1, 2048, 128, 8, 768, {{256, 2}}});
}

}  // namespace
