// The heuristic advisor: deterministic rules from the roofline, the target and measured history.
// It only reorders (every hint lists the whole domain in a preferred order); narrowing is left
// to measurements and to advisors that know more.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "agentcompile/compiler/advisor.h"
#include "compiler/advisor/advisors.h"

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

// Preferred order of one parameter's domain, or empty for no opinion.
std::vector<int> order_param(const RegionSummary& s, const FamilySpace& f, const SpaceParam& p) {
  const bool memory = s.roof.bound != "compute";
  const TargetFacts& t = s.target;
  if (f.backend == "cpu") {
    if (p.name == "THREADS") {
      // Thread start-up costs tens of microseconds: small regions want few threads.
      const bool small = s.roof.known && s.roof.time_us < 50.0;
      return sorted(p.values, !small);
    }
    if (p.name == "ROWS") return memory ? std::vector<int>{4, 8, 2, 1} : std::vector<int>{4, 2, 8, 1};
    if (p.name == "TOKENS") {  // the widest tile the step fills, then narrower, then the wasted ones
      std::vector<int> v = sorted(p.values, true);
      std::stable_partition(v.begin(), v.end(), [&](int x) { return x <= s.point.tokens; });
      return v;
    }
    if (p.name == "KUNROLL") return by_log_distance(p.values, 2.0 * std::max(1, t.simd_floats), false);
    if (p.name == "BLOCK_KV") {
      // K and V rows of one block within a 32 KiB L1.
      const double hd = double(std::max<int64_t>(1, attr(s, "attention", "head_dim")));
      return by_log_distance(p.values, std::max(1.0, 32768.0 / (8.0 * hd)), true);
    }
    if (p.name == "GQA_SHARE") {
      const bool grouped = attr(s, "attention", "heads") > attr(s, "attention", "kv_heads");
      return grouped ? std::vector<int>{1, 0} : std::vector<int>{0, 1};
    }
    return {};
  }
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
    if (threads && s.roof.known && s.roof.time_us < 50.0)
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
