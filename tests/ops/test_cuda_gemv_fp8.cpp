// gemv.fp8 (kernels/cuda/gemv/gemv.cuh gemv_fp8): the decode GEMV over FP8 e4m3 weights with
// per-row or 128 x 128 block scales, against the CPU reference ops on the weights an FP8 checkpoint
// describes (fp8 x scale in f32, model/fp8_quantize.h: what the CPU backend runs, W8A16). The
// weights are exact on both sides, so the bound is gemv.fused's f32-accumulation bound (1e-5).
// Shapes: N not a multiple of 128 (a partial row block), K a multiple of 16 but not of 128 (a
// partial column block), split-K slices, ragged batches, every epilogue. Skipped where there is no
// GPU, with the reason.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "agentcompile/core/fp8.h"
#include "agentcompile/model/fp8_quantize.h"
#include "agentcompile/runtime/sampler.h"
#include "backends/cuda/fast_executor.h"
#include "backends/cuda/kernel_loader.h"
#include "ops/cuda_test_util.h"

extern "C" {
#include "../../kernels/cuda/common/params.h"
}

using namespace ac;
using namespace ac::test;

namespace {

// rows: rows per warp (gemv.fp8) or 16-row tiles per block (gemv.mma_fp8, terms > 0).
struct Fp8Case {
  int block, rows, unroll, splitk, batch_tmpl, epi, scale;  // scale: 0 per row, 1 per 128 x 128 block
  long long B, N, K;
  bool norm, bias;
  int terms = 0;
  int cvt = 0;  // how the codes are widened: 0 cvt, 1 bit moves (the families' CVT)
};

std::string describe(const Fp8Case& c) {
  return std::string(c.terms ? "mma terms" + std::to_string(c.terms) + " " : "") + (c.cvt ? "cvt1 " : "") +
         std::string(c.scale ? "block-scaled" : "row-scaled") + " block" + std::to_string(c.block) + " rows" +
         std::to_string(c.rows) + " unroll" + std::to_string(c.unroll) + " splitk" + std::to_string(c.splitk) + " batch" +
         std::to_string(c.batch_tmpl) + " epi" + std::to_string(c.epi) + " B" + std::to_string(c.B) + " N" +
         std::to_string(c.N) + " K" + std::to_string(c.K);
}
void PrintTo(const Fp8Case& c, std::ostream* os) { *os << describe(c); }

// A random [N, K] weight quantized as a checkpoint stores it: e4m3 bytes, and the scales as f32
// (the kernel's; per-row scales are stored bf16 and widened exactly), with the weight they
// describe (`exact`).
struct Fp8Weight {
  std::vector<uint8_t> q;
  std::vector<float> scales, exact;
};
Fp8Weight fp8_weight(long long N, long long K, bool block, uint64_t seed) {
  Fp8Weight w;
  std::vector<uint8_t> raw_scales;
  const int64_t bo = fp8_scale_rows(block), bi = fp8_scale_cols(block, K);
  const DType sd = fp8_scale_dtype(block);
  quantize_fp8(random_vec(size_t(N * K), seed, 0.05f), N, K, bo, bi, sd, w.q, raw_scales);
  w.exact = dequantize_fp8(w.q.data(), raw_scales.data(), sd, N, K, bo, bi);
  for (size_t i = 0; i < raw_scales.size() / dtype_size(sd); ++i) w.scales.push_back(load_as_f32(raw_scales.data(), sd, i));
  return w;
}

class CudaGemvFp8 : public ::testing::TestWithParam<Fp8Case> {};

TEST_P(CudaGemvFp8, MatchesTheDequantizedWeightsOnCpu) {
  AC_REQUIRE_GPU();
  const Fp8Case c = GetParam();
  SCOPED_TRACE(describe(c));
  const bool swiglu = c.epi == 2;
  std::vector<float> x = random_vec(size_t(c.B * c.K), 31, 2.0f), g_r, b_r;
  const Fp8Weight w = fp8_weight(c.N, c.K, c.scale == 1, 32), w2 = fp8_weight(c.N, c.K, c.scale == 1, 33);
  std::vector<float> g = random_vec(size_t(c.K), 34, 0.2f);
  for (auto& v : g) v += 1.0f;
  auto gamma = store_as(g, DType::BF16, g_r);
  auto bias = store_as(random_vec(size_t(c.N), 35), DType::BF16, b_r);
  std::vector<float> resid = random_vec(size_t(c.B * c.N), 36);

  const std::vector<float> want = gemv_want(x, c.B, c.K, c.norm ? g_r.data() : nullptr, w.exact.data(), w2.exact.data(),
                                           c.bias ? b_r.data() : nullptr, c.N, c.epi, resid);

  auto dx = to_device(x), dw = to_device(w.q), dw2 = to_device(w2.q), ds = to_device(w.scales),
       ds2 = to_device(w2.scales), dg = to_device(gamma), db = to_device(bias);
  cuda::DeviceBuffer out = c.epi == 1 ? to_device(resid) : poisoned(want.size());
  const auto v = c.terms ? cuda::make_variant(cuda::find_family("gemv", "mma_fp8"),
                                               {{"BLOCK", c.block}, {"MT", c.rows}, {"UNROLL", c.unroll},
                                                {"SPLITK", c.splitk}, {"TERMS", c.terms}, {"BATCH", c.batch_tmpl},
                                                {"EPI", c.epi}, {"SCALE", c.scale}, {"CVT", c.cvt}},
                                               {}, arch())
                        : cuda::make_variant(cuda::find_family("gemv", "fp8"),
                                             {{"BLOCK", c.block}, {"ROWS", c.rows}, {"UNROLL", c.unroll}, {"SPLITK", c.splitk},
                                              {"BATCH", c.batch_tmpl}, {"EPI", c.epi}, {"SCALE", c.scale},
                                              {"CVT", c.cvt}},
                                             {DType::BF16}, arch());
  const cuda::LaunchShape ls = cuda::gemv_launch_shape(v, c.N, c.K);
  cuda::DeviceBuffer best(64), tok(32);
  best.fill_u32(0, stream());
  GemvParams p{dx.as<float>(), c.norm ? dg.as<void>() : nullptr, 1e-6f, dw.as<void>(), swiglu ? dw2.as<void>() : nullptr,
               c.bias ? db.as<void>() : nullptr, out.as<float>(), best.as<unsigned long long>(), c.B, c.N, c.K};
  p.w_scale = ds.as<float>();
  p.w2_scale = swiglu ? ds2.as<float>() : nullptr;
  cuda::launch_kernel(cuda::load_kernel(v), cuda::Dim3{ls.grid_x, ls.grid_y}, ls.threads, ls.smem, stream(), &p);
  if (c.epi == 3) cuda::launch_argmax_finish(best.as<unsigned long long>(), tok.as<int>(), c.B, stream(), true, arch());
  EXPECT_LE(rel_l2(to_host<float>(out, want.size()), want), 1e-5);
  if (c.epi == 3) {
    auto got = to_host<int32_t>(tok, size_t(c.B));
    for (long long b = 0; b < c.B; ++b) EXPECT_EQ(got[size_t(b)], argmax(want.data() + b * c.N, c.N)) << "row " << b;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Points, CudaGemvFp8,
    ::testing::Values(
        // QKV (store, norm, bias): both scale layouts, batch 1 and a ragged batch
        Fp8Case{256, 2, 2, 1, 1, 0, 1, 1, 1000, 2048, true, true}, Fp8Case{256, 2, 2, 1, 1, 0, 0, 1, 1000, 2048, true, true},
        Fp8Case{128, 1, 2, 1, 4, 0, 1, 3, 333, 2064, true, false},  // K = 16 x 129: a partial column block
        // residual, split-K (the vector reductions at ROWS 2 and 4, the scalar path with the bias)
        Fp8Case{256, 1, 4, 1, 1, 1, 1, 1, 2048, 2048, false, false}, Fp8Case{256, 1, 2, 4, 1, 1, 0, 1, 1000, 6144, false, true},
        Fp8Case{128, 2, 2, 8, 2, 1, 1, 2, 64, 9728, false, false}, Fp8Case{256, 4, 1, 2, 2, 1, 0, 2, 1001, 2048, true, true},
        Fp8Case{128, 2, 2, 4, 2, 1, 1, 2, 2048, 2064, false, false},  // split slices of 528 columns: 16-aligned, not 128
        // SwiGLU (both matrices' scales), with the norm
        Fp8Case{256, 1, 2, 1, 1, 2, 1, 1, 3000, 2048, true, false}, Fp8Case{128, 1, 1, 1, 4, 2, 0, 4, 100, 256, true, false},
        // argmax (an lm_head quantized too: the variant with an fp8 lm_head)
        Fp8Case{256, 2, 2, 1, 1, 3, 1, 1, 151936, 2048, true, false}, Fp8Case{128, 1, 1, 1, 8, 3, 0, 5, 32001, 512, true, false}));

// gemv.mma_fp8 (the tensor cores over FP8 weights, batch 2-8; not the default yet): the same checks
// and bound. Both scale layouts (block scales folded into x per 64-k chunk, row scales on the sums),
// rows that are not a multiple of the 16-row tile nor of a 128-row scale block, ragged batches, 2
// and 3 terms, K slices in split-K (kchunk rounded to 64, inside 128-k blocks), every epilogue.
INSTANTIATE_TEST_SUITE_P(
    Mma, CudaGemvFp8,
    ::testing::Values(
        Fp8Case{256, 1, 2, 1, 8, 0, 1, 8, 1000, 2048, true, true, 2}, Fp8Case{128, 2, 2, 1, 4, 0, 0, 3, 333, 512, true, false, 2},
        Fp8Case{512, 4, 1, 1, 2, 0, 1, 2, 4096, 2048, true, false, 3},
        Fp8Case{256, 1, 4, 4, 2, 1, 1, 2, 2048, 6144, false, false, 2}, Fp8Case{128, 1, 2, 2, 8, 1, 0, 8, 64, 9728, false, true, 2},
        Fp8Case{256, 2, 2, 2, 4, 1, 1, 3, 500, 1024, true, false, 2},  // norm over K slices: the full-row pass
        Fp8Case{256, 1, 2, 1, 8, 2, 1, 5, 3000, 2048, true, false, 2}, Fp8Case{512, 2, 1, 1, 2, 2, 0, 2, 100, 256, true, false, 2},
        Fp8Case{256, 1, 4, 1, 8, 3, 1, 8, 151936, 2048, true, false, 2}, Fp8Case{128, 2, 2, 1, 8, 3, 0, 5, 32001, 512, true, false, 3}));

// CVT 1 (the codes widened by bit moves): the same checks at points of both families, split-K
// and every epilogue among them.
INSTANTIATE_TEST_SUITE_P(
    Bits, CudaGemvFp8,
    ::testing::Values(Fp8Case{256, 2, 2, 1, 1, 0, 1, 1, 1000, 2048, true, true, 0, 1},
                      Fp8Case{128, 1, 2, 1, 4, 0, 0, 3, 333, 2064, true, false, 0, 1},
                      Fp8Case{128, 2, 2, 8, 2, 1, 1, 2, 64, 9728, false, false, 0, 1},
                      Fp8Case{256, 1, 2, 1, 1, 2, 1, 1, 3000, 2048, true, false, 0, 1},
                      Fp8Case{128, 1, 1, 1, 8, 3, 0, 5, 32001, 512, true, false, 0, 1},
                      Fp8Case{256, 1, 2, 1, 8, 0, 1, 8, 1000, 2048, true, true, 2, 1},
                      Fp8Case{128, 1, 2, 2, 8, 1, 0, 8, 64, 9728, false, true, 2, 1},
                      Fp8Case{256, 1, 2, 1, 8, 2, 1, 5, 3000, 2048, true, false, 2, 1},
                      Fp8Case{128, 2, 2, 1, 8, 3, 0, 5, 32001, 512, true, false, 3, 1}));

// The e4m3 conversions the GPU runs are exact: every one of the 254 finite codes (NaN codes
// excluded), one per row of a row-scaled GEMV (scale 1, x all ones): each row's output is its
// code's value. gemv.fp8 with cvt (CVT 0: cvt on sm_89+, the bit move into an f16 below) and with
// bit moves (CVT 1: the subnormal codes through bf16 subnormals), and gemv.mma_fp8 (batch 2, both
// rows of x ones) with each.
TEST(CudaGemvFp8Codes, EveryFiniteCodeConvertsExactly) {
  AC_REQUIRE_GPU();
  const long long N = 256, K = 256;
  std::vector<uint8_t> q(size_t(N * K), 0);
  std::vector<float> want(static_cast<size_t>(N));
  for (long long r = 0; r < N; ++r) {
    const uint8_t code = uint8_t(r);
    const bool nan = (code & 0x7f) == 0x7f;
    q[size_t(r * K + (r * 7) % K)] = nan ? 0 : code;  // one weight per row, the others zero
    want[size_t(r)] = nan ? 0.0f : fp8_e4m3_to_f32(code);
  }
  std::vector<float> x(size_t(2 * K), 1.0f), scales(size_t(N), 1.0f);
  auto dx = to_device(x), dq = to_device(q), ds = to_device(scales);
  for (int mma = 0; mma < 2; ++mma)
    for (int cvt = 0; cvt < 2; ++cvt) {
      SCOPED_TRACE(std::string(mma ? "gemv.mma_fp8" : "gemv.fp8") + " CVT " + std::to_string(cvt));
      const long long B = mma ? 2 : 1;
      cuda::DeviceBuffer out = poisoned(size_t(B * N));
      const auto v = mma ? cuda::make_variant(cuda::find_family("gemv", "mma_fp8"),
                                              {{"BLOCK", 128}, {"MT", 1}, {"UNROLL", 1}, {"SPLITK", 1}, {"TERMS", 2},
                                               {"BATCH", 2}, {"EPI", 0}, {"SCALE", 0}, {"CVT", cvt}},
                                              {}, arch())
                         : cuda::make_variant(cuda::find_family("gemv", "fp8"),
                                              {{"BLOCK", 128}, {"ROWS", 1}, {"UNROLL", 1}, {"SPLITK", 1}, {"BATCH", 1},
                                               {"EPI", 0}, {"SCALE", 0}, {"CVT", cvt}},
                                              {DType::BF16}, arch());
      const cuda::LaunchShape ls = cuda::gemv_launch_shape(v, N, K);
      GemvParams p{dx.as<float>(), nullptr, 1e-6f, dq.as<void>(), nullptr, nullptr, out.as<float>(), nullptr, B, N, K};
      p.w_scale = ds.as<float>();
      cuda::launch_kernel(cuda::load_kernel(v), cuda::Dim3{ls.grid_x, ls.grid_y}, ls.threads, ls.smem, stream(), &p);
      const auto got = to_host<float>(out, size_t(B * N));
      for (long long b = 0; b < B; ++b)
        for (long long r = 0; r < N; ++r)
          EXPECT_EQ(got[size_t(b * N + r)], want[size_t(r)]) << "code 0x" << std::hex << r << std::dec << ", row " << b;
    }
}

// CVT 1 (bit moves) gives gemv.fp8's and gemv.mma_fp8's outputs bit for bit as CVT 0 (cvt): the
// same widened values in the same order of operations. Points of the target models' shapes, both
// scale layouts, every epilogue but argmax (its token is checked by the cases above).
TEST(CudaGemvFp8Codes, BitMovesGiveTheCvtOutputsBitForBit) {
  AC_REQUIRE_GPU();
  struct Point {
    bool mma;
    int block, rows, unroll, splitk, batch, epi, scale;
    long long B, N, K;
  };
  // Split-K 1 throughout: split-K's atomic adds make no order of the sums twice.
  for (const Point& c : {Point{false, 256, 2, 2, 1, 1, 0, 1, 1, 4096, 2048}, Point{false, 128, 2, 1, 1, 1, 1, 0, 1, 2048, 6144},
                         Point{false, 256, 1, 1, 1, 4, 2, 1, 3, 3000, 2048}, Point{true, 512, 2, 1, 1, 8, 0, 1, 8, 4096, 2048},
                         Point{true, 128, 2, 1, 1, 8, 1, 0, 5, 2048, 6144}, Point{true, 128, 1, 1, 1, 8, 2, 1, 8, 6144, 2048}}) {
    SCOPED_TRACE(std::string(c.mma ? "gemv.mma_fp8" : "gemv.fp8") + " N" + std::to_string(c.N) + " K" + std::to_string(c.K) +
                 " epi" + std::to_string(c.epi));
    const bool swiglu = c.epi == 2;
    std::vector<float> x = random_vec(size_t(c.B * c.K), 41, 2.0f), g_r;
    const Fp8Weight w = fp8_weight(c.N, c.K, c.scale == 1, 42), w2 = fp8_weight(c.N, c.K, c.scale == 1, 43);
    std::vector<float> g = random_vec(size_t(c.K), 44, 0.2f);
    for (auto& v : g) v += 1.0f;
    auto gamma = store_as(g, DType::BF16, g_r);
    const std::vector<float> resid = random_vec(size_t(c.B * c.N), 46);
    auto dx = to_device(x), dw = to_device(w.q), dw2 = to_device(w2.q), ds = to_device(w.scales), ds2 = to_device(w2.scales),
         dg = to_device(gamma);
    std::vector<std::vector<float>> outs;
    for (int cvt = 0; cvt < 2; ++cvt) {
      const auto v = c.mma ? cuda::make_variant(cuda::find_family("gemv", "mma_fp8"),
                                                {{"BLOCK", c.block}, {"MT", c.rows}, {"UNROLL", c.unroll}, {"SPLITK", c.splitk},
                                                 {"TERMS", 2}, {"BATCH", c.batch}, {"EPI", c.epi}, {"SCALE", c.scale}, {"CVT", cvt}},
                                                {}, arch())
                           : cuda::make_variant(cuda::find_family("gemv", "fp8"),
                                                {{"BLOCK", c.block}, {"ROWS", c.rows}, {"UNROLL", c.unroll}, {"SPLITK", c.splitk},
                                                 {"BATCH", c.batch}, {"EPI", c.epi}, {"SCALE", c.scale}, {"CVT", cvt}},
                                                {DType::BF16}, arch());
      const cuda::LaunchShape ls = cuda::gemv_launch_shape(v, c.N, c.K);
      const size_t n = size_t(c.B * c.N);
      cuda::DeviceBuffer out = c.epi == 1 ? to_device(resid) : poisoned(n);
      GemvParams p{dx.as<float>(), c.epi == 1 ? nullptr : dg.as<void>(), 1e-6f, dw.as<void>(), swiglu ? dw2.as<void>() : nullptr,
                   nullptr, out.as<float>(), nullptr, c.B, c.N, c.K};
      p.w_scale = ds.as<float>();
      p.w2_scale = swiglu ? ds2.as<float>() : nullptr;
      cuda::launch_kernel(cuda::load_kernel(v), cuda::Dim3{ls.grid_x, ls.grid_y}, ls.threads, ls.smem, stream(), &p);
      outs.push_back(to_host<float>(out, n));
    }
    size_t differ = 0;
    for (size_t i = 0; i < outs[0].size(); ++i) differ += std::memcmp(&outs[0][i], &outs[1][i], 4) != 0;
    EXPECT_EQ(differ, 0u) << "outputs whose bits differ between CVT 0 and CVT 1";
    EXPECT_FALSE(std::isnan(outs[1][0]));
  }
}

// fp8_dequant.rows (the prefill GEMMs' view of an FP8 projection): every element equal to the CPU's
// dequantized weight rounded to bf16 / f16, for both scale layouts, a partial row block and a
// partial column block (K = 16 x 129), and more 16-code groups per row than threads (K 9728).
TEST(CudaFp8Dequant, RowsMatchTheCpuDequantization) {
  AC_REQUIRE_GPU();
  struct Case {
    long long N, K;
    bool block;
    DType out;
  };
  for (const Case& c : {Case{333, 2064, true, DType::BF16}, Case{333, 2064, false, DType::BF16},
                        Case{200, 9728, true, DType::F16}, Case{1000, 256, false, DType::F16}}) {
    const Fp8Weight w = fp8_weight(c.N, c.K, c.block, 17);
    auto dq = to_device(w.q), ds = to_device(w.scales);
    cuda::DeviceBuffer out(size_t(c.N * c.K) * 2);
    out.fill_u32(0x7fc07fc0u, stream());  // NaN in both 16-bit formats' upper bits: an unwritten element shows
    const auto v = cuda::make_variant(cuda::find_family("fp8_dequant", "rows"), {{"BLOCK", 256}}, {c.out}, arch());
    Fp8DequantParams p{dq.as<unsigned char>(), ds.as<float>(), out.as<void>(), c.N, c.K, c.block ? 128 : 1,
                       c.block ? 128 : c.K, c.block ? (c.K + 127) / 128 : 1};
    const unsigned per_row = unsigned((c.K / 16 + 255) / 256);
    cuda::launch_kernel(cuda::load_kernel(v), cuda::Dim3{per_row, unsigned(c.N)}, 256, 0, stream(), &p);
    const auto got = to_host<uint16_t>(out, size_t(c.N * c.K));
    size_t wrong = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      uint16_t want = 0;
      store_from_f32(&want, c.out, 0, w.exact[i]);
      wrong += got[i] != want;
    }
    EXPECT_EQ(wrong, 0u) << c.N << "x" << c.K << (c.block ? " block" : " row") << " " << dtype_user_name(c.out);
  }
}

}  // namespace
