// The heuristic advisor: deterministic rules from the roofline, the target and measured history.
// It only reorders (every hint lists the whole domain in a preferred order); narrowing is left
// to measurements and to advisors that know more. The CPU rules were revised against measured
// search-efficiency data (bench/results/2026-11-30-search-efficiency-cpu-heuristic2.md).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "agentcompile/compiler/advisor.h"
#include "compiler/advisor/advisors.h"
#include "compiler/advisor/heuristic_rules.h"

namespace ac {

namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// "rms_norm + 3 linear + 2 rope + kv_write": runs of the same op counted.
std::string pattern_text(const std::string& pattern) {
  std::vector<std::pair<std::string, int>> runs;
  size_t b = 0;
  while (b < pattern.size()) {
    size_t e = pattern.find(' ', b);
    if (e == std::string::npos) e = pattern.size();
    std::string op = pattern.substr(b, e - b);
    if (!runs.empty() && runs.back().first == op) ++runs.back().second;
    else runs.emplace_back(op, 1);
    b = e + 1;
  }
  std::string s;
  for (const auto& [name, n] : runs) s += (s.empty() ? "" : " + ") + (n > 1 ? std::to_string(n) + " " : "") + name;
  return s;
}

double weight_bytes_of(const StepSummary& st) {
  double b = 0;
  for (const auto& w : st.weights) {
    double n = 1;
    for (const auto& d : w.shape) n *= d.is_number() ? d.get<double>() : 0.0;
    b += n * (w.dtype == "f32" ? 4 : 2);
  }
  return b;
}

// How much of the region's time a family's steps stand for (bytes when memory-bound, FLOPs else).
double family_share(const RegionSummary& s, const FamilySpace& f) {
  double part = 0, total = 0;
  const bool memory = s.roof.bound != "compute";
  for (const auto& st : s.steps) {
    double v = memory ? weight_bytes_of(st) + (st.op == "attention" || st.op == "kv_write" ? s.cost.kv_bytes : 0.0) : st.flops;
    total += v;
    if (std::find(f.applies_to.begin(), f.applies_to.end(), st.name) != f.applies_to.end()) part += v;
  }
  return total > 0 ? part / total : 0.0;
}

// Values of a domain, closest to `target` (in log2 distance) first; ties: `larger_first`.
std::vector<int> by_log_distance(std::vector<int> v, double target, bool larger_first) {
  std::stable_sort(v.begin(), v.end(), [&](int a, int b) {
    const double da = std::fabs(std::log2(double(std::max(a, 1))) - std::log2(target));
    const double db = std::fabs(std::log2(double(std::max(b, 1))) - std::log2(target));
    if (da != db) return da < db;
    return larger_first ? a > b : a < b;
  });
  return v;
}

std::vector<int> sorted(std::vector<int> v, bool descending) {
  std::sort(v.begin(), v.end());
  if (descending) std::reverse(v.begin(), v.end());
  return v;
}

int64_t attr(const RegionSummary& s, const char* op, const char* key) {
  for (const auto& st : s.steps)
    if (st.op == op && st.attrs.contains(key)) return st.attrs[key].get<int64_t>();
  return 0;
}

// Host facts the CPU rules use. Per-core cache sizes are not in TargetFacts (l2_bytes is the
// last-level cache), so the common floor of current x86/Arm cores is assumed.
constexpr double kL1Bytes = 32.0 * 1024;          // per-core L1 data cache
constexpr double kCoreL2Bytes = 1024.0 * 1024;    // per-core L2
constexpr double kThreadsPayOffUs = 400.0;         // roofline time from which extra threads are tried first

// The longest input row and the largest weight matrix of a family's linear steps, as the CPU
// executor holds them (f32).
struct LinearFacts {
  double max_in = 0, max_weight_bytes = 0;
};

LinearFacts linear_facts(const RegionSummary& s, const FamilySpace& f) {
  LinearFacts lf;
  for (const auto& st : s.steps) {
    if (std::find(f.applies_to.begin(), f.applies_to.end(), st.name) == f.applies_to.end()) continue;
    for (const auto& w : st.weights) {
      if (w.shape.size() != 2 || !w.shape[0].is_number() || !w.shape[1].is_number()) continue;
      const double out = w.shape[0].get<double>(), in = w.shape[1].get<double>();
      lf.max_in = std::max(lf.max_in, in);
      lf.max_weight_bytes = std::max(lf.max_weight_bytes, out * in * 4.0);
    }
  }
  return lf;
}

}  // namespace

