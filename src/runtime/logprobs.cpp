#include "agentcompile/runtime/logprobs.h"

#include <cmath>
#include <string>

#include "agentcompile/core/error.h"
#include "agentcompile/runtime/sampler.h"

namespace ac {

TokenLogprobs token_logprobs(const float* logits, int64_t vocab, int32_t chosen, int top) {
  if (chosen < 0 || chosen >= vocab) throw_internal("logprobs", "token " + std::to_string(chosen) + " is outside the vocabulary");
  // log-sum-exp in double around the largest logit, so that no term overflows.
  double max = -INFINITY;
  for (int64_t i = 0; i < vocab; ++i) {
    if (!std::isfinite(logits[i])) throw_internal("logprobs", "the logits hold NaN or Inf");
    max = std::max(max, double(logits[i]));
  }
  double sum = 0.0;
  for (int64_t i = 0; i < vocab; ++i) sum += std::exp(double(logits[i]) - max);
  const double log_z = max + std::log(sum);

  TokenLogprobs out;
  out.token = chosen;
  out.logprob = float(double(logits[chosen]) - log_z);
  if (top > 0) {
    for (const auto& [logit, id] : top_k_candidates(logits, vocab, top))
      out.top.emplace_back(id, float(double(logit) - log_z));
  }
  return out;
}

}  // namespace ac
