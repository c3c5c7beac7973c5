// The host's timing conditions now (timing_noise.h).
#include "agentcompile/compiler/timing_noise.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

#include "agentcompile/core/stats.h"
#include "agentcompile/core/threads.h"

namespace ac {

Json TimingNoise::to_json() const { return {{"probe_us", probe_us}, {"noise", noise}}; }

std::optional<TimingNoise> TimingNoise::from_json(const Json& j) {
  if (!j.is_object() || !j.contains("probe_us") || !j.contains("noise") || !j["probe_us"].is_number() ||
      !j["noise"].is_number())
    return std::nullopt;
  TimingNoise t{j["probe_us"].get<double>(), j["noise"].get<double>()};
  if (!std::isfinite(t.probe_us) || !(t.probe_us > 0) || !std::isfinite(t.noise) || !(t.noise >= 0)) return std::nullopt;
  return t;
}

TimingNoise TimingNoise::worst(const TimingNoise& other) const {
  return {std::max(probe_us, other.probe_us), std::max(noise, other.noise)};
}

TimingNoise measure_timing_noise() {
  constexpr size_t kFloats = size_t(2) << 20;  // 8 MiB: past the caches of most hosts' cores
  static const std::vector<float> data(kFloats, 1.0f);
  std::atomic<int64_t> sink{0};  // the sums are used, so the loop stays
  std::vector<double> t;
  for (int r = 0; r < 17; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    parallel_for(kFloats, size_t(1) << 16, [&](size_t b, size_t e) {
      float s[8] = {};  // independent sums: the pass is bound by memory, not by one add chain
      size_t i = b;
      for (; i + 8 <= e; i += 8)
        for (int k = 0; k < 8; ++k) s[k] += data[i + size_t(k)];
      for (; i < e; ++i) s[0] += data[i];
      sink += int64_t(s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7]);
    });
    if (r > 0) t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  const double med = median(t);
  const double q1 = t[t.size() / 4], q3 = t[t.size() * 3 / 4];
  return {med, med > 0 ? (q3 - q1) / med : 0.0};
}

std::string noise_mismatch(const TimingNoise& then, const TimingNoise& now) {
  const double a = std::max(then.noise, kNoiseFloor), b = std::max(now.noise, kNoiseFloor);
  const double speed = then.probe_us > 0 && now.probe_us > 0 ? then.probe_us / now.probe_us : 0;
  const double tol = std::max(kProbeSpeedTolerance, a + b);
  char why[160];
  if (std::max(a, b) > 2 * std::min(a, b)) {
    std::snprintf(why, sizeof why, "the timing noise differs: %.0f%% then, %.0f%% now", 100 * then.noise, 100 * now.noise);
    return why;
  }
  if (!(speed > 0) || std::abs(std::log(speed)) > std::log1p(tol)) {
    std::snprintf(why, sizeof why, "the host ran the timing probe %.2fx %s then than now (noise %.0f%% then, %.0f%% now)",
                  speed >= 1 ? speed : (speed > 0 ? 1 / speed : 0.0), speed >= 1 ? "slower" : "faster", 100 * then.noise,
                  100 * now.noise);
    return why;
  }
  return "";
}

double min_round_ratio(const std::vector<double>& a, const std::vector<double>& b) {
  double r = std::numeric_limits<double>::infinity();
  for (size_t k = 0; k < std::min(a.size(), b.size()); ++k) r = std::min(r, b[k] > 0 ? a[k] / b[k] : std::numeric_limits<double>::infinity());
  return r;
}

bool slower_in_every_round(const std::vector<double>& a, const std::vector<double>& b, double margin) {
  if (a.empty() || a.size() != b.size()) return false;
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  return median(a) > median(b) * (1 + margin) && min_round_ratio(a, b) > 1 + margin;
}

}  // namespace ac
