#include "compiler/report_markdown.h"

#include <cstdio>
#include <tuple>
#include <vector>

#include "agentcompile/compiler/spans.h"

namespace ac {

namespace {

std::string us_text(double us) {
  char b[32];
  if (us >= 1e6) std::snprintf(b, sizeof b, "%.2f s", us / 1e6);
  else if (us >= 1000) std::snprintf(b, sizeof b, "%.2f ms", us / 1000);
  else std::snprintf(b, sizeof b, "%.1f us", us);
  return b;
}

// "812.3 (20%)", or "812.3 (20% / 18%)" when the reads' ceiling is known.
std::string bandwidth_text(const Json& a) {
  char b[80];
  if (a.contains("TFLOPs")) {  // timed at another shape than the summary's: the FLOP rate
    if (a["pct_of_matmul"].is_number())
      std::snprintf(b, sizeof b, "%.0f TFLOP/s (%.0f%% of GEMM)", a["TFLOPs"].get<double>(), a["pct_of_matmul"].get<double>());
    else
      std::snprintf(b, sizeof b, "%.0f TFLOP/s", a["TFLOPs"].get<double>());
    return b;
  }
  if (a.contains("pct_of_read") && a["pct_of_read"].is_number())
    std::snprintf(b, sizeof b, "%.1f (%.0f%% / %.0f%%)", a["GBps"].get<double>(), a["pct_of_bandwidth"].get<double>(),
                  a["pct_of_read"].get<double>());
  else
    std::snprintf(b, sizeof b, "%.1f (%.0f%%)", a["GBps"].get<double>(), a["pct_of_bandwidth"].get<double>());
  return b;
}

// ", advice source: ..." and the first reason when the advisor fell back to the heuristic.
std::string advisor_text(const Json& rep) {
  const Json& a = rep.value("advisor_summary", Json::object());
  if (a.value("fell_back", size_t(0)) == 0) return "";
  return ", advice source: " + a.value("source", std::string()) + " (" + a.value("reason", std::string()) + ")";
}

// "60.00 s, used 80.20 s (20.20 s over the budget); reference backend ..., search ...": where the time went.
std::string budget_text(const Json& b, double elapsed_s) {
  char t[400];
  std::snprintf(t, sizeof t, "%.2f s, used %.2f s", b["seconds"].get<double>(), elapsed_s);
  std::string s = t;
  if (b["overrun_s"].get<double>() > 0) {
    std::snprintf(t, sizeof t, " (%.2f s over the budget)", b["overrun_s"].get<double>());
    s += t;
  }
  std::snprintf(t, sizeof t, "; reference backend %.2f s, search %.2f s, after the search %.2f s; candidates not explored: %zu",
                b["reference_s"].get<double>(), b["search_s"].get<double>(), b["after_search_s"].get<double>(),
                b["not_explored"].get<size_t>());
  return s + t;
}

}  // namespace

std::string report_markdown(const Json& rep) {
  std::string md = "# Compile report: " + rep["model"]["name"].get<std::string>() + "\n\n";
  md += "- backend: " + rep["backend"].get<std::string>() + ", device: " + rep["environment"]["device"].get<std::string>() +
        "\n- objective: " + rep["objective"].get<std::string>() + ", advisor: " + rep["advisor"].get<std::string>() +
        advisor_text(rep) +
        "\n- budget: " + budget_text(rep["budget"], rep["elapsed_s"].get<double>()) + "\n- tuning DB: " + rep["db"]["path"].get<std::string>() +
        " (measured now " + std::to_string(rep["totals"]["measured"].get<size_t>()) + ", reused " +
        std::to_string(rep["totals"]["reused"].get<size_t>()) + ", of them from other models " +
        std::to_string(rep["totals"]["reused_from_other_models"].get<size_t>()) + ")" +
        (rep["db"]["note"].get<std::string>().empty() ? std::string() : "; " + rep["db"]["note"].get<std::string>()) + "\n\n";
  // Whether the target's reads alone were measured (one target per compile: the first region says).
  const bool reads = !rep["regions"].empty() && rep["regions"].front()["achieved"].contains("read_GBps") &&
                     rep["regions"].front()["achieved"]["read_GBps"].is_number();
  if (!rep["regions"].empty()) {  // what "% of bandwidth" is relative to (one target per compile)
    // Built without a fixed buffer: a long bandwidth source once cut the line short, and with it
    // the blank line that must separate the list from the table.
    const Json& a = rep["regions"].front()["achieved"];
    char gbs[32];
    std::snprintf(gbs, sizeof gbs, "%.0f", a["bandwidth_GBps"].get<double>());
    md.resize(md.size() - 1);  // the line joins the header list
    md += std::string("- bandwidth for \"% of bandwidth\": ") + gbs + " GB/s (" + a["bandwidth_source"].get<std::string>() +
          "); bytes are the region summary's at its shape point; a copy both reads and writes, so a region "
          "that only reads can pass 100%";
    if (reads) {
      std::snprintf(gbs, sizeof gbs, "%.0f", a["read_GBps"].get<double>());
      md += std::string("; the second percentage is of what reads alone streamed: ") + gbs + " GB/s (" +
            rep["target"]["read_source"].get<std::string>() + ")";
    }
    md += "\n\n";
  }
  md += std::string("| region | phase | n | candidates ok/failed/skipped | winner | time | fallback | speedup | ") +
        (reads ? "GB/s (% of bandwidth / % of reads)" : "GB/s (% of bandwidth)") + " | decision |\n";
  md += "|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : rep["regions"]) {
    size_t ok = 0, failed = 0;
    for (const auto& c : r["search"]["candidates"]) (c["status"] == "ok" ? ok : failed)++;
    char b[128];
    std::snprintf(b, sizeof b, "%.2fx", r["search"]["speedup"].get<double>());
    md += "| " + r["region"].get<std::string>() + " | " + r["phase"].get<std::string>() + " | " +
          std::to_string(r["instances"].get<size_t>()) + " | " + std::to_string(ok) + "/" + std::to_string(failed) + "/" +
          std::to_string(r["search"]["not_explored"].get<size_t>()) + " | `" + r["chosen"].get<std::string>() + "` | " +
          us_text(r["chosen_us"].get<double>()) + " | " + us_text(r["search"]["fallback_us"].get<double>()) + " | " + b +
          " | " + bandwidth_text(r["achieved"]) + " | " + r["search"]["decision"].get<std::string>() +
          (r["instances_in_fused_spans"].get<size_t>() > 0
               ? "; " + std::to_string(r["instances_in_fused_spans"].get<size_t>()) + " instance(s) run in fused spans"
               : std::string()) +
          " |\n";
  }
  md += span_markdown(rep["spans"]);
  if (const Json& gr = rep.value("generic_route", Json()); gr.is_object()) {
    // A model the backend's fast routes cannot run: every region on the generic route.
    char b[200];
    md += "\n## Generic route\n\nThe backend's fast routes cannot run this model (" + gr["why"].get<std::string>() +
          "): every region runs its generic route. The floor is the bytes a region moves at the target's bandwidth, "
          "what a fast route approaches.\n\n| region | phase | n | bytes | floor |\n|---|---|---|---|---|\n";
    for (const auto& x : gr["regions"]) {
      std::snprintf(b, sizeof b, "%.0f", x["bytes"].get<double>());
      md += "| " + x["region"].get<std::string>() + " | " + x["phase"].get<std::string>() + " | " +
            std::to_string(x["instances"].get<size_t>()) + " | " + b + " | " + us_text(x["floor_us"].get<double>()) + " |\n";
    }
    if (gr["decode_ms"].get<double>() > 0) {
      std::snprintf(b, sizeof b, "\nA decode step took %.3f ms against a floor of %.3f ms (%.1f%% of the floor).\n",
                    gr["decode_ms"].get<double>(), gr["decode_floor_ms"].get<double>(), gr["pct_of_floor"].get<double>());
      md += b;
    }
  }
  md += "\n## Fallbacks and repairs\n\n";
  if (rep["fallbacks"].empty() && rep["repairs"].empty()) md += "none\n";
  for (const auto& f : rep["fallbacks"])
    md += "- fallback " + f["region"].get<std::string>() + " " + f["phase"].get<std::string>() + ": " +
          f["reason"].get<std::string>() + " (time lost against the best measured route: " +
          us_text(f["time_lost_us"].get<double>()) + " per instance)\n";
  for (const auto& f : rep["repairs"])
    md += "- repair " + f["region"].get<std::string>() + " " + f["phase"].get<std::string>() + ": blocked `" +
          f["blocked"].get<std::string>() + "` (" + f["reason"].get<std::string>() + "), now `" +
          f["replacement"].get<std::string>() + "`, time lost " + us_text(f["time_lost_us"].get<double>()) + " per step\n";
  const Json& e = rep["e2e"];
  md += "\n## End-to-end\n\n- semantic check: " + std::string(e["ok"].get<bool>() ? "passed" : "FAILED") + " (" +
        std::to_string(e["tokens_checked"].get<int>()) + " greedy tokens against the reference backend, epsilon " +
        rep["e2e_rule"]["epsilon"].dump() + ", ties " + e["ties_within_epsilon"].dump() + ")\n";
  md += "- profile: " + e["profile"].dump() + "\n- reference: " + e["reference_profile"].dump() + "\n";
  md += "- speedup against the reference backend under the objective: " + e["speedup_vs_reference"].dump() + "\n";
  const Json& fg = rep["fallback_guard"];
  md += "- against every region's fallback: " + fg["status"].get<std::string>();
  if (fg.contains("plan_us"))
    md += " (plan " + us_text(fg["plan_us"].get<double>()) + ", fallbacks " + us_text(fg["fallback_us"].get<double>()) + ", " +
          fg["fallback_source"].get<std::string>() + ")";
  if (fg.contains("reason")) md += ": " + fg["reason"].get<std::string>();
  md += "\n";
  md += "- regression check: " + rep["regression"]["status"].get<std::string>() + "\n";
  const Json& st = rep["step_tuning"];
  md += "\n## Decode-step tuning\n\n- " + st["status"].get<std::string>();
  if (st.contains("trials")) {
    char b[200];
    std::snprintf(b, sizeof b, " (%zu trials of %d tokens; ", st["trials"].size(), st["tokens"].get<int>());
    md += b;
    if (st["start_ms"].get<double>() > 0) {  // a confirmation ran (something was kept on the way)
      std::snprintf(b, sizeof b, "confirmed %.4f ms/token against %.4f at the start; ", st["tuned_ms"].get<double>(),
                    st["start_ms"].get<double>());
      md += b;
    }
    md += st["source"].get<std::string>() + ")";
    if (!st["note"].get<std::string>().empty()) md += "; " + st["note"].get<std::string>();
    md += "\n";
    for (const auto& c : st["changes"]) md += "- " + c.get<std::string>() + "\n";
    md += "\n| pass | region | candidate | decode ms/token | kept |\n|---:|---|---|---:|---|\n";
    for (const auto& t : st["trials"]) {
      std::snprintf(b, sizeof b, "%.4f", t["decode_ms"].get<double>());
      // Passes from 1 for the descent's trials; the start, combined and confirming ones have none.
      const bool descent = t["region"].get<std::string>() != "plan";
      md += "| " + (descent ? std::to_string(t.value("pass", 0) + 1) : std::string()) + " | " + t["region"].get<std::string>() +
            " | " + t["candidate"].get<std::string>() + " | " +
            (t.contains("error") ? "failed: " + t["error"].get<std::string>() : std::string(b)) + " | " +
            (t["kept"].get<bool>() ? "yes" : "") + " |\n";
    }
  } else {
    md += "\n";
  }
  // The whole-step alternatives: each one's decision and, when measured, its medians.
  std::vector<std::tuple<std::string, std::string, std::string>> alternatives = {
      {"seed_plan", "the seed plan's choices as one plan (timed first)", "seed_ms"}};
  for (const Json& st : rep["step_settings"])
    alternatives.emplace_back(st["report_key"], st["label"], st["ms_key"].get<std::string>() + "_ms");
  for (const auto& [key, label, ms] : alternatives) {
    const Json pl = rep.contains(key) ? rep[key] : Json{{"status", "not recorded"}};
    md += std::string("- ") + label + ": " + pl["status"].get<std::string>();
    if (pl.contains("chain_ms")) {
      char b[200];
      std::snprintf(b, sizeof b, " (%s; medians of %d whole-step timings each: %.4f ms/token, the kernel chain %.4f)",
                    pl["variant"].get<std::string>().c_str(), pl["timings"].get<int>(), pl[ms].get<double>(),
                    pl["chain_ms"].get<double>());
      md += b;
    }
    md += "\n";
  }
  md += "\n## Search efficiency\n\n" + rep["efficiency"].dump() + "\n";
  return md;
}

}  // namespace ac
