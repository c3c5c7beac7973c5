#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "agentcompile/core/error.h"
#include "agentcompile/runtime/sampler.h"

using namespace ac;

namespace {

// Frequencies of each token over many draws.
std::map<int32_t, double> frequencies(const SamplingParams& p, const std::vector<float>& logits, int draws) {
  Sampler s(p);
  std::map<int32_t, double> f;
  for (int i = 0; i < draws; ++i) f[s.sample(logits.data(), int64_t(logits.size()))] += 1.0 / draws;
  return f;
}

const std::vector<float> kLogits = {std::log(0.5f), std::log(0.3f), std::log(0.15f), std::log(0.05f)};

TEST(Sampler, GreedyIsArgmaxFirstOnTies) {
  std::vector<float> l = {1.0f, 3.0f, 3.0f, -2.0f};
  Sampler s(SamplingParams{});
  EXPECT_EQ(s.sample(l.data(), 4), 1);
  EXPECT_EQ(argmax(l.data(), 4), 1);
}

TEST(Sampler, FollowsTheDistribution) {
  auto f = frequencies({1.0f, 0, 1.0f, 0.0f, 7}, kLogits, 40000);
  EXPECT_NEAR(f[0], 0.5, 0.015);
  EXPECT_NEAR(f[1], 0.3, 0.015);
  EXPECT_NEAR(f[2], 0.15, 0.01);
  EXPECT_NEAR(f[3], 0.05, 0.01);
}

TEST(Sampler, TopKTopPMinPTruncateAndRenormalise) {
  auto k = frequencies({1.0f, 2, 1.0f, 0.0f, 1}, kLogits, 20000);
  EXPECT_NEAR(k[0], 0.5 / 0.8, 0.02);
  EXPECT_EQ(k.count(2), 0u);
  // top_p 0.7: 0.5 < 0.7 so the second token is needed too; the third is not.
  auto p = frequencies({1.0f, 0, 0.7f, 0.0f, 2}, kLogits, 20000);
  EXPECT_NEAR(p[0], 0.5 / 0.8, 0.02);
  EXPECT_EQ(p.count(2), 0u);
  // min_p 0.4: keep tokens with p >= 0.2 (the first two).
  auto m = frequencies({1.0f, 0, 1.0f, 0.4f, 3}, kLogits, 20000);
  EXPECT_NEAR(m[1], 0.3 / 0.8, 0.02);
  EXPECT_EQ(m.count(2), 0u);
  // Temperature sharpens: at T=0.5 the probabilities go as p^2.
  auto t = frequencies({0.5f, 0, 1.0f, 0.0f, 4}, kLogits, 40000);
  const double z = 0.25 + 0.09 + 0.0225 + 0.0025;
  EXPECT_NEAR(t[0], 0.25 / z, 0.015);
}

TEST(Sampler, TopPOverALargeVocabularyBeyondTheSortedHead) {
  // A flat distribution over 5000 tokens: top_p 0.5 must keep ~2500 of them, past the first sorted head.
  std::vector<float> flat(5000, 0.0f);
  auto f = frequencies({1.0f, 0, 0.5f, 0.0f, 5}, flat, 3000);
  int32_t max_tok = 0;
  for (auto& [tok, _] : f) max_tok = std::max(max_tok, tok);
  EXPECT_GT(f.size(), 1500u);  // 3000 draws over 2500 kept tokens hit most of them
  EXPECT_LT(max_tok, 2600);  // ties break towards lower ids, so the kept set is the first half
}

TEST(Sampler, SeededRunsReproduce) {
  std::vector<float> l(1000);
  for (size_t i = 0; i < l.size(); ++i) l[i] = float(std::sin(double(i)));
  SamplingParams p{0.9f, 50, 0.95f, 0.01f, 1234};
  Sampler a(p), b(p);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.sample(l.data(), 1000), b.sample(l.data(), 1000));
}

// What top-k keeps: the k largest, ties to the lower id, sorted by value then id.
TEST(Sampler, TopKCandidatesBreakTiesTowardsLowerIds) {
  const std::vector<float> l = {0.5f, 2.0f, 1.0f, 2.0f, -3.0f, 1.0f, 1.0f};
  auto c = top_k_candidates(l.data(), 7, 4);
  ASSERT_EQ(c.size(), 4u);
  EXPECT_EQ(c[0], LogitCandidate(2.0f, 1));
  EXPECT_EQ(c[1], LogitCandidate(2.0f, 3));
  EXPECT_EQ(c[2], LogitCandidate(1.0f, 2));
  EXPECT_EQ(c[3], LogitCandidate(1.0f, 5));  // 6 ties with 5 and loses
  EXPECT_EQ(top_k_candidates(l.data(), 7, 0).size(), 7u);
  EXPECT_EQ(top_k_candidates(l.data(), 7, 9).size(), 7u);
}

// A backend that selects the top-k candidates itself (in any order) must lead to the same draws
// as the full row, for every combination of the other settings.
TEST(Sampler, CandidatesFromABackendDrawLikeTheFullRow) {
  std::vector<float> l(3000);
  for (size_t i = 0; i < l.size(); ++i) l[i] = float(std::sin(double(i) * 0.37) * 4.0);
  l[17] = l[2001] = l[5];  // ties at the top
  for (const SamplingParams& p : {SamplingParams{1.0f, 20, 1.0f, 0.0f, 3}, SamplingParams{0.6f, 20, 0.95f, 0.0f, 4},
                                  SamplingParams{1.3f, 50, 1.0f, 0.05f, 5}, SamplingParams{0.7f, 1, 1.0f, 0.0f, 6},
                                  SamplingParams{1.0f, 1000, 0.8f, 0.0f, 7}}) {
    Sampler full(p), cand(p);
    for (int i = 0; i < 200; ++i) {
      auto c = top_k_candidates(l.data(), int64_t(l.size()), p.top_k);
      std::reverse(c.begin(), c.end());  // a backend returns them in no particular order
      std::rotate(c.begin(), c.begin() + std::ptrdiff_t(c.size() / 3), c.end());
      ASSERT_EQ(full.sample(l.data(), int64_t(l.size())), cand.sample_candidates(c)) << "top_k " << p.top_k << " draw " << i;
    }
  }
  Sampler s({1.0f, 2, 1.0f, 0.0f, 1});
  EXPECT_THROW(s.sample_candidates({}), Error);
  EXPECT_THROW(s.sample_candidates({{std::numeric_limits<float>::infinity(), 3}}), Error);
}

TEST(Sampler, NonFiniteLogitsAreAnError) {
  std::vector<float> l = {0.0f, std::numeric_limits<float>::quiet_NaN(), 1.0f};
  Sampler s(SamplingParams{});
  EXPECT_THROW(s.sample(l.data(), 3), Error);
  l[1] = std::numeric_limits<float>::infinity();
  Sampler s2({1.0f, 0, 1.0f, 0.0f, 0});
  EXPECT_THROW(s2.sample(l.data(), 3), Error);
}

TEST(Sampler, ValidatesRanges) {
  EXPECT_THROW(validate_sampling({-1.0f, 0, 1.0f, 0.0f, 0}), Error);
  EXPECT_THROW(validate_sampling({1.0f, -1, 1.0f, 0.0f, 0}), Error);
  EXPECT_THROW(validate_sampling({1.0f, 0, 0.0f, 0.0f, 0}), Error);
  EXPECT_THROW(validate_sampling({1.0f, 0, 1.0f, 1.0f, 0}), Error);
  EXPECT_NO_THROW(validate_sampling({0.7f, 20, 0.95f, 0.05f, 0}));
}

}  // namespace
