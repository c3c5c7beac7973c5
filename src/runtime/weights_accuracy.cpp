#include "agentcompile/runtime/weights_accuracy.h"

#include <algorithm>
#include <cmath>

#include "agentcompile/core/error.h"
#include "agentcompile/runtime/backends.h"
#include "agentcompile/runtime/engine.h"

namespace ac {

namespace {

// log-softmax of a row, in double (the KL of two close distributions is a small difference).
std::vector<double> log_softmax(const std::vector<float>& row) {
  const double mx = *std::max_element(row.begin(), row.end());
  double sum = 0;
  for (float v : row) sum += std::exp(double(v) - mx);
  const double lse = mx + std::log(sum);
  std::vector<double> out(row.size());
  for (size_t i = 0; i < row.size(); ++i) out[i] = double(row[i]) - lse;
  return out;
}

}  // namespace

Json WeightsAccuracy::to_json() const {
  return {{"positions", positions},       {"max_abs_dlogit", max_abs_dlogit}, {"mean_abs_dlogit", mean_abs_dlogit},
          {"mean_kl", mean_kl},           {"top1_agreement", top1_agreement}, {"greedy_tokens", greedy_tokens},
          {"greedy_prefix", greedy_prefix}};
}

WeightsAccuracy weights_accuracy(const Graph& reference, const Graph& quantized, const std::vector<int32_t>& tokens,
                                 int64_t prompt, int64_t greedy) {
  if (tokens.empty() || prompt < 1 || prompt > int64_t(tokens.size()) || greedy < 0)
    throw_internal("weights accuracy", "a non-empty sequence and a prompt within it");
  if (reference.config.vocab_size != quantized.config.vocab_size)
    throw_internal("weights accuracy", "the two models have different vocabularies");
  const int64_t n = int64_t(tokens.size()), seq = std::max(n, prompt + greedy) + 1;
  const ExecutorLimits lim{1, seq, seq, seq};
  auto ref = make_executor("cpu", reference, lim);
  auto q = make_executor("cpu", quantized, lim);
  const auto a = teacher_forced_logits(*ref, tokens), b = teacher_forced_logits(*q, tokens);
  WeightsAccuracy r;
  r.positions = n;
  double sum_abs = 0, sum_kl = 0;
  int64_t same_top1 = 0, count = 0;
  for (int64_t t = 0; t < n; ++t) {
    const auto& x = a[size_t(t)];
    const auto& y = b[size_t(t)];
    for (size_t i = 0; i < x.size(); ++i) {
      const double d = std::fabs(double(x[i]) - double(y[i]));
      r.max_abs_dlogit = std::max(r.max_abs_dlogit, d);
      sum_abs += d;
    }
    count += int64_t(x.size());
    const auto lp = log_softmax(x), lq = log_softmax(y);
    double kl = 0;
    for (size_t i = 0; i < lp.size(); ++i) kl += std::exp(lp[i]) * (lp[i] - lq[i]);
    sum_kl += std::max(0.0, kl);  // rounding can leave a tiny negative sum for equal rows
    same_top1 += std::max_element(x.begin(), x.end()) - x.begin() == std::max_element(y.begin(), y.end()) - y.begin();
  }
  r.mean_abs_dlogit = count ? sum_abs / double(count) : 0;
  r.mean_kl = sum_kl / double(n);
  r.top1_agreement = double(same_top1) / double(n);
  GenerateOptions go;
  go.max_tokens = greedy;
  go.ignore_eos = true;
  const std::vector<int32_t> start(tokens.begin(), tokens.begin() + prompt);
  auto ref2 = make_executor("cpu", reference, lim);
  auto q2 = make_executor("cpu", quantized, lim);
  const auto ga = generate(*ref2, reference.config, start, go, nullptr).tokens;
  const auto gb = generate(*q2, quantized.config, start, go, nullptr).tokens;
  r.greedy_tokens = int64_t(std::min(ga.size(), gb.size()));
  while (r.greedy_prefix < r.greedy_tokens && ga[size_t(r.greedy_prefix)] == gb[size_t(r.greedy_prefix)]) ++r.greedy_prefix;
  return r;
}

}  // namespace ac
