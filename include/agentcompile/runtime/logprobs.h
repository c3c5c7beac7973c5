#pragma once
// Log-probabilities of generated tokens, as the OpenAI API reports them: the log-softmax of the
// model's raw logits (before temperature, top-k, top-p or min-p shape the draw), for the chosen
// token and for the most likely alternatives.
#include <cstdint>
#include <utility>
#include <vector>

namespace ac {

struct TokenLogprobs {
  int32_t token = -1;
  float logprob = 0.0f;
  std::vector<std::pair<int32_t, float>> top;  // (token, logprob), most likely first, ties to the lower id
};

// Largest number of alternatives a request may ask for.
inline constexpr int kMaxTopLogprobs = 20;

// The chosen token's log-probability and the `top` most likely tokens' (0 <= top <= vocab),
// from one row of logits. Throws Error(Internal) when a logit is NaN or infinite.
TokenLogprobs token_logprobs(const float* logits, int64_t vocab, int32_t chosen, int top);

}  // namespace ac
