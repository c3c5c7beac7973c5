#include "agentcompile/runtime/sampler.h"

#include <algorithm>
#include <cmath>

#include "agentcompile/core/error.h"

namespace ac {

void validate_sampling(const SamplingParams& p) {
  if (!(p.temperature >= 0.0f && p.temperature <= 100.0f)) throw_input("--temperature", "must be in [0, 100]");
  if (p.top_k < 0) throw_input("--top-k", "must be >= 0");
  if (!(p.top_p > 0.0f && p.top_p <= 1.0f)) throw_input("--top-p", "must be in (0, 1]");
  if (!(p.min_p >= 0.0f && p.min_p < 1.0f)) throw_input("--min-p", "must be in [0, 1)");
}

namespace {
void check_finite(const float* logits, int64_t vocab) {
  for (int64_t i = 0; i < vocab; ++i)
    if (!std::isfinite(logits[i]))
      throw_internal("sampler", std::string("logit of token ") + std::to_string(i) + " is " +
                                    (std::isnan(logits[i]) ? "NaN" : "infinite") + "; generation stopped");
}
}  // namespace


namespace {
bool by_logit(const LogitCandidate& a, const LogitCandidate& b) {
  return a.first > b.first || (a.first == b.first && a.second < b.second);
}
}  // namespace

namespace {
// c = the k largest of logits, sorted (all of them, unsorted, when k <= 0 or k >= vocab); c's
// storage is reused from call to call.
void select_top_k(const float* logits, int64_t vocab, int k, std::vector<LogitCandidate>& c) {
  c.resize(static_cast<size_t>(vocab));
  for (int64_t i = 0; i < vocab; ++i) c[size_t(i)] = {logits[i], int32_t(i)};
  if (k > 0 && k < vocab) {
    std::nth_element(c.begin(), c.begin() + k, c.end(), by_logit);
    c.resize(size_t(k));
    std::sort(c.begin(), c.end(), by_logit);
  }
}
}  // namespace

std::vector<LogitCandidate> best_candidates(std::vector<LogitCandidate> cand, int k) {
  std::sort(cand.begin(), cand.end(), by_logit);
  if (k >= 0 && size_t(k) < cand.size()) cand.resize(size_t(k));
  return cand;
}

std::vector<LogitCandidate> top_k_candidates(const float* logits, int64_t vocab, int k) {
  std::vector<LogitCandidate> c;
  select_top_k(logits, vocab, k, c);
  if (k <= 0 || k >= vocab) std::sort(c.begin(), c.end(), by_logit);  // select_top_k sorted only a cut
  return c;
}

int32_t Sampler::sample(const float* logits, int64_t vocab) {
  check_finite(logits, vocab);
  if (p_.temperature == 0.0f) return argmax(logits, vocab);
  // With top-k: its candidates, sorted; without: the whole vocabulary in id order (sorted below
  // only as far as top-p/min-p need).
  select_top_k(logits, vocab, p_.top_k, cand_);
  return draw();
}

int32_t Sampler::sample_candidates(std::vector<LogitCandidate> cand) {
  if (cand.empty()) throw_internal("sampler", "no candidates to sample from");
  for (const auto& c : cand)
    if (!std::isfinite(c.first)) throw_internal("sampler", "a candidate logit is NaN or infinite; generation stopped");
  std::sort(cand.begin(), cand.end(), by_logit);
  cand_ = std::move(cand);
  return draw();
}

int32_t Sampler::draw() {
  // Temperature after the selection: dividing by a positive number keeps the order.
  for (auto& c : cand_) c.first /= p_.temperature;
  // Softmax over the candidates left (double for the sums).
  double mx = -INFINITY;
  for (const auto& c : cand_) mx = std::max(mx, double(c.first));
  double total = 0.0;
  for (const auto& c : cand_) total += std::exp(double(c.first) - mx);
  auto prob = [&](size_t i) { return std::exp(double(cand_[i].first) - mx) / total; };

  // top-p and min-p cut a prefix of the candidates in descending order. Sorting all of a large
  // vocabulary every token is slow, so sort a head first and widen only if the cut lies beyond it.
  size_t keep = cand_.size();
  if (p_.top_p < 1.0f || p_.min_p > 0.0f) {
    size_t head = std::min<size_t>(cand_.size(), 512);
    for (;;) {
      std::partial_sort(cand_.begin(), cand_.begin() + std::ptrdiff_t(head), cand_.end(), by_logit);
      const double p0 = prob(0);
      double cum = 0.0;
      size_t n = 0;
      bool cut = false;
      while (n < head) {
        if (p_.top_p < 1.0f && n > 0 && cum >= double(p_.top_p)) { cut = true; break; }  // HF keeps the token that crosses top_p
        if (p_.min_p > 0.0f && n > 0 && prob(n) < double(p_.min_p) * p0) { cut = true; break; }
        cum += prob(n++);
      }
      if (cut || head == cand_.size()) { keep = n; break; }
      head = std::min(cand_.size(), head * 8);
    }
  }
  double mass = 0.0;
  for (size_t i = 0; i < keep; ++i) mass += prob(i);
  double u = rng_.uniform_double() * mass;
  for (size_t i = 0; i < keep; ++i) {
    u -= prob(i);
    if (u < 0.0) return cand_[i].second;
  }
  return cand_[keep - 1].second;
}

}  // namespace ac
