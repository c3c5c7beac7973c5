// mlp.fused against the reference composition of a layer's MLP (rms_norm, gate and up linear,
// swiglu, down linear, residual add): ragged token counts and intermediate sizes that are not
// a multiple of CHUNK, with and without biases, every tile, 1 to 4 threads; outputs poisoned
// with NaN first, relative L2 error within the f32 bound (DESIGN.md).
#include <gtest/gtest.h>

#include <cmath>

#include "agentcompile/backends/cpu/cpu_families.h"
#include "agentcompile/tuning/reference_ops.h"
#include "agentcompile/core/error.h"
#include "unit/cpu_family_test_util.h"

namespace ac::cpu {
namespace {

using test::all_bindings;
using test::random_vec;
using test::rel_l2;

struct MlpCase {
  int64_t n, hidden, inter;
  bool bias;
};

struct MlpData {
  std::vector<float> x, residual, norm, gate, up, down, gate_b, up_b, down_b;
  MlpWeights w;
  MlpData(const MlpCase& c, uint32_t seed) {
    x = random_vec(size_t(c.n * c.hidden), seed);
    residual = random_vec(x.size(), seed + 1);
    norm = random_vec(size_t(c.hidden), seed + 2);
    gate = random_vec(size_t(c.inter * c.hidden), seed + 3);
    up = random_vec(gate.size(), seed + 4);
    down = random_vec(size_t(c.hidden * c.inter), seed + 5);
    gate_b = random_vec(size_t(c.inter), seed + 6);
    up_b = random_vec(size_t(c.inter), seed + 7);
    down_b = random_vec(size_t(c.hidden), seed + 8);
    w = MlpWeights{norm.data(), 1e-6f, gate.data(), c.bias ? gate_b.data() : nullptr, up.data(),
                   c.bias ? up_b.data() : nullptr, down.data(), c.bias ? down_b.data() : nullptr};
  }
};

// The reference ops, step by step, as the graph runs them.
std::vector<float> reference(const MlpCase& c, const MlpData& d) {
  std::vector<float> h(d.x.size()), g(size_t(c.n * c.inter)), u(g.size()), a(g.size()), dn(d.x.size()), out(d.x.size());
  ref::rms_norm(d.x.data(), c.n, c.hidden, d.w.norm, d.w.eps, h.data());
  ref::linear(h.data(), c.n, c.hidden, d.w.gate, d.w.gate_bias, c.inter, g.data());
  ref::linear(h.data(), c.n, c.hidden, d.w.up, d.w.up_bias, c.inter, u.data());
  ref::swiglu(g.data(), u.data(), c.n * c.inter, a.data());
  ref::linear(a.data(), c.n, c.inter, d.w.down, d.w.down_bias, c.hidden, dn.data());
  ref::add(d.residual.data(), dn.data(), c.n * c.hidden, out.data());
  return out;
}

TEST(MlpFused, MatchesTheReferenceComposition) {
  const CpuFamily& f = *find_cpu_family("mlp", "fused");
  // Ragged: token counts off the TOKENS tiles, intermediate sizes off every CHUNK, hidden sizes
  // off ROWS; one intermediate smaller than the smallest chunk.
  const MlpCase cases[] = {{1, 64, 160, false}, {3, 40, 96, true}, {13, 24, 100, false}, {5, 9, 7, true}, {29, 32, 300, false}};
  int checked = 0;
  uint32_t seed = 100;
  for (const auto& c : cases) {
    const MlpData d(c, seed += 10);
    const std::vector<float> ref = reference(c, d);
    for (const auto& p : all_bindings(f)) {
      if (p.at("THREADS") > 4) continue;  // more threads split the same chunks further
      std::vector<float> out(ref.size(), NAN);
      mlp_fused(d.x.data(), d.residual.data(), c.n, c.hidden, c.inter, d.w, out.data(), mlp_fused_params(p));
      ASSERT_LE(rel_l2(out, ref), 1e-5) << "n=" << c.n << " hidden=" << c.hidden << " inter=" << c.inter
                                        << " CHUNK=" << p.at("CHUNK") << " ROWS=" << p.at("ROWS") << " TOKENS=" << p.at("TOKENS")
                                        << " KUNROLL=" << p.at("KUNROLL") << " THREADS=" << p.at("THREADS");
      ++checked;
    }
  }
  EXPECT_EQ(checked, 5 * 5 * 4 * 3 * 3 * 3);
}

TEST(MlpFused, ResultDoesNotDependOnTheCallsBefore) {
  // Partial outputs start from zero on every call: a second call over the same output gives
  // the same values (no accumulation into what the first left).
  const MlpCase c{4, 16, 48, true};
  const MlpData d(c, 7);
  const MlpFusedParams p = mlp_fused_params({{"CHUNK", 16}, {"ROWS", 2}, {"TOKENS", 2}, {"KUNROLL", 4}, {"THREADS", 2}});
  std::vector<float> a(d.x.size(), NAN), b(d.x.size(), NAN);
  mlp_fused(d.x.data(), d.residual.data(), c.n, c.hidden, c.inter, d.w, a.data(), p);
  b = a;
  mlp_fused(d.x.data(), d.residual.data(), c.n, c.hidden, c.inter, d.w, b.data(), p);
  EXPECT_EQ(a, b);
  EXPECT_LE(rel_l2(a, reference(c, d)), 1e-5);
}

TEST(MlpFused, ConstraintsAndParameters) {
  const CpuFamily& f = *find_cpu_family("mlp", "fused");
  const CpuHost host{2, 8, 16};
  CpuOpShape decode;
  decode.tokens = 1;
  decode.in = 64;
  decode.out = 160;  // intermediate: 10 chunks of 16, 2 of 128
  const CpuParams ok = {{"CHUNK", 64}, {"ROWS", 4}, {"TOKENS", 1}, {"KUNROLL", 8}, {"THREADS", 2}};
  EXPECT_EQ(cpu_family_constraint(f, ok, decode, host), "");
  auto with = [&](const char* k, int v) {
    CpuParams p = ok;
    p[k] = v;
    return cpu_family_constraint(f, p, decode, host);
  };
  EXPECT_NE(with("THREADS", 4).find("cores"), std::string::npos);
  EXPECT_NE(with("CHUNK", 256).find("intermediate size"), std::string::npos);
  EXPECT_NE(with("TOKENS", 2).find("TOKENS"), std::string::npos);
  EXPECT_NE(with("CHUNK", 24).find("domain"), std::string::npos);
  CpuOpShape tiny = decode;
  tiny.out = 8;  // smaller than every chunk: the smallest still fits, as one ragged chunk
  EXPECT_EQ(cpu_family_constraint(f, {{"CHUNK", 16}, {"ROWS", 4}, {"TOKENS", 1}, {"KUNROLL", 8}, {"THREADS", 1}}, tiny, host), "");
  EXPECT_NE(cpu_family_constraint(f, {{"CHUNK", 16}, {"ROWS", 4}, {"TOKENS", 1}, {"KUNROLL", 8}, {"THREADS", 2}}, tiny, host)
                .find("chunks"),
            std::string::npos);
  CpuOpShape prefill = decode;
  prefill.tokens = 32;
  EXPECT_NE(cpu_family_constraint(f, {{"CHUNK", 64}, {"ROWS", 8}, {"TOKENS", 4}, {"KUNROLL", 16}, {"THREADS", 1}}, prefill, host)
                .find("registers"),
            std::string::npos);
  const MlpFusedParams p = mlp_fused_params(ok);
  EXPECT_EQ(p.chunk, 64);
  EXPECT_EQ(p.tile.rows, 4);
  EXPECT_EQ(p.tile.k_unroll, 8);
  EXPECT_EQ(p.threads, 2);
  EXPECT_THROW(mlp_fused_params({{"CHUNK", 64}, {"ROWS", 4}, {"TOKENS", 1}, {"KUNROLL", 8}}), Error);
  EXPECT_THROW(mlp_fused_params({{"CHUNK", 48}, {"ROWS", 4}, {"TOKENS", 1}, {"KUNROLL", 8}, {"THREADS", 1}}), Error);
}

}  // namespace
}  // namespace ac::cpu