// The prompt attention, from the exhaustive sweeps on an H100 (bench/results/2026-12-07-search-
// efficiency-cuda/: Llama-3.2-1B's best points were BLOCK 128 and 64 at BK 64 and QS 2, 8% ahead
// of pipe's default; Qwen3-1.7B's compile picked BK 32 at head dim 128) and the kernels' shapes:
// BLOCK 128 (4 warps) fits three blocks per SM by registers; larger K/V tiles need fewer barriers
// and softmax rescales per MMA; QS 2 (32 query rows per warp) halves the shared-memory reads per
// FLOP, QS 1 has not beaten pipe; PAIR evens causal tiles' cost when the step has more blocks than
// fit the SMs twice (not yet measured: on otherwise, so the search meets it early).
std::vector<int> heuristic_prompt_attention_order(const std::string& name, const std::vector<int>& values, int64_t tokens,
                                                  int64_t heads, int sms) {
  if (name == "BLOCK") return {128, 64, 256};
  if (name == "BK") return sorted(values, true);
  if (name == "QS") return {2, 0, 1};
  if (name == "PAIR") {
    const int64_t blocks = (std::max<int64_t>(tokens, 1) + 63) / 64 * std::max<int64_t>(heads, 1);
    return sms > 0 && blocks > 2LL * sms ? std::vector<int>{1, 0} : std::vector<int>{0, 1};
  }
  return {};
}

// Our own prompt GEMMs: a wider tile reads A once per more columns, and the TMA's box copies (LOAD
// 1) free the producer warpgroup's issue slots (BN 256 at LOAD 1 was fastest on every projection of
// an H100 sweep, 0.57-0.85x cuBLAS, against 0.37-0.49x at BN 128 LOAD 0); four stages cover a copy's
// latency (deeper next, then shallower); a wgmma kept in flight (PIPE 1) overlaps the next stage's
// wait, a pair of row tiles sharing B (CLUSTER 2) reads it from L2 once per pair (both within a few
// percent there); persistent blocks whose consumers take turns (SCHED 1) were slower there
// (0.51-0.82x cuBLAS against 0.58-0.87x), so a block per tile first.
std::vector<int> heuristic_prompt_gemm_order(const std::string& name, const std::vector<int>& values) {
  if (name == "BN" || name == "PIPE" || name == "LOAD" || name == "CLUSTER") return sorted(values, true);
  if (name == "SCHED") return sorted(values, false);
  if (name == "STAGES") {
    std::vector<int> out;
    for (int v : values)
      if (v == 4) out.push_back(v);
    for (int v : sorted(values, false))
      if (v > 4) out.push_back(v);
    for (int v : sorted(values, true))
      if (v < 4) out.push_back(v);
    return out;
  }
  return {};
}

std::vector<int> heuristic_cpu_threads_order(std::vector<int> values, double roofline_us) {
  return sorted(std::move(values), roofline_us >= kThreadsPayOffUs);
}

std::vector<int> heuristic_cpu_rows_order(const std::vector<int>& values, double max_in, int simd_registers) {
  // The square tile side: ROWS x ROWS pairs of one vector each fill the register file.
  int square = 1;
  for (int v : values)
    if (double(v) * v <= std::max(1, simd_registers)) square = std::max(square, v);
  std::vector<int> out;
  if (max_in * 4.0 <= kL1Bytes) out.push_back(1);  // short rows: activations re-read from L1, one weight row per tile
  out.push_back(square);
  for (int v : sorted(values, false))
    if (v > square) out.push_back(v);
  for (int v : sorted(values, true))
    if (v < square) out.push_back(v);
  std::vector<int> unique;
  for (int v : out)
    if (std::find(values.begin(), values.end(), v) != values.end() && std::find(unique.begin(), unique.end(), v) == unique.end())
      unique.push_back(v);
  return unique;
}

std::vector<int> heuristic_cpu_tokens_order(const std::vector<int>& values, int64_t tokens, double max_weight_bytes) {
  std::vector<int> v = sorted(values, true);  // the widest tile the step fills, then narrower, then the wasted ones
  std::stable_partition(v.begin(), v.end(), [&](int x) { return x <= tokens; });
  if (max_weight_bytes <= kCoreL2Bytes) {  // weights cache-resident: token tiles save no memory traffic
    auto one = std::find(v.begin(), v.end(), 1);
    if (one != v.end()) std::rotate(v.begin(), one, one + 1);
  }
  return v;
}

