#pragma once
// Helpers of the CPU family tests: random inputs, relative L2 error with NaN (unwritten) as
// infinite, and every binding of a family's domains.
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "agentcompile/backends/cpu/cpu_families.h"

namespace ac::cpu::test {

inline std::vector<float> random_vec(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// ||a - b|| / ||b||, or infinity when a holds a NaN (an unwritten, poisoned element).
inline double rel_l2(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i])) return INFINITY;
    num += double(a[i] - b[i]) * double(a[i] - b[i]);
    den += double(b[i]) * double(b[i]);
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

inline std::vector<CpuParams> all_bindings(const CpuFamily& f) {
  std::vector<CpuParams> out{{}};
  for (const auto& d : f.params) {
    std::vector<CpuParams> next;
    for (const auto& p : out)
      for (int v : d.values) {
        CpuParams q = p;
        q[d.name] = v;
        next.push_back(q);
      }
    out = std::move(next);
  }
  return out;
}

}  // namespace ac::cpu::test
