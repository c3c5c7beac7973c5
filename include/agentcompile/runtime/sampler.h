#pragma once
// Token selection from logits: greedy (temperature 0) or sampling with temperature, top-k,
// top-p and min-p applied in that order (HF transformers' order), from a seeded generator so a
// run reproduces. Non-finite logits are an error, never sampled from.
#include <cstdint>
#include <vector>

#include "agentcompile/core/rng.h"

#include "agentcompile/tuning/executor.h"  // argmax

namespace ac {

struct SamplingParams {
  float temperature = 0.0f;  // 0: greedy
  int top_k = 0;             // 0: off
  float top_p = 1.0f;        // 1: off
  float min_p = 0.0f;        // 0: off
  uint64_t seed = 0;
};

// Checks ranges; BadInput error naming the flag.
void validate_sampling(const SamplingParams& p);

// A token and its logit, as top-k selects them.
using LogitCandidate = std::pair<float, int32_t>;

// The k largest logits (ties to the lower id), sorted by value descending, then id; all of them
// when k <= 0 or k >= vocab. What top-k keeps, on any backend.
std::vector<LogitCandidate> top_k_candidates(const float* logits, int64_t vocab, int k);
// The k best of a backend's candidates for one row (its K >= k largest logits, any order), sorted
// as top_k_candidates sorts them: for k <= K, what top_k_candidates(row, k) gives.
std::vector<LogitCandidate> best_candidates(std::vector<LogitCandidate> cand, int k);

class Sampler {
 public:
  explicit Sampler(const SamplingParams& p) : p_(p), rng_(p.seed) {}
  // Throws Error(Internal) when a logit is NaN or infinite.
  int32_t sample(const float* logits, int64_t vocab);
  // The same draw from the top_k candidates a backend selected (the set top_k_candidates keeps,
  // in any order, raw logits): for the same generator state, the token sample() would return.
  int32_t sample_candidates(std::vector<LogitCandidate> cand);

 private:
  int32_t draw();  // temperature, softmax, top-p, min-p over cand_ (sorted), then the draw

  SamplingParams p_;
  Rng rng_;
  std::vector<LogitCandidate> cand_;
};


}  // namespace ac
