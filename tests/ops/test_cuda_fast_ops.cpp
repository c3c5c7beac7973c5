// The fast-path kernels (gemv/gemv.cuh, attention/qkv_post.cuh, attention/decode.cuh) against
// compositions of the CPU reference ops, over several parameter points of each family: random
// inputs, outputs poisoned first, f32-accumulation bound 1e-5 (bf16 weights and caches are
// exact inputs to both sides). Skipped, with the reason, where there is no GPU.
#include <gtest/gtest.h>

#include <cmath>

#include "agentcompile/tuning/reference_ops.h"
#include "agentcompile/core/error.h"
#include "agentcompile/ir/rope.h"
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

// rows: rows per warp (gemv.fused) or 16-row tiles per block (gemv.mma, terms > 0).
struct GemvCase {
  int block, rows, unroll, splitk, batch_tmpl, epi;
  long long B, N, K;
  bool norm, bias;
  int terms = 0;
};

std::string describe(const GemvCase& c) {
  return std::string(c.terms ? "mma terms" + std::to_string(c.terms) + " " : "fused ") + "block" +
         std::to_string(c.block) + " rows" + std::to_string(c.rows) + " unroll" + std::to_string(c.unroll) +
         " splitk" + std::to_string(c.splitk) + " batch" + std::to_string(c.batch_tmpl) + " epi" + std::to_string(c.epi) +
         " B" + std::to_string(c.B) + " N" + std::to_string(c.N) + " K" + std::to_string(c.K);
}
// Readable test names (gtest would print the struct's bytes, padding included).
void PrintTo(const GemvCase& c, std::ostream* os) { *os << describe(c); }

class CudaGemv : public ::testing::TestWithParam<GemvCase> {};

TEST_P(CudaGemv, MatchesNormLinearEpilogueOnCpu) {
  AC_REQUIRE_GPU();
  const GemvCase c = GetParam();
  SCOPED_TRACE(describe(c));
  const bool swiglu = c.epi == 2;
  std::vector<float> x = random_vec(size_t(c.B * c.K), 21, 2.0f), w_r, w2_r, g_r, b_r;
  auto w = store_as(random_vec(size_t(c.N * c.K), 22, 0.05f), DType::BF16, w_r);
  auto w2 = store_as(random_vec(size_t(c.N * c.K), 23, 0.05f), DType::BF16, w2_r);
  auto gamma = store_as(random_vec(size_t(c.K), 24, 0.2f), DType::BF16, g_r);
  for (auto& v : g_r) v += 1.0f;
  gamma = store_as(g_r, DType::BF16, g_r);
  auto bias = store_as(random_vec(size_t(c.N), 25), DType::BF16, b_r);
  std::vector<float> resid = random_vec(size_t(c.B * c.N), 26);

  const std::vector<float> want = gemv_want(x, c.B, c.K, c.norm ? g_r.data() : nullptr, w_r.data(), w2_r.data(),
                                           c.bias ? b_r.data() : nullptr, c.N, c.epi, resid);

  auto dx = to_device(x), dw = to_device(w), dw2 = to_device(w2), dg = to_device(gamma), db = to_device(bias);
  cuda::DeviceBuffer out = c.epi == 1 ? to_device(resid) : poisoned(want.size());
  const auto v = c.terms ? cuda::make_variant(cuda::find_family("gemv", "mma"),
                                               {{"BLOCK", c.block}, {"MT", c.rows}, {"UNROLL", c.unroll},
                                                {"SPLITK", c.splitk}, {"TERMS", c.terms}, {"BATCH", c.batch_tmpl},
                                                {"EPI", c.epi}},
                                               {}, arch())
                        : cuda::make_variant(cuda::find_family("gemv", "fused"),
                                             {{"BLOCK", c.block}, {"ROWS", c.rows}, {"UNROLL", c.unroll},
                                              {"SPLITK", c.splitk}, {"BATCH", c.batch_tmpl}, {"EPI", c.epi}},
                                             {DType::BF16}, arch());
  const cuda::LaunchShape ls = cuda::gemv_launch_shape(v, c.N, c.K);
  cuda::DeviceBuffer best(64), tok(32);
  best.fill_u32(0, stream());
  GemvParams p{dx.as<float>(), c.norm ? dg.as<void>() : nullptr, 1e-6f, dw.as<void>(), swiglu ? dw2.as<void>() : nullptr,
               c.bias ? db.as<void>() : nullptr, out.as<float>(), best.as<unsigned long long>(), c.B, c.N, c.K};
  // Twice: argmax_finish must zero the keys of the first launch for the second to pick afresh.
  for (int rep = 0; rep < 2; ++rep) {
    if (c.epi == 1 && rep == 1) out.upload(resid.data(), resid.size() * 4, stream());
    if (c.epi == 3 && rep == 1) tok.fill_u32(0xfffffff0u, stream());  // not a token: must be overwritten
    cuda::launch_kernel(cuda::load_kernel(v), cuda::Dim3{ls.grid_x, ls.grid_y}, ls.threads, ls.smem, stream(), &p);
    if (c.epi == 3) cuda::launch_argmax_finish(best.as<unsigned long long>(), tok.as<int>(), c.B, stream(), true, arch());
    EXPECT_LE(rel_l2(to_host<float>(out, want.size()), want), 1e-5) << "rep " << rep;
    if (c.epi == 3) {
      auto got = to_host<int32_t>(tok, size_t(c.B));
      for (long long b = 0; b < c.B; ++b)
        EXPECT_EQ(got[size_t(b)], argmax(want.data() + b * c.N, c.N)) << "row " << b << " rep " << rep;
    }
  }
}

