#pragma once
// How fast and how steady the host times right now: a short probe the compile takes before it
// reuses a timing stored in the tuning database. A timing measured while the machine was loaded
// (slower, noisier) and compared with one measured on a quiet machine gives a false ratio (an
// all-fallback plan reported "1.69x" against a reference profiled under load), so a stored
// timing stands for one taken now only when both were taken under compatible conditions.
#include <optional>
#include <string>
#include <vector>

#include "agentcompile/core/json.h"

namespace ac {

struct TimingNoise {
  double probe_us = 0;  // median time of the probe (a memory-bound pass over every worker thread)
  double noise = 0;     // relative spread of its samples: (75th - 25th percentile) / median
  Json to_json() const;
  // nullopt for anything but {probe_us > 0, noise >= 0}, both finite.
  static std::optional<TimingNoise> from_json(const Json& j);
  // The worse of two probes (the slower median, the larger spread): what a timing taken between
  // them was exposed to.
  TimingNoise worst(const TimingNoise& other) const;
};

// Times the probe (about 20 ms): 8 MiB of floats summed over the worker threads, as the CPU
// reference backend's matrix-vector products stream their weights, 17 times, the first dropped.
TimingNoise measure_timing_noise();

// Noise levels below this count as this: quiet machines differ in small noise that means nothing.
constexpr double kNoiseFloor = 0.05;
// The probe's median may differ by this much (or by the two noise levels together, if larger)
// between two quiet moments of one machine.
constexpr double kProbeSpeedTolerance = 0.10;

// Empty when a timing taken under `then` may stand for one taken under `now`: both noise levels
// within a factor of 2 of each other (each at least kNoiseFloor), and the probe's medians within
// max(kProbeSpeedTolerance, the two noise levels summed) of each other. Otherwise why not, e.g.
// "the probe ran 1.62x slower then (noise 31% then, 2% now)".
std::string noise_mismatch(const TimingNoise& then, const TimingNoise& now);

// Timings of a and b taken in interleaved rounds (a[k] then b[k]): a is slower than b beyond
// `margin` only when their medians say so and so does every round. One round on a loaded machine
// can be 20% off; a verdict that fails a compile or blocks its routes must not rest on it.
bool slower_in_every_round(const std::vector<double>& a, const std::vector<double>& b, double margin);
// The smallest a[k] / b[k] over the rounds (what the verdict above compares with 1 + margin).
double min_round_ratio(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace ac
