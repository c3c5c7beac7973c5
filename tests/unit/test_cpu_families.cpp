// The tuned CPU families against the reference ops: every binding of their domains on ragged
// shapes, outputs poisoned with NaN first, relative L2 error within the f32 bound (DESIGN.md).
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

TEST(CpuFamilies, RegistryListsTheFamilies) {
  ASSERT_NE(find_cpu_family("linear", "blocked"), nullptr);
  ASSERT_NE(find_cpu_family("attention", "blocked"), nullptr);
  ASSERT_NE(find_cpu_family("mlp", "fused"), nullptr);
  EXPECT_EQ(find_cpu_family("linear", "nope"), nullptr);
  for (const auto& f : cpu_families()) {
    EXPECT_FALSE(f.rules.empty()) << f.name;
    for (const auto& d : f.params) EXPECT_FALSE(d.values.empty()) << d.name;
  }
}

TEST(CpuFamilies, LinearBlockedMatchesTheReference) {
  const CpuFamily& f = *find_cpu_family("linear", "blocked");
  struct Shape {
    int64_t n, in, out;
    bool bias;
  };
  const Shape shapes[] = {{1, 64, 17, false}, {3, 33, 9, true}, {5, 7, 5, true}, {4, 1, 3, false}, {9, 40, 24, true}};
  int checked = 0;
  for (const auto& s : shapes) {
    const auto x = random_vec(size_t(s.n * s.in), 1), w = random_vec(size_t(s.out * s.in), 2),
               b = random_vec(size_t(s.out), 3);
    std::vector<float> ref(size_t(s.n * s.out));
    ref::linear(x.data(), s.n, s.in, w.data(), s.bias ? b.data() : nullptr, s.out, ref.data());
    for (const auto& p : all_bindings(f)) {
      if (p.at("THREADS") > 4) continue;  // thread counts beyond 4 split the same rows further
      std::vector<float> out(ref.size(), NAN);
      linear_blocked(x.data(), s.n, s.in, w.data(), s.bias ? b.data() : nullptr, s.out, out.data(), linear_blocked_params(p));
      ASSERT_LE(rel_l2(out, ref), 1e-5) << "n=" << s.n << " in=" << s.in << " out=" << s.out << " ROWS=" << p.at("ROWS")
                                        << " TOKENS=" << p.at("TOKENS") << " KUNROLL=" << p.at("KUNROLL")
                                        << " THREADS=" << p.at("THREADS");
      ++checked;
    }
  }
  EXPECT_EQ(checked, 5 * 4 * 3 * 3 * 3);
}

struct AttnCase {
  int64_t heads, kv_heads, head_dim;
  std::vector<int32_t> positions, slots;
};

TEST(CpuFamilies, AttentionBlockedMatchesTheReference) {
  const CpuFamily& f = *find_cpu_family("attention", "blocked");
  const AttnCase cases[] = {
      {4, 2, 8, {0, 1, 2, 3, 4, 5, 6, 7, 8}, {0, 0, 0, 0, 0, 0, 0, 0, 0}},  // prefill of 9 tokens
      {2, 2, 4, {40, 3}, {0, 1}},                                           // decode, two sequences, no GQA
      {6, 1, 5, {299}, {1}},                                                // decode, long context, odd head_dim
      {4, 2, 8, {17, 18, 19}, {1, 1, 1}},                                   // a chunk after a cached prefix
  };
  const int64_t max_seq = 300, slots = 2;
  int checked = 0;
  for (const auto& c : cases) {
    const int64_t n = int64_t(c.positions.size()), kv_dim = c.kv_heads * c.head_dim;
    // A cache filled with random rows (the earlier positions), then the reference appends this step.
    std::vector<float> kc = random_vec(size_t(slots * max_seq * kv_dim), 7), vc = random_vec(kc.size(), 8);
    const auto q = random_vec(size_t(n * c.heads * c.head_dim), 9), kn = random_vec(size_t(n * kv_dim), 10),
               vn = random_vec(size_t(n * kv_dim), 11);
    std::vector<float> ref(q.size());
    ref::KvCacheView cache{kc.data(), vc.data(), max_seq, kv_dim};
    ref::attention(q.data(), kn.data(), vn.data(), n, c.positions.data(), c.slots.data(), c.heads, c.kv_heads, c.head_dim,
              cache, ref.data());
    // kv_write puts the same rows where the reference put them.
    std::vector<float> kc2 = random_vec(kc.size(), 7), vc2 = random_vec(kc.size(), 8);
    kv_write(kn.data(), vn.data(), n, c.positions.data(), c.slots.data(), ref::KvCacheView{kc2.data(), vc2.data(), max_seq, kv_dim});
    EXPECT_EQ(kc2, kc);
    EXPECT_EQ(vc2, vc);
    for (const auto& p : all_bindings(f)) {
      if (p.at("THREADS") > 4) continue;
      std::vector<float> out(ref.size(), NAN);
      attention_blocked(q.data(), n, c.positions.data(), c.slots.data(), c.heads, c.kv_heads, c.head_dim, cache,
                        out.data(), attention_blocked_params(p));
      ASSERT_LE(rel_l2(out, ref), 1e-5) << "heads=" << c.heads << " BLOCK_KV=" << p.at("BLOCK_KV")
                                        << " GQA_SHARE=" << p.at("GQA_SHARE") << " THREADS=" << p.at("THREADS");
      ++checked;
    }
  }
  EXPECT_EQ(checked, 4 * 5 * 2 * 3);
}