// Points the fast path runs: at batch templates above 1 within gemv.fused's register budget.
INSTANTIATE_TEST_SUITE_P(
    Points, CudaGemv,
    ::testing::Values(
        // store with norm and bias (fused QKV), batch 1 and ragged batches
        GemvCase{256, 2, 2, 1, 1, 0, 1, 1000, 2048, true, true}, GemvCase{128, 1, 2, 1, 4, 0, 3, 333, 520, true, false},
        GemvCase{256, 1, 1, 1, 8, 0, 8, 257, 1024, true, true},
        // residual, with and without split-K
        GemvCase{256, 1, 4, 1, 1, 1, 1, 2048, 2048, false, false}, GemvCase{256, 1, 2, 4, 1, 1, 1, 1000, 6144, false, true},
        GemvCase{128, 2, 2, 8, 2, 1, 2, 64, 9728, false, false},
        // split-K's vector reductions (ROWS 2 and 4): aligned rows; and N odd (batch row 1
        // misaligned), N's last rows, the bias added by the first slice: the scalar fallbacks
        GemvCase{128, 2, 2, 4, 2, 1, 2, 2048, 2048, false, false}, GemvCase{256, 4, 1, 2, 2, 1, 2, 1001, 2048, true, true},
        // SwiGLU with norm
        GemvCase{256, 1, 2, 1, 1, 2, 1, 3000, 2048, true, false}, GemvCase{128, 1, 1, 1, 4, 2, 4, 100, 256, true, false},
        // argmax with norm (lm_head), a vocabulary that is not a multiple of anything
        GemvCase{256, 2, 2, 1, 1, 3, 1, 151936, 2048, true, false}, GemvCase{128, 1, 1, 1, 8, 3, 5, 32001, 512, true, false}));

// gemv.mma (tensor cores, batch 2-8): the same checks and bound; rows that are not a multiple
// of the 16-row tile, ragged batches, 2 and 3 bf16 terms of x, K slices in split-K (with the
// norm too, which the executor never launches but the kernel allows).
INSTANTIATE_TEST_SUITE_P(
    Mma, CudaGemv,
    ::testing::Values(
        GemvCase{256, 1, 2, 1, 8, 0, 8, 1000, 2048, true, true, 2}, GemvCase{128, 2, 2, 1, 4, 0, 3, 333, 512, true, false, 2},
        GemvCase{512, 1, 1, 1, 1, 0, 1, 3072, 2048, true, false, 2},
        GemvCase{256, 1, 4, 4, 2, 1, 2, 2048, 6144, false, false, 3}, GemvCase{128, 1, 2, 2, 8, 1, 8, 64, 9728, false, true, 2},
        GemvCase{256, 2, 2, 2, 4, 1, 3, 500, 1024, true, false, 2},  // norm over K slices: the full-row pass
        GemvCase{256, 1, 2, 1, 8, 2, 5, 3000, 2048, true, false, 2}, GemvCase{512, 2, 1, 1, 2, 2, 2, 100, 256, true, false, 2},
        GemvCase{256, 1, 4, 1, 8, 3, 8, 151936, 2048, true, false, 2}, GemvCase{128, 2, 2, 1, 8, 3, 5, 32001, 512, true, false, 3},
        // batch template 2 (gemv.mma from batch 2 on): the QKV epilogue with one row of the two, the
        // lm_head's argmax with both
        GemvCase{512, 1, 1, 1, 2, 0, 1, 4096, 2048, true, false, 2}, GemvCase{128, 4, 1, 1, 2, 3, 2, 32001, 2048, true, false, 2}));

// The argmax epilogue's keys (gemv/common.cuh argmax_key) and argmax_finish: equal largest logits
// in different blocks give the lowest row, as torch.argmax; an Inf in a batch row's x poisons that
// row only (-1); the next launch after a poisoned one picks afresh (the keys were zeroed). gemv.fused
// and gemv.mma, batch 2.
TEST(CudaFastOps, ArgmaxEpilogueTiesPoisonAndReset) {
  AC_REQUIRE_GPU();
  const long long N = 5000, K = 256, B = 2;
  std::vector<float> w_r;
  std::vector<float> wv = random_vec(size_t(N * K), 31, 0.05f);
  for (long long k = 0; k < K; ++k) wv[size_t(3001 * K + k)] = wv[size_t(417 * K + k)] = 0.5f;  // the tie, 2584 rows apart
  for (long long k = 0; k < K; ++k) wv[size_t(4999 * K + k)] = k % 2 ? 0.25f : -0.25f;  // row 1's winner below
  auto w = store_as(wv, DType::BF16, w_r);
  std::vector<float> x(size_t(B * K), 1.0f);  // row 0: all ones, so rows 417 and 3001 tie at 128
  for (long long k = 0; k < K; ++k) x[size_t(K + k)] = k % 2 ? 4.0f : -4.0f;  // row 1: row 4999 at 256
  auto dw = to_device(w);
  cuda::DeviceBuffer out = poisoned(size_t(B * N)), best(16), tok(8);
  best.fill_u32(0, stream());
  for (bool mma : {false, true}) {
    SCOPED_TRACE(mma ? "gemv.mma" : "gemv.fused");
    const auto v = mma ? cuda::make_variant(cuda::find_family("gemv", "mma"),
                                            {{"BLOCK", 128}, {"MT", 1}, {"UNROLL", 1}, {"SPLITK", 1}, {"TERMS", 2},
                                             {"BATCH", 2}, {"EPI", 3}}, {}, arch())
                       : cuda::make_variant(cuda::find_family("gemv", "fused"),
                                            {{"BLOCK", 128}, {"ROWS", 2}, {"UNROLL", 1}, {"SPLITK", 1}, {"BATCH", 2},
                                             {"EPI", 3}}, {DType::BF16}, arch());
    const cuda::LaunchShape ls = cuda::gemv_launch_shape(v, N, K);
    for (int rep = 0; rep < 2; ++rep) {
      std::vector<float> xr = x;
      if (rep == 0) xr[size_t(K + 7)] = INFINITY;  // poisons batch row 1 only
      auto dx = to_device(xr);
      GemvParams p{dx.as<float>(), nullptr, 1e-6f, dw.as<void>(), nullptr, nullptr, out.as<float>(),
                   best.as<unsigned long long>(), B, N, K};
      tok.fill_u32(0xfffffff0u, stream());
      cuda::launch_kernel(cuda::load_kernel(v), cuda::Dim3{ls.grid_x, ls.grid_y}, ls.threads, ls.smem, stream(), &p);
      cuda::launch_argmax_finish(best.as<unsigned long long>(), tok.as<int>(), B, stream(), true, arch());
      const auto got = to_host<int32_t>(tok, size_t(B));
      EXPECT_EQ(got[0], 417) << "rep " << rep << ": equal logits at rows 417 and 3001";
      EXPECT_EQ(got[1], rep == 0 ? -1 : 4999) << "rep " << rep;
    }
  }
}