namespace {

// Preferred order of one parameter's domain, or empty for no opinion. CPU rules (one line each):
//  THREADS  fewest first unless the roofline time is >= 400 us: starting and joining a thread
//           costs tens of us, which only a region that long amortises.
//  ROWS     1 first when the longest input row fits L1 (each weight is used once per token; more
//           rows only share activation loads L1 already serves), then the square tile side
//           (ROWS^2 <= vector registers), then larger, then smaller.
//  TOKENS   1 first when the step's weights fit a core's L2 (re-reading them per token hits the
//           cache), then the widest tile the step fills, then narrower, then the wasted ones.
//  KUNROLL  near two vectors of partial sums per (row, token) pair.
//  BLOCK_KV smallest first: the per-block softmax rescale is ~1/(2 BLOCK_KV) of a block's work
//           (< 4% at 16), and a small block keeps the scores and K/V rows in L1.
//  GQA_SHARE on when query heads are grouped.
std::vector<int> order_param(const RegionSummary& s, const FamilySpace& f, const SpaceParam& p) {
  const TargetFacts& t = s.target;
  if (f.backend == "cpu") {
    if (p.name == "THREADS") return heuristic_cpu_threads_order(p.values, s.roof.known ? s.roof.time_us : 0.0);
    const LinearFacts lf = linear_facts(s, f);
    if (p.name == "ROWS") return heuristic_cpu_rows_order(p.values, lf.max_in, t.simd_registers);
    if (p.name == "TOKENS") return heuristic_cpu_tokens_order(p.values, s.point.tokens, lf.max_weight_bytes);
    if (p.name == "KUNROLL") return by_log_distance(p.values, 2.0 * std::max(1, t.simd_floats), false);
    if (p.name == "BLOCK_KV") return sorted(p.values, false);
    if (p.name == "GQA_SHARE") {
      const bool grouped = attr(s, "attention", "heads") > attr(s, "attention", "kv_heads");
      return grouped ? std::vector<int>{1, 0} : std::vector<int>{0, 1};
    }
    return {};
  }
  if (f.id == "cuda:attn_prefill.pipe")
    return heuristic_prompt_attention_order(p.name, p.values, s.point.tokens, attr(s, "attention", "heads"), t.sm_count);
  if (f.id == "cuda:gemm.wgmma" || f.id == "cuda:gemm.mma") return heuristic_prompt_gemm_order(p.name, p.values);
  if (p.name == "BLOCK") return by_log_distance(p.values, 256.0, false);
  if (p.name == "MAXD") return sorted(p.values, false);
  return {};
}

}  // namespace

std::vector<std::string> heuristic_family_order(const AdvisorRequest& r) {
  const RegionSummary& s = *r.summary;
  struct Ranked {
    std::string id;
    int tier;       // 0 measured faster than the fallback, 1 region route, 2 op route, 3 measured, never faster, 4 only failures
    double score;   // within a tier, larger first
    size_t index;
  };
  std::map<std::string, double> best;
  std::map<std::string, int> failures, oks;
  for (const auto& m : r.history) {
    if (m.status == "ok") {
      ++oks[m.family];
      best[m.family] = std::max(best[m.family], m.speedup);
    } else {
      ++failures[m.family];
    }
  }
  std::vector<Ranked> v;
  for (size_t i = 0; i < r.space->families.size(); ++i) {
    const FamilySpace& f = r.space->families[i];
    if (f.route == FamilyRoute::Fallback) continue;
    Ranked k{f.id, 2, family_share(s, f), i};
    if (f.route == FamilyRoute::Region) k.tier = 1;
    if (oks.count(f.id)) {
      k.tier = best[f.id] > 1.0 ? 0 : 3;
      k.score = best[f.id];
    } else if (failures.count(f.id)) {
      k.tier = 4;
      k.score = -double(failures[f.id]);
    }
    v.push_back(k);
  }
  std::stable_sort(v.begin(), v.end(), [](const Ranked& a, const Ranked& b) {
    if (a.tier != b.tier) return a.tier < b.tier;
    if (a.score != b.score) return a.score > b.score;
    return a.index < b.index;
  });
  std::vector<std::string> out;
  for (const auto& k : v) out.push_back(k.id);
  return out;
}