TEST(CpuFamilies, ConstraintsNameTheRuleThatFails) {
  const CpuFamily& lin = *find_cpu_family("linear", "blocked");
  const CpuHost host{2, 4, 16};
  const CpuOpShape decode{1, 64, 64, 0, 0, 0, 0};
  EXPECT_EQ(cpu_family_constraint(lin, {{"ROWS", 4}, {"TOKENS", 1}, {"KUNROLL", 8}, {"THREADS", 2}}, decode, host), "");
  EXPECT_NE(cpu_family_constraint(lin, {{"ROWS", 4}, {"TOKENS", 1}, {"KUNROLL", 8}, {"THREADS", 4}}, decode, host).find("cores"),
            std::string::npos);
  EXPECT_NE(cpu_family_constraint(lin, {{"ROWS", 8}, {"TOKENS", 1}, {"KUNROLL", 16}, {"THREADS", 1}}, decode, host).find("registers"),
            std::string::npos);
  EXPECT_NE(cpu_family_constraint(lin, {{"ROWS", 1}, {"TOKENS", 2}, {"KUNROLL", 4}, {"THREADS", 1}}, decode, host).find("TOKENS"),
            std::string::npos);
  EXPECT_NE(cpu_family_constraint(lin, {{"ROWS", 3}, {"TOKENS", 1}, {"KUNROLL", 4}, {"THREADS", 1}}, decode, host).find("domain"),
            std::string::npos);
  EXPECT_NE(cpu_family_constraint(lin, {{"ROWS", 1}, {"TOKENS", 1}, {"KUNROLL", 4}}, decode, host).find("not bound"),
            std::string::npos);
  const CpuOpShape narrow{1, 64, 3, 0, 0, 0, 0};  // 3 outputs in blocks of 4: one block, one thread
  EXPECT_NE(cpu_family_constraint(lin, {{"ROWS", 4}, {"TOKENS", 1}, {"KUNROLL", 4}, {"THREADS", 2}}, narrow, host).find("row blocks"),
            std::string::npos);

  const CpuFamily& att = *find_cpu_family("attention", "blocked");
  const CpuOpShape mha{1, 0, 0, 4, 4, 64, 100};
  EXPECT_NE(cpu_family_constraint(att, {{"BLOCK_KV", 16}, {"GQA_SHARE", 1}, {"THREADS", 1}}, mha, host).find("GQA_SHARE"),
            std::string::npos);
  EXPECT_NE(cpu_family_constraint(att, {{"BLOCK_KV", 128}, {"GQA_SHARE", 0}, {"THREADS", 1}}, mha, host).find("context"),
            std::string::npos);
  EXPECT_EQ(cpu_family_constraint(att, {{"BLOCK_KV", 64}, {"GQA_SHARE", 0}, {"THREADS", 2}}, mha, host), "");
  const CpuOpShape short_ctx{1, 0, 0, 4, 1, 64, 3};
  EXPECT_EQ(cpu_family_constraint(att, {{"BLOCK_KV", 16}, {"GQA_SHARE", 1}, {"THREADS", 1}}, short_ctx, host), "");

  EXPECT_THROW(linear_blocked_params({{"ROWS", 5}, {"TOKENS", 1}, {"KUNROLL", 4}, {"THREADS", 1}}), Error);
  EXPECT_THROW(attention_blocked_params({{"BLOCK_KV", 64}, {"GQA_SHARE", 0}}), Error);
}

}  // namespace
}  // namespace ac::cpu
