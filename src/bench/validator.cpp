#include "agentcompile/bench/validator.h"

#include <algorithm>
#include <cstdio>

namespace ac::bench {

Json Validation::to_json() const {
  return {{"status", status},   {"wanted", wanted}, {"compared", compared}, {"equal", equal},
          {"ties", ties},       {"first_failure", first_failure < 0 ? Json(nullptr) : Json(first_failure)},
          {"epsilon", epsilon}, {"detail", detail}};
}

Validation validate_tokens(const std::vector<int32_t>& ours, const Reference& ref, int n, double epsilon) {
  Validation v;
  v.wanted = n;
  v.epsilon = epsilon;
  const size_t m = std::min({size_t(std::max(n, 0)), ours.size(), ref.tokens.size()});
  for (size_t i = 0; i < m; ++i) {
    ++v.compared;
    if (ours[i] == ref.tokens[i]) {
      ++v.equal;
      continue;
    }
    const bool has_margin = i < ref.margins.size();
    const bool near_tie = has_margin && ref.margins[i] < epsilon;
    const bool runner_up = ref.second.empty() || (i < ref.second.size() && ours[i] == ref.second[i]);
    if (near_tie && runner_up) {
      ++v.ties;
      continue;
    }
    if (v.first_failure < 0) v.first_failure = int(i);
  }
  char buf[256];
  if (v.compared == 0) {
    v.status = "fail";
    v.detail = "nothing to compare (the reference or our run has no tokens)";
  } else if (v.first_failure >= 0) {
    v.status = "fail";
    const size_t f = size_t(v.first_failure);
    std::snprintf(buf, sizeof buf, "position %d: ours %d, reference %d (margin %s, epsilon %g)", v.first_failure,
                  ours[f], ref.tokens[f], f < ref.margins.size() ? std::to_string(ref.margins[f]).c_str() : "unknown",
                  epsilon);
    v.detail = buf;
  } else {
    v.status = "pass";
    std::snprintf(buf, sizeof buf, "%d/%d equal, %d near-ties (margin < %g)", v.equal, v.compared, v.ties, epsilon);
    v.detail = buf;
  }
  if (v.compared < n) v.detail += "; only " + std::to_string(v.compared) + " of " + std::to_string(n) + " positions available";
  return v;
}

}  // namespace ac::bench