Json heuristic_reply(const AdvisorRequest& r) {
  const RegionSummary& s = *r.summary;
  const CandidateSpace& sp = *r.space;
  const std::string ridge = s.target.ridge_intensity() > 0 ? fmt("%.0f", s.target.ridge_intensity()) : "unknown";
  std::string label = std::string(phase_name(s.phase)) + " " + std::string(region_kind_name(s.kind)) + ": " +
                      pattern_text(s.pattern) + "; " + s.roof.bound + "-bound, AI " + fmt("%.2f", s.cost.intensity()) +
                      " FLOP/B (ridge " + ridge + ")";
  if (label.size() > kMaxLabelChars) label.resize(kMaxLabelChars);

  Json hints = Json::object();
  for (const auto& f : sp.families) {
    if (f.route == FamilyRoute::Fallback) continue;
    Json fh = Json::object();
    for (const auto& p : f.params) {
      std::vector<int> order = order_param(s, f, p);
      // Keep it a permutation of the domain: values the rule does not name go last.
      std::vector<int> full;
      for (int x : order)
        if (std::find(p.values.begin(), p.values.end(), x) != p.values.end() &&
            std::find(full.begin(), full.end(), x) == full.end())
          full.push_back(x);
      if (full.empty()) continue;
      for (int x : p.values)
        if (std::find(full.begin(), full.end(), x) == full.end()) full.push_back(x);
      fh[p.name] = full;
    }
    if (!fh.empty()) hints[f.id] = fh;
  }

  Json risks = Json::array();
  if (s.roof.known) {
    if (s.roof.bound == "memory")
      risks.push_back({{"risk", "memory-bound"},
                       {"reason", "AI " + fmt("%.2f", s.cost.intensity()) + " FLOP/B is below the ridge " + ridge +
                                      ": time follows the " + fmt("%.3g", s.cost.bytes() / 1e6) +
                                      " MB moved; wide loads and reading each weight once matter most"}});
    else
      risks.push_back({{"risk", "compute-bound"},
                       {"reason", "AI " + fmt("%.2f", s.cost.intensity()) + " FLOP/B is above the ridge " + ridge +
                                      ": tile shapes that reuse operands matter most"}});
    if (s.target.kind == "gpu" && s.roof.time_us < 5.0)
      risks.push_back({{"risk", "launch-overhead"},
                       {"reason", "the roofline time is " + fmt("%.2f", s.roof.time_us) +
                                      " us, near a kernel launch: fused routes and graph capture matter more than tiles"}});
  }
  for (const auto& f : sp.families) {
    if (f.route == FamilyRoute::Fallback) continue;
    const bool threads = std::any_of(f.params.begin(), f.params.end(), [](const SpaceParam& p) { return p.name == "THREADS"; });
    if (threads && s.roof.known && s.roof.time_us < kThreadsPayOffUs)
      risks.push_back({{"family", f.id},
                       {"risk", "launch-overhead"},
                       {"reason", "starting a thread costs tens of us, the region's roofline is " +
                                      fmt("%.1f", s.roof.time_us) + " us: more threads may be slower"}});
    const bool split = std::any_of(f.params.begin(), f.params.end(),
                                   [](const SpaceParam& p) { return p.name.find("SPLIT") != std::string::npos; });
    if (split)
      risks.push_back({{"family", f.id},
                       {"risk", "numerically-sensitive"},
                       {"reason", "split reductions change the summation order against the reference"}});
  }
  if (s.kind == RegionKind::Head)
    risks.push_back({{"risk", "numerically-sensitive"},
                     {"reason", "greedy argmax over the vocabulary: near-ties can flip with the summation order; "
                                "the end-to-end check allows ties within its epsilon"}});

  return {{"label", label},
          {"family_priorities", heuristic_family_order(r)},
          {"param_hints", hints},
          {"risks", risks}};
}

AdviceResult heuristic_advice(const AdvisorRequest& r) {
  AdviceResult out;
  const std::vector<std::string> order = heuristic_family_order(r);
  const Json reply = heuristic_reply(r);
  out.advice = validate_advice_json(reply, *r.space, order, "heuristic");
  AdviceExchange& e = out.exchange;
  e = advisors::exchange_for(r, "heuristic");
  e.raw_reply = reply.dump();
  e.status = "ok";
  e.attempts = 1;
  e.advice = out.advice.to_json();
  return out;
}

}  // namespace ac
