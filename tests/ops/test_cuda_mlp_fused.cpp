// mlp.fused (kernels/cuda/gemv/mlp_fused.cuh), a layer's whole MLP in one kernel, against the CPU
// composition rms_norm -> gate/up linear -> swiglu -> down linear -> residual add: random bf16
// weights (W_down tiled by unit as the executor uploads it), a random residual stream that is both
// input and output, f32-accumulation bound 1e-5.
// The points cover partial last units (I not a multiple of KC), ragged batches, every lanes-per-
// row width of the down projection, and grids of one and several units per block; each point
// launches twice, so the counters the blocks synchronise on must have been reset by the first.
#include <gtest/gtest.h>

#include "agentcompile/tuning/reference_ops.h"
#include "backends/cuda/fast_executor.h"
#include "backends/cuda/kernel_loader.h"
#include "ops/cuda_test_util.h"

extern "C" {
#include "../../kernels/cuda/common/params.h"
}

using namespace ac;
using namespace ac::test;

namespace {

struct MlpCase {
  int block, kc, rows, unroll, bps, batch_tmpl;
  long long B, H, I;
};

std::string describe(const MlpCase& c) {
  return "block" + std::to_string(c.block) + " kc" + std::to_string(c.kc) + " rows" + std::to_string(c.rows) + " unroll" +
         std::to_string(c.unroll) + " bps" + std::to_string(c.bps) + " batch" + std::to_string(c.batch_tmpl) + " B" +
         std::to_string(c.B) + " H" + std::to_string(c.H) + " I" + std::to_string(c.I);
}
void PrintTo(const MlpCase& c, std::ostream* os) { *os << describe(c); }

class CudaMlpFused : public ::testing::TestWithParam<MlpCase> {};

TEST_P(CudaMlpFused, MatchesNormGateUpSwigluDownResidualOnCpu) {
  AC_REQUIRE_GPU();
  const MlpCase c = GetParam();
  SCOPED_TRACE(describe(c));
  CUstream s = cuda::Device::get().stream();
  std::vector<float> h = random_vec(size_t(c.B * c.H), 31, 2.0f), wg_r, wu_r, wd_r, g_r;
  auto wg = store_as(random_vec(size_t(c.I * c.H), 32, 0.05f), DType::BF16, wg_r);
  auto wu = store_as(random_vec(size_t(c.I * c.H), 33, 0.05f), DType::BF16, wu_r);
  auto wd = store_as(random_vec(size_t(c.H * c.I), 34, 0.05f), DType::BF16, wd_r);
  std::vector<float> g0 = random_vec(size_t(c.H), 35, 0.2f);
  for (auto& v : g0) v += 1.0f;
  auto gamma = store_as(g0, DType::BF16, g_r);

  std::vector<float> xn(h.size()), gate(size_t(c.B * c.I)), up(gate.size()), act(gate.size()), y(h.size()), want(h.size());
  ref::rms_norm(h.data(), c.B, c.H, g_r.data(), 1e-6f, xn.data());
  ref::linear(xn.data(), c.B, c.H, wg_r.data(), nullptr, c.I, gate.data());
  ref::linear(xn.data(), c.B, c.H, wu_r.data(), nullptr, c.I, up.data());
  ref::swiglu(gate.data(), up.data(), c.B * c.I, act.data());
  ref::linear(act.data(), c.B, c.I, wd_r.data(), nullptr, c.H, y.data());
  for (size_t i = 0; i < want.size(); ++i) want[i] = h[i] + y[i];

  const auto v = cuda::make_variant(cuda::find_family("mlp", "fused"),
                                    {{"BLOCK", c.block}, {"KC", c.kc}, {"ROWS", c.rows}, {"UNROLL", c.unroll},
                                     {"BATCH", c.batch_tmpl}},
                                    {DType::BF16}, cuda::Device::get().info().arch());
  const cuda::LoadedKernel& k = cuda::load_kernel(v);
  const cuda::LaunchShape ls = cuda::mlp_launch_shape(k, v, c.H, c.I, c.bps);
  const std::vector<uint16_t> tiled = cuda::tile_mlp_down(wd.data(), c.H, c.I, c.kc);
  auto dwg = to_device(wg), dwu = to_device(wu), dwd = to_device(tiled), dg = to_device(gamma), dh = to_device(h);
  cuda::DeviceBuffer counters(8);
  CU_CHECK(cuda::drv().cuMemsetD32Async(counters.ptr(), 0, 2, s));
  MlpParams p{dh.as<float>(), dg.as<void>(), 1e-6f, dwg.as<void>(), dwu.as<void>(), dwd.as<void>(), counters.as<unsigned>(),
              c.B, c.H, c.I};
  for (int rep = 0; rep < 2; ++rep) {
    dh.upload(h.data(), h.size() * 4, s);
    cuda::launch_kernel(k, cuda::Dim3{ls.grid_x}, ls.threads, ls.smem, s, &p);
    EXPECT_LE(rel_l2(to_host<float>(dh, want.size()), want), 1e-5) << "rep " << rep << ", grid " << ls.grid_x;
    EXPECT_EQ(to_host<unsigned>(counters, 2), (std::vector<unsigned>{0u, 0u})) << "counters not reset, rep " << rep;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Points, CudaMlpFused,
    ::testing::Values(
        // the target shapes' widths at batch 1 (Llama 2048/8192, Qwen3-4B 2560/9728)
        MlpCase{256, 16, 1, 2, 2, 1, 1, 2048, 8192}, MlpCase{256, 32, 2, 2, 1, 1, 1, 2560, 9728},
        MlpCase{512, 64, 2, 2, 1, 1, 1, 2048, 6144}, MlpCase{128, 16, 2, 1, 4, 1, 1, 1024, 3072},
        // partial last unit (I % KC != 0); fewer units than SMs (one unit per block)
        MlpCase{256, 64, 1, 4, 1, 1, 1, 512, 1000}, MlpCase{128, 32, 1, 1, 1, 1, 1, 256, 40},
        // batch 2 templates, full and ragged (B = 1 of 2)
        MlpCase{256, 16, 1, 2, 2, 2, 2, 2048, 8192}, MlpCase{256, 32, 4, 1, 3, 2, 1, 1024, 2984}));

}  // namespace
