#pragma once
// Small helpers shared by the tiers: medians, wall-clock timing, progress lines.
#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "agentcompile/core/stats.h"

namespace ac::bench {

using ac::median;  // agentcompile/core/stats.h

using Clock = std::chrono::steady_clock;
inline double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// b's median minus a's, and whether that difference stands out of the samples' noise. Each set
// needs at least 3 samples, and the difference must be positive and larger than twice the
// standard error of the two medians (each estimated from its set's median absolute deviation).
// Otherwise `why` says which condition failed, for the report.
struct MedianDifference {
  double diff = 0;
  bool significant = false;
  std::string why;
};
MedianDifference median_difference(const std::vector<double>& a, const std::vector<double>& b);

// "1.72B", "3.44 GB" style figures for the tables.
std::string human_count(double n);
std::string human_bytes(double n);

}  // namespace ac::bench
