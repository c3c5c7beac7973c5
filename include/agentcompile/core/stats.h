#pragma once
// The median of timing samples, one definition for every stage that times something (the
// runtime's decode, the search, the compiler's checks and tuning, the benchmarks): the middle
// value, the mean of the middle two for an even count, 0 for none.
#include <algorithm>
#include <vector>

namespace ac {

inline double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

}  // namespace ac
