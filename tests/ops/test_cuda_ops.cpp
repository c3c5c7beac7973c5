// Every CUDA op against the CPU reference op (llama.cpp test-backend-ops style): one small case
// struct per shape, random inputs, outputs poisoned with NaN first, relative L2 error within the
// per-dtype bound of DESIGN.md (f32 kernels 1e-5; bf16/f16 activation routes 1e-2).
// Skipped, with the reason printed, where there is no GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "agentcompile/tuning/reference_ops.h"
#include "agentcompile/core/error.h"
#include "agentcompile/ir/rope.h"
#include "backends/cuda/cublas_route.h"
#include "backends/cuda/kernel_loader.h"
#include "ops/cuda_test_util.h"

extern "C" {
#include "../../kernels/cuda/common/params.h"
}

using namespace ac;
using namespace ac::test;

namespace {

constexpr double kF32Bound = 1e-5;
constexpr double kLowPrecisionBound = 1e-2;

const cuda::LoadedKernel& ref_kernel(const std::string& op, std::map<std::string, int> params = {},
                                     std::vector<DType> types = {}) {
  params.emplace("BLOCK", 256);
  return cuda::load_kernel(cuda::make_variant(cuda::find_family(op, "ref"), params, types, cuda::Device::get().info().arch()));
}

struct LinearCase {
  long long n, in, out;
  DType w;
  bool bias;
};
void PrintTo(const LinearCase& c, std::ostream* os) {
  *os << c.n << "x" << c.in << "->" << c.out << " " << dtype_user_name(c.w) << (c.bias ? " bias" : "");
}

class CudaLinear : public ::testing::TestWithParam<LinearCase> {};

TEST_P(CudaLinear, ReferenceKernelAndCublasMatchCpu) {
  AC_REQUIRE_GPU();
  const LinearCase c = GetParam();
  std::vector<float> x = random_vec(size_t(c.n * c.in), 1), w_r, b_r;
  auto w_bytes = store_as(random_vec(size_t(c.out * c.in), 2, 0.1f), c.w, w_r);
  auto b_bytes = store_as(random_vec(size_t(c.out), 3), c.w, b_r);
  std::vector<float> want(size_t(c.n * c.out));
  ref::linear(x.data(), c.n, c.in, w_r.data(), c.bias ? b_r.data() : nullptr, c.out, want.data());

  auto dx = to_device(x);
  auto dw = to_device(w_bytes);
  auto db = to_device(b_bytes);
  auto out = poisoned(want.size());
  LinearParams p{dx.as<float>(), nullptr, dw.as<void>(), c.bias ? db.as<void>() : nullptr, out.as<float>(), c.n, c.in, c.out};
  cuda::launch_kernel(ref_kernel("linear", {}, {c.w}), cuda::Dim3{unsigned((c.out + 7) / 8), unsigned(c.n)}, 256, 0,
                      stream(), &p);
  EXPECT_LE(rel_l2(to_host<float>(out, want.size()), want), kF32Bound) << "reference kernel";

  // cuBLAS route: activations cast to the weight dtype first (f32 weights: f32 GEMM, no TF32).
  cuda::CublasHandle h(stream());
  auto out2 = poisoned(want.size());
  const void* xin = dx.as<void>();
  cuda::DeviceBuffer xc(size_t(c.n * c.in) * 4);
  if (c.w != DType::F32) {
    CastParams cp{dx.as<float>(), xc.as<void>(), c.n * c.in};
    cuda::launch_kernel(ref_kernel("cast", {}, {c.w}), cuda::Dim3{cuda::elementwise_blocks(c.n * c.in, 256)}, 256, 0,
                        stream(), &cp);
    xin = xc.as<void>();
  }
  cuda::cublas_linear(h, c.w, xin, dw.as<void>(), out2.as<float>(), c.n, c.in, c.out);
  if (c.bias) {
    BiasParams bp{out2.as<float>(), db.as<void>(), c.n, c.out};
    cuda::launch_kernel(ref_kernel("bias", {}, {c.w}), cuda::Dim3{cuda::elementwise_blocks(c.n * c.out, 256)}, 256, 0,
                        stream(), &bp);
  }
  EXPECT_LE(rel_l2(to_host<float>(out2, want.size()), want), c.w == DType::F32 ? kF32Bound : kLowPrecisionBound)
      << "cuBLAS route";
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaLinear,
                         ::testing::Values(LinearCase{1, 64, 96, DType::BF16, false}, LinearCase{3, 100, 37, DType::BF16, true},
                                           LinearCase{17, 256, 300, DType::F16, true},
                                           LinearCase{64, 512, 128, DType::F32, false},
                                           LinearCase{5, 2048, 1024, DType::BF16, false}));

TEST(CudaOps, EmbedAndRmsNormMatchCpu) {
  AC_REQUIRE_GPU();
  for (DType t : {DType::BF16, DType::F16, DType::F32}) {
    // 16-bit tables gather by 16-byte chunks: 8200 takes a second pass of the block's chunks
    // (1025 > 4 x 256), 96 one pass, 100 (not a multiple of 8) and the odd-width rows the
    // one-value loop.
    const long long vocab = 300, hidden = 96, n = 7;
    const std::vector<int32_t> ids = {0, 299, 5, 5, 17, 123, 42};
    for (long long width : {8200LL, 100LL, hidden}) {
      std::vector<float> wide_r;
      auto wide = store_as(random_vec(size_t(vocab * width), 9), t, wide_r);
      std::vector<float> want(size_t(n * width));
      ref::embed(ids.data(), n, wide_r.data(), width, want.data());
      auto dw = to_device(wide);
      auto dids = to_device(ids);
      auto got = poisoned(want.size());
      EmbedParams wp{dw.as<void>(), dids.as<int>(), got.as<float>(), n, width, vocab};
      cuda::launch_kernel(ref_kernel("embed", {}, {t}), cuda::Dim3{unsigned(n)}, 256, 0, stream(), &wp);
      EXPECT_EQ(rel_l2(to_host<float>(got, want.size()), want), 0.0) << "embed " << dtype_user_name(t) << " width " << width;
    }
    std::vector<float> table_r;
    auto dt = to_device(store_as(random_vec(size_t(vocab * hidden), 4), t, table_r));
    // An id outside the table (a chained decode step fed a NaN step's -1) gives a NaN row and
    // reads nothing outside the table; the rows beside it are still gathered.
    {
      std::vector<int32_t> bad = {3, -1, int32_t(vocab), 7};
      auto dbad = to_device(bad);
      auto got = to_device(std::vector<float>(size_t(4 * hidden), 12345.0f));  // not NaN: the NaN rows must be written
      EmbedParams bp{dt.as<void>(), dbad.as<int>(), got.as<float>(), 4, hidden, vocab};
      cuda::launch_kernel(ref_kernel("embed", {}, {t}), cuda::Dim3{4u}, 256, 0, stream(), &bp);
      std::vector<float> h = to_host<float>(got, size_t(4 * hidden));
      for (long long j = 0; j < hidden; ++j) {
        ASSERT_EQ(h[size_t(j)], table_r[size_t(3 * hidden + j)]) << j;
        ASSERT_TRUE(std::isnan(h[size_t(hidden + j)])) << j;
        ASSERT_TRUE(std::isnan(h[size_t(2 * hidden + j)])) << j;
        ASSERT_EQ(h[size_t(3 * hidden + j)], table_r[size_t(7 * hidden + j)]) << j;
      }
    }

    // RMSNorm over rows and over head groups (qk_norm: dim = head_dim).
    for (long long groups : {1LL, 4LL}) {
      const long long dim = hidden / groups, rows = n * groups;
      std::vector<float> g_r;
      auto gamma = store_as(random_vec(size_t(dim), 5), t, g_r);
      std::vector<float> x = random_vec(size_t(n * hidden), 6, 3.0f), want2(x.size());
      ref::rms_norm(x.data(), rows, dim, g_r.data(), 1e-6f, want2.data());
      auto dx = to_device(x);
      auto dg = to_device(gamma);
      auto out2 = poisoned(x.size());
      RmsNormParams rp{dx.as<float>(), dg.as<void>(), out2.as<float>(), rows, dim, 1e-6f};
      cuda::launch_kernel(ref_kernel("rms_norm", {}, {t}), cuda::Dim3{unsigned(rows)}, 256, 0, stream(), &rp);
      EXPECT_LE(rel_l2(to_host<float>(out2, x.size()), want2), kF32Bound) << "rms_norm groups=" << groups;
    }
  }
}

TEST(CudaOps, RopeMatchesCpuIncludingLlama3Scaling) {
  AC_REQUIRE_GPU();
  RopeConfig rope;
  rope.theta = 500000.0;
  rope.type = RopeType::Llama3;
  rope.factor = 8.0;
  rope.original_max_position_embeddings = 64;
  for (long long head_dim : {32LL, 64LL, 128LL}) {
    const long long n = 9, heads = 3;
    std::vector<int32_t> pos = {0, 1, 2, 100, 1000, 5000, 40000, 7, 8};
    std::vector<float> inv = rope_inv_freq(rope, head_dim);
    std::vector<float> x = random_vec(size_t(n * heads * head_dim), 7), want(x.size());
    ref::rope(x.data(), n, heads, head_dim, pos.data(), inv, want.data());
    auto dx = to_device(x);
    auto dp = to_device(pos);
    auto di = to_device(inv);
    auto out = poisoned(x.size());
    RopeParams p{dx.as<float>(), out.as<float>(), dp.as<int>(), di.as<float>(), n, heads, head_dim};
    cuda::launch_kernel(ref_kernel("rope"), cuda::Dim3{unsigned(n)}, 256, 0, stream(), &p);
    EXPECT_LE(rel_l2(to_host<float>(out, x.size()), want), kF32Bound) << "head_dim " << head_dim;
  }
}

struct AttentionCase {
  long long heads, kv_heads, head_dim;
  long long window = 0;  // sliding window (0: none)
};
void PrintTo(const AttentionCase& c, std::ostream* os) {
  *os << c.heads << "/" << c.kv_heads << " heads hd" << c.head_dim;
  if (c.window) *os << " window " << c.window;
}
class CudaAttention : public ::testing::TestWithParam<AttentionCase> {};

// A ragged step: slot 1 prefills 5 tokens from position 0 while slot 0 decodes one token at
// position 9 over a cache filled by an earlier step.
TEST_P(CudaAttention, KvWriteAndAttentionMatchCpu) {
  AC_REQUIRE_GPU();
  const AttentionCase c = GetParam();
  const long long max_seq = 16, slots = 2, kv_dim = c.kv_heads * c.head_dim, q_dim = c.heads * c.head_dim;
  std::vector<float> kc(size_t(slots * max_seq * kv_dim)), vc(kc.size());
  // Earlier step: slot 0 positions 0..8.
  std::vector<int32_t> pos0 = {0, 1, 2, 3, 4, 5, 6, 7, 8}, slot0(9, 0);
  std::vector<float> q0 = random_vec(size_t(9 * q_dim), 8), k0 = random_vec(size_t(9 * kv_dim), 9),
                     v0 = random_vec(size_t(9 * kv_dim), 10), o0(q0.size());
  ref::KvCacheView view{kc.data(), vc.data(), max_seq, kv_dim};
  ref::attention(q0.data(), k0.data(), v0.data(), 9, pos0.data(), slot0.data(), c.heads, c.kv_heads, c.head_dim, view,
                 o0.data(), c.window);
  auto dkc = to_device(kc);  // the GPU cache starts from the CPU's state after the earlier step
  auto dvc = to_device(vc);
  std::vector<int32_t> pos = {9, 0, 1, 2, 3, 4}, slot = {0, 1, 1, 1, 1, 1};
  const long long n = 6;
  std::vector<float> q = random_vec(size_t(n * q_dim), 11), k = random_vec(size_t(n * kv_dim), 12),
                     v = random_vec(size_t(n * kv_dim), 13), want(q.size());
  ref::attention(q.data(), k.data(), v.data(), n, pos.data(), slot.data(), c.heads, c.kv_heads, c.head_dim, view,
                 want.data(), c.window);
  auto dq = to_device(q), dk = to_device(k), dv = to_device(v), dpos = to_device(pos), dslot = to_device(slot);
  auto out = poisoned(want.size());
  KvWriteParams w{dk.as<float>(), dv.as<float>(), dkc.as<float>(), dvc.as<float>(), dpos.as<int>(), dslot.as<int>(), n,
                  kv_dim, max_seq};
  cuda::launch_kernel(ref_kernel("kv_write"), cuda::Dim3{unsigned(n)}, 256, 0, stream(), &w);
  const int maxd = int((c.head_dim + 255) / 256);
  AttentionParams p{dq.as<float>(), dkc.as<float>(), dvc.as<float>(), out.as<float>(), dpos.as<int>(), dslot.as<int>(),
                    n, c.heads, c.kv_heads, c.head_dim, max_seq, 1.0f / std::sqrt(float(c.head_dim)), c.window};
  cuda::launch_kernel(ref_kernel("attention", {{"MAXD", maxd == 3 ? 4 : maxd}}), cuda::Dim3{unsigned(c.heads), unsigned(n)},
                      256, 0, stream(), &p);
  EXPECT_LE(rel_l2(to_host<float>(out, want.size()), want), kF32Bound);
  EXPECT_LE(rel_l2(to_host<float>(dkc, kc.size()), kc), 0.0) << "KV cache contents";
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaAttention,
                         ::testing::Values(AttentionCase{4, 4, 32}, AttentionCase{8, 2, 64}, AttentionCase{10, 2, 128},
                                           AttentionCase{5, 1, 80}, AttentionCase{2, 1, 512},
                                           AttentionCase{8, 2, 64, 4}, AttentionCase{4, 4, 32, 1}));

// The mixture-of-experts kernels (router linear on the host side here, as the executor runs it)
// against ref::moe_mlp: 6 experts, 2 and 3 per token, with and without renormalisation, in bf16
// and f32 storage, over 5 tokens. The routing's ties are not exercised (random logits).
struct MoeCase {
  long long top_k;
  bool renormalise;
  DType w;
};
void PrintTo(const MoeCase& c, std::ostream* os) {
  *os << "top" << c.top_k << (c.renormalise ? " renorm " : " ") << dtype_user_name(c.w);
}
class CudaMoe : public ::testing::TestWithParam<MoeCase> {};

TEST_P(CudaMoe, RouteGateUpDownMatchCpu) {
  AC_REQUIRE_GPU();
  const MoeCase c = GetParam();
  const long long n = 5, hidden = 72, inter = 40, experts = 6;
  std::vector<float> x = random_vec(size_t(n * hidden), 21), router_r;
  auto router = store_as(random_vec(size_t(experts * hidden), 22, 0.3f), c.w, router_r);
  std::vector<std::vector<float>> rounded(static_cast<size_t>(3 * experts));
  std::vector<cuda::DeviceBuffer> dev;
  std::vector<const void*> table(static_cast<size_t>(3 * experts));
  std::vector<ref::ExpertView> views(static_cast<size_t>(experts));
  for (long long e = 0; e < experts; ++e)
    for (long long k = 0; k < 3; ++k) {
      const size_t i = size_t(k * experts + e);
      auto bytes = store_as(random_vec(size_t(hidden * inter), uint64_t(30 + i), 0.15f), c.w, rounded[i]);
      dev.push_back(to_device(bytes));
      table[i] = reinterpret_cast<const void*>(dev.back().ptr());
    }
  for (long long e = 0; e < experts; ++e)
    views[size_t(e)] = {rounded[size_t(e)].data(), rounded[size_t(experts + e)].data(), rounded[size_t(2 * experts + e)].data()};
  std::vector<float> want(size_t(n * hidden));
  ref::moe_mlp(x.data(), n, hidden, router_r.data(), views, inter, c.top_k, c.renormalise, want.data());

  std::vector<float> logits(size_t(n * experts));
  ref::linear(x.data(), n, hidden, router_r.data(), nullptr, experts, logits.data());
  auto dlogits = to_device(logits), dx = to_device(x), dtable = to_device(table);
  cuda::DeviceBuffer ids(size_t(n * c.top_k) * 4), weights(size_t(n * c.top_k) * 4);
  auto act = poisoned(size_t(n * c.top_k * inter));
  auto out = poisoned(want.size());
  MoeRouteParams rp{dlogits.as<float>(), ids.as<int>(), weights.as<float>(), n, experts, c.top_k, c.renormalise ? 1 : 0};
  cuda::launch_kernel(ref_kernel("moe_route"), cuda::Dim3{unsigned(n)}, 256, 0, stream(), &rp);
  const void* const* t = dtable.as<const void*>();
  MoeExpertParams gu{dx.as<float>(), ids.as<int>(), weights.as<float>(), t, t + experts, act.as<float>(), n, c.top_k, hidden, inter};
  cuda::launch_kernel(ref_kernel("moe_gate_up", {}, {c.w}), cuda::Dim3{unsigned((inter + 7) / 8), unsigned(n * c.top_k)}, 256, 0,
                      stream(), &gu);
  MoeExpertParams dp{act.as<float>(), ids.as<int>(), weights.as<float>(), t + 2 * experts, nullptr, out.as<float>(), n, c.top_k,
                     hidden, inter};
  cuda::launch_kernel(ref_kernel("moe_down", {}, {c.w}), cuda::Dim3{unsigned((hidden + 7) / 8), unsigned(n)}, 256, 0, stream(), &dp);
  EXPECT_LE(rel_l2(to_host<float>(out, want.size()), want), kF32Bound);
  // The picks: each token's ids in increasing order, the ones the CPU routing picks.
  const auto got_ids = to_host<int32_t>(ids, size_t(n * c.top_k));
  for (long long tok = 0; tok < n; ++tok) {
    std::vector<int32_t> want_ids(size_t(c.top_k));
    std::vector<float> w(size_t(c.top_k));
    ref::moe_route(logits.data() + tok * experts, experts, c.top_k, c.renormalise, want_ids.data(), w.data());
    std::sort(want_ids.begin(), want_ids.end());
    EXPECT_EQ(std::vector<int32_t>(got_ids.begin() + tok * c.top_k, got_ids.begin() + (tok + 1) * c.top_k), want_ids)
        << "token " << tok;
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaMoe,
                         ::testing::Values(MoeCase{2, true, DType::BF16}, MoeCase{3, false, DType::BF16},
                                           MoeCase{2, false, DType::F32}));

TEST(CudaOps, ElementwiseMatchCpu) {
  AC_REQUIRE_GPU();
  const long long count = 100003;  // not a multiple of the block
  std::vector<float> a = random_vec(size_t(count), 14, 4.0f), b = random_vec(size_t(count), 15), want(a.size());
  auto da = to_device(a), db = to_device(b);
  ref::swiglu(a.data(), b.data(), count, want.data());
  auto out = poisoned(a.size());
  ElementwiseParams p{da.as<float>(), db.as<float>(), out.as<float>(), count};
  cuda::launch_kernel(ref_kernel("swiglu"), cuda::Dim3{cuda::elementwise_blocks(count, 256)}, 256, 0, stream(), &p);
  EXPECT_LE(rel_l2(to_host<float>(out, a.size()), want), kF32Bound) << "swiglu";
  ref::add(a.data(), b.data(), count, want.data());
  auto out2 = poisoned(a.size());
  p.out = out2.as<float>();
  cuda::launch_kernel(ref_kernel("add"), cuda::Dim3{cuda::elementwise_blocks(count, 256)}, 256, 0, stream(), &p);
  EXPECT_EQ(rel_l2(to_host<float>(out2, a.size()), want), 0.0) << "add";
}

// The fast path's prefill passes that write a GEMM's 16-bit input: rms_norm.cast is exactly the
// reference RMSNorm kernel's f32 result rounded once (same arithmetic, the row held in registers or
// read twice), and swiglu.w16 the CPU's
// silu(gate) * up of the 16-bit inputs, rounded, within one unit in the last place (the GPU's expf
// is not the host's). Every element written (a NaN-poisoned output, sizes not multiples of the block).
TEST(CudaOps, PrefillPassesWriteSixteenBitInputs) {
  AC_REQUIRE_GPU();
  const std::string arch = cuda::Device::get().info().arch();
  for (DType t : {DType::BF16, DType::F16})
  // dim 2050: the row in registers (at most 16 values per thread); 5000: the two-pass form.
  for (const long long dim : {2050LL, 5000LL}) {
    const long long rows = 7;
    std::vector<float> g_r, x = random_vec(size_t(rows * dim), 31, 3.0f);
    auto dg = to_device(store_as(random_vec(size_t(dim), 32), t, g_r));
    auto dx = to_device(x);
    auto f32 = poisoned(x.size());
    RmsNormParams rp{dx.as<float>(), dg.as<void>(), f32.as<float>(), rows, dim, 1e-6f};
    cuda::launch_kernel(ref_kernel("rms_norm", {}, {t}), cuda::Dim3{unsigned(rows)}, 256, 0, stream(), &rp);
    cuda::DeviceBuffer h16(x.size() * 2);
    h16.fill_u32(0xffffffffu, stream());  // NaN in both 16-bit formats
    NormCastParams np{dx.as<float>(), dg.as<void>(), h16.as<void>(), rows, dim, 1e-6f};
    const auto norm = cuda::make_variant(cuda::find_family("rms_norm", "cast"), {{"BLOCK", 256}}, {t}, arch);
    cuda::launch_kernel(cuda::load_kernel(norm), cuda::Dim3{unsigned(rows)}, 256, 0, stream(), &np);
    const std::vector<float> ref32 = to_host<float>(f32, x.size());
    const std::vector<uint16_t> got = to_host<uint16_t>(h16, x.size());
    size_t differ = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      uint16_t want = 0;
      store_from_f32(&want, t, 0, ref32[i]);
      differ += got[i] != want;
    }
    EXPECT_EQ(differ, 0u) << "rms_norm.cast " << dtype_user_name(t) << " dim " << dim;
    if (dim != 2050) continue;  // swiglu.w16 once per dtype

    const long long count = 100003;  // eight per 16-byte load, and a remainder of three
    std::vector<float> gr, ur;
    auto dgate = to_device(store_as(random_vec(size_t(count), 33, 4.0f), t, gr));
    auto dup = to_device(store_as(random_vec(size_t(count), 34), t, ur));
    std::vector<float> want(static_cast<size_t>(count));
    ref::swiglu(gr.data(), ur.data(), count, want.data());
    cuda::DeviceBuffer o16(size_t(count) * 2);
    o16.fill_u32(0xffffffffu, stream());
    Swiglu16Params sp{dgate.as<void>(), dup.as<void>(), o16.as<void>(), count};
    const auto sw = cuda::make_variant(cuda::find_family("swiglu", "w16"), {{"BLOCK", 256}}, {t}, arch);
    cuda::launch_kernel(cuda::load_kernel(sw), cuda::Dim3{cuda::elementwise_blocks(count, 256)}, 256, 0, stream(), &sp);
    const std::vector<uint16_t> s16 = to_host<uint16_t>(o16, size_t(count));
    size_t far = 0;
    for (size_t i = 0; i < s16.size(); ++i) {
      uint16_t w = 0;
      store_from_f32(&w, t, 0, want[i]);
      const int ulps = std::abs(int(s16[i]) - int(w));  // same sign: adjacent encodings are adjacent values
      far += ulps > 1;
    }
    EXPECT_EQ(far, 0u) << "swiglu.w16 " << dtype_user_name(t);
  }
}

TEST(CudaOps, ArgmaxFirstOnTiesAndFlagsNonFinite) {
  AC_REQUIRE_GPU();
  const long long vocab = 151936;
  std::vector<float> l = random_vec(size_t(3 * vocab), 16);
  l[size_t(5000)] = 50.0f;  // row 0: a clear maximum
  l[size_t(vocab + 7)] = 60.0f;
  l[size_t(vocab + 70000)] = 60.0f;  // row 1: a tie, the lower index wins
  l[size_t(2 * vocab + 3)] = std::numeric_limits<float>::quiet_NaN();  // row 2: NaN
  auto dl = to_device(l);
  cuda::DeviceBuffer out(12);
  ArgmaxParams p{dl.as<float>(), out.as<int>(), 3, vocab};
  cuda::launch_kernel(ref_kernel("argmax"), cuda::Dim3{3}, 256, 0, stream(), &p);
  auto got = to_host<int32_t>(out, 3);
  EXPECT_EQ(got[0], 5000);
  EXPECT_EQ(got[1], 7);
  EXPECT_EQ(got[2], -1);
}

TEST(CudaOps, LaunchChecksHardwareLimits) {
  AC_REQUIRE_GPU();
  const auto& k = ref_kernel("add");
  ElementwiseParams p{nullptr, nullptr, nullptr, 0};
  // More threads than the kernel was built for (__launch_bounds__(256)).
  EXPECT_THROW(cuda::launch_kernel(k, cuda::Dim3{1}, 512, 0, stream(), &p), ac::Error);
  // More shared memory than any block can have.
  EXPECT_THROW(cuda::launch_kernel(k, cuda::Dim3{1}, 256, size_t(1) << 30, stream(), &p), ac::Error);
}

}  // namespace
