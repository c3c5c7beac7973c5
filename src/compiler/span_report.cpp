// The compile report's fused spans: report.json spans[] and report.md's "Fused spans" section.
#include <cstdio>

#include "agentcompile/compiler/spans.h"

namespace ac {

namespace {

std::string us2(double us) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f us", us);
  return b;
}

}  // namespace

Json span_report(const std::vector<SpanWork>& spans, const std::vector<RegionSearch>& searches, const RouteGraph& rg,
                 const RoutePath& path) {
  Json out = Json::array();
  for (size_t si = 0; si < searches.size(); ++si) {
    const RegionSearch& s = searches[si];
    const SpanWork* sp = nullptr;
    for (const auto& x : spans)
      if (&x.work == s.work) sp = &x;
    if (!sp) continue;
    size_t taken = 0;
    const RouteEdge* on_path = nullptr;
    for (const RouteEdge* e : path.edges)
      if (e->search == si && taken++ == 0) on_path = e;
    const CandidateOutcome* best = nullptr;  // the fastest correct fused candidate
    for (const CandidateOutcome* c : s.ranked())
      if (c->order != 0) {
        best = c;
        break;
      }
    Json separate = Json::array();
    double sep_us = 0;
    bool sep_known = true;
    for (size_t k : sp->parts) {
      const RouteEdge* e = RouteGraph::choice(path, k);
      if (!e) e = rg.best_edge(k);
      if (!e) {
        sep_known = false;
        continue;
      }
      sep_us += e->time_us;
      separate.push_back({{"region", std::string(region_kind_name(searches[k].work->summary.kind))},
                          {"chosen", e->candidate.name()},
                          {"time_us", e->time_us}});
    }
    size_t edges = 0, unblocked = 0;
    for (const auto& e : rg.edges())
      if (e.search == si) {
        ++edges;
        unblocked += rg.blocked(si, e.candidate.name()) ? 0 : 1;
      }
    const double fused_us = on_path ? on_path->time_us : best ? best->median_us : 0.0;
    std::string why;
    if (taken) why = "taken: fused " + us2(fused_us) + " < separate " + us2(sep_us) + " per instance";
    else if (!best) why = "not taken: no fused candidate passed its stages";
    else if (edges == 0) why = "not taken: no span edge (" + s.decision + ")";
    else if (unblocked == 0) why = "not taken: every fused route was blocked (repairs)";
    else why = "not taken: the separate routes are cheaper (" + us2(sep_us) + " <= fused " + us2(fused_us) + " per instance)";
    out.push_back({{"span", sp->name},
                   {"phase", std::string(phase_name(s.work->summary.phase))},
                   {"signature", s.work->summary.signature},
                   {"shape_key", s.work->summary.shape_key},
                   {"instances", s.work->summary.instances},
                   {"span_instances", s.work->span_instances.size()},
                   {"space_size", s.work->space.size()},
                   {"search", s.to_json()},
                   {"best_fused", best ? Json(best->candidate.name()) : Json(nullptr)},
                   {"fused_us", fused_us},
                   {"separate", separate},
                   {"separate_us", sep_us},
                   {"speedup_vs_separate", fused_us > 0 && sep_known ? sep_us / fused_us : 0.0},
                   {"span_edges", edges},
                   {"taken", taken > 0},
                   {"taken_instances", taken},
                   {"path_decision", why}});
  }
  return out;
}

std::string span_markdown(const Json& spans) {
  if (spans.empty()) return "";
  std::string md = "\n## Fused spans\n\n";
  md += "| span | phase | n | candidates ok/failed/skipped | best fused | fused | separate (chosen routes) | speedup | path |\n";
  md += "|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& sp : spans) {
    size_t ok = 0, failed = 0;
    for (const auto& c : sp["search"]["candidates"]) (c["status"] == "ok" ? ok : failed)++;
    std::string sep;
    for (const auto& r : sp["separate"])
      sep += (sep.empty() ? "" : " + ") + r["region"].get<std::string>() + " `" + r["chosen"].get<std::string>() + "`";
    char b[64];
    std::snprintf(b, sizeof b, "%.2fx", sp["speedup_vs_separate"].get<double>());
    md += "| " + sp["span"].get<std::string>() + " | " + sp["phase"].get<std::string>() + " | " +
          std::to_string(sp["taken_instances"].get<size_t>()) + "/" + std::to_string(sp["span_instances"].get<size_t>()) + " | " +
          std::to_string(ok) + "/" + std::to_string(failed) + "/" + std::to_string(sp["search"]["not_explored"].get<size_t>()) +
          " | `" + (sp["best_fused"].is_null() ? std::string("none") : sp["best_fused"].get<std::string>()) + "` | " +
          us2(sp["fused_us"].get<double>()) + " | " + sep + " = " + us2(sp["separate_us"].get<double>()) + " | " + b +
          " | " + sp["path_decision"].get<std::string>() + " |\n";
  }
  return md;
}

}  // namespace ac
