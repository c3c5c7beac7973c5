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

// "1.72B", "3.44 GB" style figures for the tables.
std::string human_count(double n);
std::string human_bytes(double n);

}  // namespace ac::bench
