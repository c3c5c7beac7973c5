#pragma once
// The end-to-end semantic check (docs/design.md, numerics and validation rules): our greedy choices,
// made with the reference's tokens as context (teacher forcing through the decode path), must
// equal the reference's tokens for the first N positions; a differing token is allowed only where
// the reference's top-1 minus top-2 logit margin is below epsilon and ours is the reference's
// second choice (any token when the reference did not record it).
#include <cstdint>
#include <string>
#include <vector>

#include "agentcompile/core/json.h"

namespace ac::bench {

struct Reference {
  std::string source;               // e.g. "hf-eager float32"
  std::vector<int32_t> prompt;
  std::vector<int32_t> tokens;      // greedy tokens after the prompt
  std::vector<int32_t> second;      // the runner-up at each step (may be empty)
  std::vector<double> margins;      // top-1 minus top-2 logit at each step
};

struct Validation {
  std::string status = "no reference";  // "pass", "fail" or "no reference"
  int wanted = 0;                       // positions asked for
  int compared = 0, equal = 0, ties = 0;
  int first_failure = -1;               // position of the first unaccepted token
  double epsilon = 0.0;
  std::string detail;                   // one line for people
  bool passed() const { return status == "pass"; }
  Json to_json() const;
};

// `ours[i]` is our choice at position i given the prompt and reference.tokens[0..i). At most `n`
// positions are compared (fewer when either side is shorter; then `detail` says so and the check
// fails when nothing could be compared).
Validation validate_tokens(const std::vector<int32_t>& ours, const Reference& ref, int n, double epsilon);

}  // namespace ac::bench
