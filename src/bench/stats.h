#pragma once
// Small helpers shared by the tiers: medians, wall-clock timing, progress lines.
#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

namespace ac::bench {

inline double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

using Clock = std::chrono::steady_clock;
inline double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// "1.72B", "3.44 GB" style figures for the tables.
std::string human_count(double n);
std::string human_bytes(double n);

}  // namespace ac::bench