TEST(CudaFastOps, QkvPostMatchesNormRopeAndCacheWrite) {
  AC_REQUIRE_GPU();
  RopeConfig rope;
  rope.theta = 1e6;
  for (long long hd : {32LL, 64LL, 128LL}) {
    const long long n = 3, heads = 6, kvh = 2, max_seq = 64, slots = 2;
    const long long q_dim = heads * hd, kv_dim = kvh * hd, width = q_dim + 2 * kv_dim;
    std::vector<float> qkv = random_vec(size_t(n * width), 31, 2.0f), qn_r, kn_r;
    auto qn = store_as(random_vec(size_t(hd), 32, 0.1f), DType::BF16, qn_r);
    for (auto& v : qn_r) v += 1.0f;
    qn = store_as(qn_r, DType::BF16, qn_r);
    auto kn = store_as(random_vec(size_t(hd), 33, 0.1f), DType::BF16, kn_r);
    std::vector<int32_t> pos = {5, 0, 63}, slot = {1, 0, 1};
    std::vector<float> inv = rope_inv_freq(rope, hd);
    // CPU: split, per-head norm, rope.
    std::vector<float> q(size_t(n * q_dim)), k(size_t(n * kv_dim)), qw(q.size()), kw(k.size());
    for (long long t = 0; t < n; ++t) {
      std::copy_n(qkv.begin() + t * width, q_dim, q.begin() + t * q_dim);
      std::copy_n(qkv.begin() + t * width + q_dim, kv_dim, k.begin() + t * kv_dim);
    }
    ref::rms_norm(q.data(), n * heads, hd, qn_r.data(), 1e-6f, qw.data());
    ref::rms_norm(k.data(), n * kvh, hd, kn_r.data(), 1e-6f, kw.data());
    ref::rope(qw.data(), n, heads, hd, pos.data(), inv, qw.data());
    ref::rope(kw.data(), n, kvh, hd, pos.data(), inv, kw.data());

    auto dqkv = to_device(qkv), dqn = to_device(qn), dkn = to_device(kn), dpos = to_device(pos), dslot = to_device(slot),
         dinv = to_device(inv);
    auto qout = poisoned(q.size());
    cuda::DeviceBuffer kc(size_t(slots * kvh * max_seq * hd) * 2), vc(kc.bytes());
    kc.fill_u32(0xffffffffu, stream());
    vc.fill_u32(0xffffffffu, stream());
    QkvPostParams p{dqkv.as<float>(), qout.as<float>(), dqn.as<void>(), dkn.as<void>(), 1e-6f, dpos.as<int>(),
                    dslot.as<int>(), dinv.as<float>(), kc.as<unsigned short>(), vc.as<unsigned short>(), n, heads, kvh,
                    hd, max_seq, nullptr, nullptr};
    cuda::launch_kernel(cuda::load_kernel(cuda::make_variant(cuda::find_family("qkv_post", "fused"), {{"BLOCK", 64}},
                                                             {DType::BF16}, arch())),
                        cuda::Dim3{unsigned(heads + 2 * kvh), unsigned(n)}, 64, 0, stream(), &p);
    EXPECT_LE(rel_l2(to_host<float>(qout, q.size()), qw), 1e-5) << "q, head_dim " << hd;
    auto kc_h = to_host<uint16_t>(kc, size_t(slots * kvh * max_seq * hd));
    auto vc_h = to_host<uint16_t>(vc, kc_h.size());
    std::vector<float> got_k, want_k, got_v, want_v;
    for (long long t = 0; t < n; ++t)
      for (long long h = 0; h < kvh; ++h)
        for (long long j = 0; j < hd; ++j) {
          const size_t at = size_t(((slot[size_t(t)] * kvh + h) * max_seq + pos[size_t(t)]) * hd + j);
          got_k.push_back(bf16_to_f32(kc_h[at]));
          want_k.push_back(bf16_to_f32(f32_to_bf16(kw[size_t(t * kv_dim + h * hd + j)])));
          got_v.push_back(bf16_to_f32(vc_h[at]));
          want_v.push_back(bf16_to_f32(f32_to_bf16(qkv[size_t(t * width + q_dim + kv_dim + h * hd + j)])));
        }
    EXPECT_LE(rel_l2(got_k, want_k), 4e-3) << "k cache, head_dim " << hd;  // one bf16 rounding step apart at most
    EXPECT_EQ(rel_l2(got_v, want_v), 0.0) << "v cache, head_dim " << hd;
    // With the executor's cos/sin tables (a prompt step's form): the same bits as computing them.
    std::vector<float> cs(size_t(max_seq * hd / 2)), sn(cs.size());
    for (long long q = 0; q < max_seq; ++q) rope_cos_sin(inv, q, cs.data() + q * hd / 2, sn.data() + q * hd / 2);
    auto dcs = to_device(cs), dsn = to_device(sn);
    auto qout2 = poisoned(q.size());
    cuda::DeviceBuffer kc2(kc.bytes()), vc2(kc.bytes());
    kc2.fill_u32(0xffffffffu, stream());
    vc2.fill_u32(0xffffffffu, stream());
    QkvPostParams p2 = p;
    p2.q_out = qout2.as<float>();
    p2.k_cache = kc2.as<unsigned short>();
    p2.v_cache = vc2.as<unsigned short>();
    p2.rope_cos = dcs.as<float>();
    p2.rope_sin = dsn.as<float>();
    cuda::launch_kernel(cuda::load_kernel(cuda::make_variant(cuda::find_family("qkv_post", "fused"), {{"BLOCK", 64}},
                                                             {DType::BF16}, arch())),
                        cuda::Dim3{unsigned(heads + 2 * kvh), unsigned(n)}, 64, 0, stream(), &p2);
    EXPECT_EQ(to_host<float>(qout2, q.size()), to_host<float>(qout, q.size())) << "q from the tables, head_dim " << hd;
    EXPECT_EQ(to_host<uint16_t>(kc2, kc_h.size()), kc_h) << "k cache from the tables, head_dim " << hd;
    EXPECT_EQ(to_host<uint16_t>(vc2, kc_h.size()), vc_h) << "v cache from the tables, head_dim " << hd;
    // qkv_post.rows (a prompt step's form: one warp per row, 30 rows over whole blocks of 4 or 8
    // warps): the same q to f32 rounding (its norm sums in another order), k within one bf16 step,
    // v the same bits; rows past the last are left alone.
    for (int block : {128, 256}) {
      auto qout3 = poisoned(q.size());
      cuda::DeviceBuffer kc3(kc.bytes()), vc3(kc.bytes());
      kc3.fill_u32(0xffffffffu, stream());
      vc3.fill_u32(0xffffffffu, stream());
      QkvPostParams p3 = p2;
      p3.q_out = qout3.as<float>();
      p3.k_cache = kc3.as<unsigned short>();
      p3.v_cache = vc3.as<unsigned short>();
      const cuda::Variant rows =
          cuda::make_variant(cuda::find_family("qkv_post", "rows"), {{"BLOCK", block}, {"HD", int(hd)}}, {DType::BF16}, arch());
      const unsigned per_block = unsigned(block / 32), total = unsigned(n * (heads + 2 * kvh));
      cuda::launch_kernel(cuda::load_kernel(rows), cuda::Dim3{(total + per_block - 1) / per_block}, unsigned(block), 0, stream(),
                          &p3);
      EXPECT_LE(rel_l2(to_host<float>(qout3, q.size()), qw), 1e-5) << rows.name();
      EXPECT_LE(rel_l2(to_host<float>(qout3, q.size()), to_host<float>(qout2, q.size())), 1e-6) << rows.name();
      const auto k3 = to_host<uint16_t>(kc3, kc_h.size());
      for (size_t i = 0; i < k3.size(); ++i)
        ASSERT_LE(std::abs(int(k3[i]) - int(kc_h[i])), 1) << rows.name() << " k cache element " << i;
      EXPECT_EQ(to_host<uint16_t>(vc3, kc_h.size()), vc_h) << rows.name();
      // q16 (prefill_q16): q as attn_prefill.pipe's bf16 fragments, bf16(q * q16_scale) of the f32
      // q above bit for bit, and q_out left alone.
      cuda::DeviceBuffer q16(q.size() * 2);
      q16.fill_u32(0xffffffffu, stream());
      auto qout4 = poisoned(q.size());
      QkvPostParams p4 = p3;
      p4.q_out = qout4.as<float>();
      p4.q16 = q16.as<unsigned short>();
      p4.q16_scale = (1.0f / std::sqrt(float(hd))) * 1.4426950408889634f;
      cuda::launch_kernel(cuda::load_kernel(rows), cuda::Dim3{(total + per_block - 1) / per_block}, unsigned(block), 0, stream(),
                          &p4);
      const std::vector<float> q3 = to_host<float>(qout3, q.size());
      const std::vector<uint16_t> got16 = to_host<uint16_t>(q16, q.size());
      for (size_t i = 0; i < got16.size(); ++i)
        ASSERT_EQ(got16[i], f32_to_bf16(q3[i] * p4.q16_scale)) << rows.name() << " q16 element " << i;
      const std::vector<float> untouched = to_host<float>(qout4, q.size());
      for (size_t i = 0; i < untouched.size(); ++i) ASSERT_TRUE(std::isnan(untouched[i])) << rows.name() << " q_out element " << i;
    }
  }
}

