#include "backends/cuda/search_util.h"

#include <algorithm>
#include <cmath>

#include "agentcompile/core/rng.h"
#include "agentcompile/core/threads.h"

namespace ac::cuda {

// Blocks of 1M values, each with its own generator, filled in parallel: the LM head alone is 262M
// values (seconds on one thread), and the result does not depend on the number of threads.
std::vector<uint16_t> random_w16(size_t n, uint64_t seed, float scale, float offset, DType wt) {
  constexpr size_t kBlock = size_t(1) << 20;
  std::vector<uint16_t> v(n);
  parallel_for((n + kBlock - 1) / kBlock, 1, [&](size_t b, size_t e) {
    for (size_t blk = b; blk < e; ++blk) {
      Rng r(seed * 0x9e3779b97f4a7c15ull + blk);
      for (size_t i = blk * kBlock; i < std::min(n, (blk + 1) * kBlock); ++i)
        store_from_f32(v.data(), wt, i, offset + scale * r.normal());
    }
  });
  return v;
}

std::vector<float> widen(const std::vector<uint16_t>& v, DType wt) {
  std::vector<float> f(v.size());
  parallel_for(v.size(), size_t(1) << 16, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) f[i] = load_as_f32(v.data(), wt, i);
  });
  return f;
}

std::optional<double> rel_l2(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(got[i])) return std::nullopt;
    num += double(got[i] - want[i]) * double(got[i] - want[i]);
    den += double(want[i]) * double(want[i]);
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

bool own_gemm_family(const std::string& family) { return family == "cuda:gemm.wgmma" || family == "cuda:gemm.mma"; }

OwnGemmChoice own_gemm_choice(const std::string& family, const ParamPoint& p) {
  OwnGemmChoice c;
  if (!own_gemm_family(family)) return c;
  c.route = family == "cuda:gemm.wgmma" ? kGemmWgmma : kGemmMma;
  c.bn = p.at("BN");
  c.stages = p.at("STAGES");
  if (c.route == kGemmWgmma) {
    c.pipe = p.at("PIPE");
    c.load = p.at("LOAD");
    c.cluster = p.at("CLUSTER");
    c.sched = p.at("SCHED");
  }
  return c;
}

}  // namespace ac::cuda