struct AttnCase {
  long long heads, kv_heads, hd;
  int block, tile, split;
};
void PrintTo(const AttnCase& c, std::ostream* os) {
  *os << c.heads << "/" << c.kv_heads << " heads hd" << c.hd << " block" << c.block << " tile" << c.tile << " split" << c.split;
}
class CudaDecodeAttention : public ::testing::TestWithParam<AttnCase> {};

// Ragged: three tokens of two sequences at positions that span several splits, over a cache
// filled with random bf16 values; the CPU reference attends over the same (rounded) values.
TEST_P(CudaDecodeAttention, SplitsAndCombineMatchCpu) {
  AC_REQUIRE_GPU();
  const AttnCase c = GetParam();
  const long long max_seq = 300, slots = 2, kv_dim = c.kv_heads * c.hd, q_dim = c.heads * c.hd;
  const long long max_splits = (max_seq + c.split - 1) / c.split;
  std::vector<int32_t> pos = {299, 0, 130}, slot = {0, 1, 1};
  const long long n = 3;
  // Device cache [slot][kvh][pos][hd] bf16 and the CPU cache [slot][pos][kv_dim] f32, same values.
  std::vector<float> kvals = random_vec(size_t(slots * max_seq * kv_dim), 41), vvals = random_vec(kvals.size(), 42);
  std::vector<uint16_t> kdev(kvals.size()), vdev(kvals.size());
  std::vector<float> kcpu(kvals.size()), vcpu(kvals.size());
  for (long long s = 0; s < slots; ++s)
    for (long long p = 0; p < max_seq; ++p)
      for (long long h = 0; h < c.kv_heads; ++h)
        for (long long j = 0; j < c.hd; ++j) {
          const size_t src = size_t((s * max_seq + p) * kv_dim + h * c.hd + j);
          const size_t dst = size_t(((s * c.kv_heads + h) * max_seq + p) * c.hd + j);
          kdev[dst] = f32_to_bf16(kvals[src]);
          vdev[dst] = f32_to_bf16(vvals[src]);
          kcpu[src] = bf16_to_f32(kdev[dst]);
          vcpu[src] = bf16_to_f32(vdev[dst]);
        }
  std::vector<float> q = random_vec(size_t(n * q_dim), 43), want(q.size());
  // The CPU op writes the step's k/v into the cache first: give it the values already there.
  std::vector<float> knew(size_t(n * kv_dim)), vnew(knew.size());
  for (long long t = 0; t < n; ++t)
    for (long long j = 0; j < kv_dim; ++j) {
      knew[size_t(t * kv_dim + j)] = kcpu[size_t((slot[size_t(t)] * max_seq + pos[size_t(t)]) * kv_dim + j)];
      vnew[size_t(t * kv_dim + j)] = vcpu[size_t((slot[size_t(t)] * max_seq + pos[size_t(t)]) * kv_dim + j)];
    }
  ref::KvCacheView view{kcpu.data(), vcpu.data(), max_seq, kv_dim};
  ref::attention(q.data(), knew.data(), vnew.data(), n, pos.data(), slot.data(), c.heads, c.kv_heads, c.hd, view,
                 want.data());

  auto dq = to_device(q), dk = to_device(kdev), dv = to_device(vdev), dpos = to_device(pos), dslot = to_device(slot);
  cuda::DeviceBuffer po(size_t(n * c.heads * max_splits * c.hd) * 4), pml(size_t(n * c.heads * max_splits * 2) * 4);
  auto out = poisoned(want.size());
  DecodeAttnParams p{dq.as<float>(), dk.as<unsigned short>(), dv.as<unsigned short>(), po.as<float>(), pml.as<float>(),
                     out.as<float>(), dpos.as<int>(), dslot.as<int>(), n, c.heads, c.kv_heads, max_seq, max_splits,
                     1.0f / std::sqrt(float(c.hd))};
  const int group = int(c.heads / c.kv_heads);
  const auto& ka = cuda::load_kernel(cuda::make_variant(
      cuda::find_family("attn_decode", "split"),
      {{"BLOCK", c.block}, {"TILE", c.tile}, {"SPLIT", c.split}, {"HD", int(c.hd)}, {"GROUP", group}}, {}, arch()));
  cuda::launch_kernel(ka, cuda::Dim3{unsigned(c.kv_heads), unsigned(max_splits), unsigned(n)}, unsigned(c.block), 0,
                      stream(), &p);
  const auto& kc = cuda::load_kernel(cuda::make_variant(cuda::find_family("attn_combine", "split"),
                                                 {{"SPLIT", c.split}, {"HD", int(c.hd)}}, {}, arch()));
  cuda::launch_kernel(kc, cuda::Dim3{unsigned(c.heads), unsigned(n)}, unsigned(c.hd), 0, stream(), &p);
  EXPECT_LE(rel_l2(to_host<float>(out, want.size()), want), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Points, CudaDecodeAttention,
                         ::testing::Values(AttnCase{16, 8, 128, 128, 64, 128}, AttnCase{32, 8, 64, 128, 32, 64},
                                           AttnCase{4, 2, 32, 64, 32, 64}, AttnCase{8, 8, 128, 128, 64, 256},
                                           AttnCase{10, 2, 64, 64, 32, 512}, AttnCase{24, 4, 128, 256, 32, 64},
                                           // splits of at most 32 rows: the fused kernel's warp pass
                                           // (attn_warp_pass), head dims 64 / 128 / 256
                                           AttnCase{16, 8, 128, 256, 32, 32}, AttnCase{32, 8, 64, 128, 16, 16},
                                           AttnCase{8, 4, 256, 256, 32, 32}));

// The fused decode attention: q/k norm + rope of the step's token, its k/v written to the cache,
// split attention over [0, position] and the merge by the last block, for two sequences at once.
TEST_P(CudaDecodeAttention, FusedKernelMatchesNormRopeWriteAndAttend) {
  AC_REQUIRE_GPU();
  const AttnCase c = GetParam();
  const long long max_seq = 300, slots = 2, kv_dim = c.kv_heads * c.hd, q_dim = c.heads * c.hd;
  // The fused kernel holds a whole split in shared memory: 32 to 256 rows (99 KiB at most).
  const int split = cuda::attn_fused_smem_bytes(std::min(c.split, 256), int(c.hd), int(c.heads / c.kv_heads)) <= 99 * 1024
                        ? std::min(c.split, 256)
                        : c.tile;
  const long long max_splits = (max_seq + split - 1) / split, width = q_dim + 2 * kv_dim;
  // The second token covers one split only (position 5), or is the first token (position 0).
  std::vector<int32_t> pos = {299, c.split == 512 ? 0 : c.split == 256 ? 5 : 77}, slot = {1, 0};
  const long long n = 2;
  RopeConfig rope;
  rope.theta = 1e6;
  const std::vector<float> inv = rope_inv_freq(rope, c.hd);
  std::vector<float> nq_r, nk_r;
  auto nq = store_as(random_vec(size_t(c.hd), 51, 0.1f), DType::BF16, nq_r);
  auto nk = store_as(random_vec(size_t(c.hd), 52, 0.1f), DType::BF16, nk_r);
  for (auto* r : {&nq_r, &nk_r})
    for (auto& v : *r) v += 1.0f;
  nq = store_as(nq_r, DType::BF16, nq_r);
  nk = store_as(nk_r, DType::BF16, nk_r);
  // Earlier positions' cache (bf16 on both sides), and the step's q | k | v.
  std::vector<float> kvals = random_vec(size_t(slots * max_seq * kv_dim), 53), vvals = random_vec(kvals.size(), 54);
  std::vector<uint16_t> kdev(kvals.size()), vdev(kvals.size());
  std::vector<float> kcpu(kvals.size()), vcpu(kvals.size());
  for (long long s2 = 0; s2 < slots; ++s2)
    for (long long p2 = 0; p2 < max_seq; ++p2)
      for (long long h = 0; h < c.kv_heads; ++h)
        for (long long j = 0; j < c.hd; ++j) {
          const size_t src = size_t((s2 * max_seq + p2) * kv_dim + h * c.hd + j);
          const size_t dst = size_t(((s2 * c.kv_heads + h) * max_seq + p2) * c.hd + j);
          kdev[dst] = f32_to_bf16(kvals[src]);
          vdev[dst] = f32_to_bf16(vvals[src]);
          kcpu[src] = bf16_to_f32(kdev[dst]);
          vcpu[src] = bf16_to_f32(vdev[dst]);
        }
  std::vector<float> qkv = random_vec(size_t(n * width), 55, 2.0f);
  // CPU: norm + rope q and k, round the new k and v to bf16 (as the cache holds them), attend.
  std::vector<float> q(size_t(n * q_dim)), k(size_t(n * kv_dim)), v(size_t(n * kv_dim));
  for (long long t = 0; t < n; ++t) {
    std::copy_n(qkv.begin() + t * width, q_dim, q.begin() + t * q_dim);
    std::copy_n(qkv.begin() + t * width + q_dim, kv_dim, k.begin() + t * kv_dim);
    std::copy_n(qkv.begin() + t * width + q_dim + kv_dim, kv_dim, v.begin() + t * kv_dim);
  }
  ref::rms_norm(q.data(), n * c.heads, c.hd, nq_r.data(), 1e-6f, q.data());
  ref::rms_norm(k.data(), n * c.kv_heads, c.hd, nk_r.data(), 1e-6f, k.data());
  ref::rope(q.data(), n, c.heads, c.hd, pos.data(), inv, q.data());
  ref::rope(k.data(), n, c.kv_heads, c.hd, pos.data(), inv, k.data());
  for (auto* x : {&k, &v})
    for (auto& e : *x) e = bf16_to_f32(f32_to_bf16(e));
  std::vector<float> want(q.size());
  ref::KvCacheView view{kcpu.data(), vcpu.data(), max_seq, kv_dim};
  ref::attention(q.data(), k.data(), v.data(), n, pos.data(), slot.data(), c.heads, c.kv_heads, c.hd, view, want.data());

  // The rope table the executor uploads: cos and sin of every position, [max_seq, hd / 2].
  std::vector<float> rcos(size_t(max_seq * c.hd / 2)), rsin(rcos.size());
  for (long long p2 = 0; p2 < max_seq; ++p2)
    rope_cos_sin(inv, p2, rcos.data() + p2 * c.hd / 2, rsin.data() + p2 * c.hd / 2);
  auto dqkv = to_device(qkv), dnq = to_device(nq), dnk = to_device(nk), dcos = to_device(rcos), dsin = to_device(rsin),
       dk = to_device(kdev), dv = to_device(vdev), dpos = to_device(pos), dslot = to_device(slot);
  cuda::DeviceBuffer po(size_t(n * c.heads * max_splits * c.hd) * 4), pml(size_t(n * c.heads * max_splits * 2) * 4),
      counters(size_t(n * c.kv_heads) * 4);
  counters.fill_u32(0u, stream());
  auto out = poisoned(want.size());
  FusedAttnParams p{dqkv.as<float>(), dnq.as<void>(), dnk.as<void>(), 1e-6f, dcos.as<float>(), dsin.as<float>(),
                    dk.as<unsigned short>(),
                    dv.as<unsigned short>(), po.as<float>(), pml.as<float>(), counters.as<unsigned>(), out.as<float>(),
                    dpos.as<int>(), dslot.as<int>(), n, c.heads, c.kv_heads, max_seq, max_splits,
                    1.0f / std::sqrt(float(c.hd))};
  for (int ilp : {1, 4}) {
    const auto& kern = cuda::load_kernel(cuda::make_variant(cuda::find_family("attn_decode", "fused"),
                                                  {{"BLOCK", c.block}, {"SPLIT", split}, {"HD", int(c.hd)},
                                                   {"GROUP", int(c.heads / c.kv_heads)}, {"ILP", ilp}},
                                                  {DType::BF16}, arch()));
    for (int rep = 0; rep < 2; ++rep) {  // twice: the merge counters must have been reset
      out.fill_u32(0x7fc00000u, stream());
      cuda::launch_kernel(kern, cuda::Dim3{unsigned(c.kv_heads), unsigned(max_splits), unsigned(n)}, unsigned(c.block),
                          size_t(cuda::attn_fused_smem_bytes(split, int(c.hd), int(c.heads / c.kv_heads))), stream(), &p);
      EXPECT_LE(rel_l2(to_host<float>(out, want.size()), want), 1e-5) << "ilp " << ilp << " rep " << rep;
    }
  }
  // attn_decode.cluster (sm_90): the same outputs from CLUSTER blocks per KV head, each with an
  // equal share of the positions (none for most blocks at position 0), merged in the cluster's
  // shared memory. Two blocks of at most 128 rows cannot hold token 0's 300 positions: its
  // outputs are NaN, token 1's still right. Sixteen blocks (a non-portable cluster size) and two
  // blocks of 256, 384 or 512 rows (long splits, past 48 KiB of shared memory; the last two with
  // attn_split_pass's four accumulators) hold them.
  const int group = int(c.heads / c.kv_heads);
  if (cuda::arch_constraint(cuda::find_family("attn_decode", "cluster"), arch()).empty())
    for (auto [cl, cap] : {std::pair{2, 128}, std::pair{4, 128}, std::pair{8, 128}, std::pair{16, 128}, std::pair{2, 256},
                           std::pair{2, 384}, std::pair{2, 512}}) {
      if ((group * c.hd) % cl != 0) continue;
      int csplit = cap > 256 ? cap : 16;  // 384 and 512 as they are
      while (csplit * cl < max_seq && csplit < cap) csplit *= 2;
      if (cuda::attn_fused_smem_bytes(csplit, int(c.hd), group) > cuda::max_dynamic_smem(arch())) continue;
      const auto& kern = cuda::load_kernel(cuda::make_variant(cuda::find_family("attn_decode", "cluster"),
                                                              {{"BLOCK", c.block}, {"SPLIT", csplit}, {"HD", int(c.hd)},
                                                               {"GROUP", group}, {"CLUSTER", cl}},
                                                              {DType::BF16}, arch()));
      out.fill_u32(0x4640e400u, stream());  // 12345.0: not a value the kernel could leave by accident
      cuda::launch_kernel(kern, cuda::Dim3{unsigned(c.kv_heads), unsigned(cl), unsigned(n)}, unsigned(c.block),
                          size_t(cuda::attn_fused_smem_bytes(csplit, int(c.hd), group)), stream(), &p);
      const std::vector<float> got = to_host<float>(out, want.size());
      const auto tok = [&](const std::vector<float>& x, long long t) {
        return std::vector<float>(x.begin() + t * q_dim, x.begin() + (t + 1) * q_dim);
      };
      EXPECT_LE(rel_l2(tok(got, 1), tok(want, 1)), 1e-5) << "cluster " << cl << " split " << csplit;
      if (csplit * cl >= max_seq) {
        EXPECT_LE(rel_l2(tok(got, 0), tok(want, 0)), 1e-5) << "cluster " << cl;
      } else {
        for (float x : tok(got, 0)) ASSERT_TRUE(std::isnan(x)) << "cluster " << cl << ": rows past CLUSTER * SPLIT";
      }
    }
  // resid + W_o . want per token on the CPU (W_o: [hidden, q_dim]): what the two routes that add
  // the output projection into the residual stream must leave there.
  const auto resid_plus_wo = [&](const std::vector<float>& res0, const std::vector<float>& wo_r, long long hidden) {
    std::vector<float> r = res0;
    for (long long t = 0; t < n; ++t)
      for (long long row = 0; row < hidden; ++row) {
        double acc = 0;
        for (long long j = 0; j < q_dim; ++j) acc += double(wo_r[size_t(row * q_dim + j)]) * want[size_t(t * q_dim + j)];
        r[size_t(t * hidden + row)] += float(acc);
      }
    return r;
  };
  // attn_o.cluster (sm_90): the same attention (still written to out), multiplied by W_o and added
  // into the residual stream, with 1, 2 or 4 clusters per KV head each computing the whole
  // attention and its share of W_o's rows: against resid + W_o . want on the CPU.
  if (cuda::arch_constraint(cuda::find_family("attn_o", "cluster"), arch()).empty()) {
    const long long hidden = 256;
    std::vector<float> wo_r;
    const auto wo = store_as(random_vec(size_t(hidden * q_dim), 56, 0.05f), DType::BF16, wo_r);
    const std::vector<float> res0 = random_vec(size_t(n * hidden), 57);
    const std::vector<float> want_res = resid_plus_wo(res0, wo_r, hidden);
    auto dwo = to_device(wo);
    int tried = 0;
    for (auto [cl, copies, late] : {std::tuple{8, 1, 0}, std::tuple{8, 2, 1}, std::tuple{16, 1, 1}, std::tuple{4, 4, 2},
                                    std::tuple{16, 4, 0}, std::tuple{8, 1, 2}}) {
      int csplit = 16;  // the executor's short range: the power of two whose CLUSTER blocks hold the context
      while (csplit * cl < max_seq) csplit *= 2;
      const std::map<std::string, int> values = {{"BLOCK", c.block}, {"SPLIT", csplit}, {"HD", int(c.hd)},
                                                 {"GROUP", group},   {"CLUSTER", cl},   {"COPIES", copies},
                                                 {"LATE", late}};
      const cuda::Family& f = cuda::find_family("attn_o", "cluster");
      const long long rows = hidden / (cl * copies);
      const long long smem = cuda::attn_o_smem_bytes(csplit, int(c.hd), group, rows);
      if (csplit > 128 || !f.constraint(values).empty() || smem > cuda::max_dynamic_smem(arch())) continue;
      ++tried;
      const auto& kern = cuda::load_kernel(cuda::make_variant(f, values, {DType::BF16}, arch()));
      auto dres = to_device(res0);
      AttnOParams ap{p, dwo.as<void>(), dres.as<float>(), hidden};
      out.fill_u32(0x4640e400u, stream());
      cuda::launch_kernel(kern, cuda::Dim3{unsigned(c.kv_heads), unsigned(cl), unsigned(n * copies)}, unsigned(c.block),
                          size_t(smem), stream(), &ap);
      EXPECT_LE(rel_l2(to_host<float>(out, want.size()), want), 1e-5) << "attn_o cluster " << cl << " copies " << copies << " late " << late;
      EXPECT_LE(rel_l2(to_host<float>(dres, want_res.size()), want_res), 1e-5)
          << "attn_o cluster " << cl << " copies " << copies << " late " << late;
    }
    if ((group * c.hd) % 64 == 0 && c.block <= group * c.hd) EXPECT_GT(tried, 0);
  }
  // attn_decode.parts + gemv.merged (attn_merge_o): PARTS independent blocks per KV head write
  // their partials, the output projection merges them while staging x' (one token per launch:
  // batch 1) and adds W_o . attention into the residual stream, against resid + W_o . want on the
  // CPU; a token whose context the PARTS blocks cannot hold gets NaN (as the cluster's outputs).
  {
    const long long hidden = 256;
    std::vector<float> wo_r;
    const auto wo = store_as(random_vec(size_t(hidden * q_dim), 58, 0.05f), DType::BF16, wo_r);
    const std::vector<float> res0 = random_vec(size_t(n * hidden), 59);
    const std::vector<float> want_res = resid_plus_wo(res0, wo_r, hidden);
    auto dwo = to_device(wo);
    cuda::DeviceBuffer ppo(size_t(n * c.heads * 16 * c.hd) * 4), ppml(size_t(n * c.heads * 16 * 2) * 4);
    FusedAttnParams pp = p;
    pp.part_o = ppo.as<float>();
    pp.part_ml = ppml.as<float>();
    int tried = 0;
    for (auto [parts, cap, o] : {std::tuple{8, 128, cuda::GemvChoice{256, 2, 4, 2}}, std::tuple{2, 128, cuda::GemvChoice{128, 2, 1, 4}},
                                 std::tuple{16, 128, cuda::GemvChoice{256, 1, 2, 1}}, std::tuple{4, 512, cuda::GemvChoice{128, 4, 2, 8}}}) {
      int psplit = cap > 256 ? cap : 16;
      while (psplit * parts < max_seq && psplit < cap) psplit *= 2;
      const std::map<std::string, int> av = {
          {"BLOCK", c.block}, {"SPLIT", psplit}, {"HD", int(c.hd)}, {"GROUP", group}, {"PARTS", parts}};
      const cuda::Family& fa = cuda::find_family("attn_decode", "parts");
      const long long smem = cuda::attn_fused_smem_bytes(psplit, int(c.hd), group);
      if (!fa.constraint(av).empty() || smem > cuda::max_dynamic_smem(arch())) continue;
      ++tried;
      const auto& ka = cuda::load_kernel(cuda::make_variant(fa, av, {DType::BF16}, arch()));
      ppml.fill_u32(0x4640e400u, stream());
      cuda::launch_kernel(ka, cuda::Dim3{unsigned(c.kv_heads), unsigned(parts), unsigned(n)}, unsigned(c.block), size_t(smem),
                          stream(), &pp);
      const cuda::Variant vo = cuda::make_variant(
          cuda::find_family("gemv", "merged"),
          {{"BLOCK", o.block}, {"ROWS", o.rows}, {"UNROLL", o.unroll}, {"SPLITK", o.splitk}, {"BATCH", 1}, {"PARTS", parts}},
          {DType::BF16}, arch());
      auto dres = to_device(res0);
      for (long long t = 0; t < n; ++t) {
        GemvParams gp{ppo.as<float>() + t * c.heads * parts * c.hd, nullptr, 1e-6f, dwo.as<void>(), nullptr, nullptr,
                      dres.as<float>() + t * hidden, nullptr, 1, hidden, q_dim,
                      ppml.as<float>() + t * c.heads * parts * 2, group, c.hd};
        const cuda::LaunchShape ls = cuda::gemv_launch_shape(vo, hidden, q_dim);
        cuda::launch_kernel(cuda::load_kernel(vo), cuda::Dim3{ls.grid_x, ls.grid_y}, ls.threads, ls.smem, stream(), &gp);
      }
      const std::vector<float> got = to_host<float>(dres, want_res.size());
      for (long long t = 0; t < n; ++t) {
        const std::vector<float> g(got.begin() + t * hidden, got.begin() + (t + 1) * hidden),
            w(want_res.begin() + t * hidden, want_res.begin() + (t + 1) * hidden);
        if (psplit * parts >= pos[size_t(t)] + 1) {
          EXPECT_LE(rel_l2(g, w), 1e-5) << "parts " << parts << " split " << psplit << " token " << t << " " << vo.name();
        } else {
          for (float x : g) ASSERT_TRUE(std::isnan(x)) << "parts " << parts << ": rows past PARTS * SPLIT";
        }
      }
    }
    EXPECT_GT(tried, 0);
  }
  // The cache now holds the step's k and v at each token's position.
  auto kc = to_host<uint16_t>(dk, kdev.size());
  for (long long t = 0; t < n; ++t)
    for (long long j = 0; j < kv_dim; ++j) {
      const long long h = j / c.hd, d = j % c.hd;
      const size_t at = size_t(((slot[size_t(t)] * c.kv_heads + h) * max_seq + pos[size_t(t)]) * c.hd + d);
      ASSERT_EQ(bf16_to_f32(kc[at]), k[size_t(t * kv_dim + j)]) << "token " << t << " element " << j;
    }
}

}  // namespace
