#include "agentcompile/bench/report.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "agentcompile/core/error.h"
#include "bench/report_check.h"
#include "bench/stats.h"

namespace ac::bench {

namespace {

double num(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : NAN;
}
std::string str(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return "";
  return it->is_string() ? it->get<std::string>() : it->dump();
}
std::string fmt(double v, const char* f) {
  if (!std::isfinite(v)) return "—";
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}
// A member object, or an empty one (never a temporary: range-for over .items() of a temporary dangles).
const Json& member(const Json& j, const char* key) {
  static const Json empty = Json::object();
  auto it = j.find(key);
  return it != j.end() && it->is_object() ? *it : empty;
}
// Cells must not break the table.
std::string cell(std::string s) {
  for (char& ch : s)
    if (ch == '|' || ch == '\n') ch = ' ';
  return s;
}

std::string header_lines(const Json& r) {
  std::string s = "## agentcompile bench " + str(r, "tier") + "\n\n";
  const Json& env = r.value("environment", Json::object());
  const Json& gpu = env.value("gpu", Json());
  std::string where = gpu.is_object() ? str(gpu, "name") + " (" + str(gpu, "arch") + ", driver " +
                                            str(gpu, "driver") + ", CUDA " + str(gpu, "cuda_runtime") + ")"
                                      : "CPU (" + str(env, "cpu_threads") + " threads)";
  s += "- date: " + str(r, "created") + "; host: " + cell(str(env, "host")) + "; device: " + cell(where) + "\n";
  s += "- engine: " + str(env, "engine_version") + " at " + str(env, "engine_commit") + "\n";
  s += "- command: `" + cell(str(r, "command")) + "`\n";
  const Json& c = r.value("ceilings", Json::object());
  if (std::isfinite(num(c, "copy_GBps")))
    s += "- ceilings measured in this run: copy " + fmt(num(c, "copy_GBps"), "%.0f") + " GB/s (read + write)" +
         (std::isfinite(num(c, "read_GBps")) ? ", reads alone " + fmt(num(c, "read_GBps"), "%.0f") + " GB/s" : std::string()) +
         ", cuBLAS bf16 GEMM " + fmt(num(c, "gemm_tflops"), "%.0f") + " TFLOP/s\n";
  else if (c.contains("note"))
    s += "- ceilings: " + str(c, "note") + "\n";
  if (r.contains("method")) s += "- method: " + cell(str(r, "method")) + "\n";
  const double stale = num(r.value("settings", Json::object()), "plan_stale_kernels");  // NaN when absent
  if (stale > 0)
    s += "- **plan built from other kernel sources** (" + fmt(stale, "%.0f") +
         " kernels): its choices were timed on an older engine's kernels; recompile it\n";
  return s + "\n";
}

std::map<std::string, Json> models_by_name(const Json& r) {
  std::map<std::string, Json> m;
  for (const Json& x : r.value("models", Json::array())) m[str(x, "name")] = x;
  return m;
}

std::string e2e_tables(const Json& r) {
  std::vector<std::string> peers;
  for (const Json& row : r["results"])
    for (auto& [name, _] : member(row, "peers").items())
      if (std::find(peers.begin(), peers.end(), name) == peers.end()) peers.push_back(name);
  std::sort(peers.begin(), peers.end(), [](const std::string& a, const std::string& b) {
    return (a == "hf-eager") != (b == "hf-eager") ? a == "hf-eager" : a < b;
  });
  const auto models = models_by_name(r);
  std::string s = "| model | size | params | backend | workload | prefill ms (TTFT) | decode ms/token | request ms | tok/s |";
  for (const auto& p : peers) s += " vs " + cell(p) + " |";
  s += " % of floor | semantic check |\n|---|---:|---:|---|---|---:|---:|---:|---:|";
  for (size_t i = 0; i < peers.size(); ++i) s += "---:|";
  s += "---:|---|\n";
  bool any_uncounted = false;
  for (const Json& row : r["results"]) {
    const Json& m = models.count(str(row, "model")) ? models.at(str(row, "model")) : Json::object();
    const bool counted = row.value("counted", false);
    any_uncounted |= !counted;
    const std::string mark = counted ? "" : " †";
    const Json& v = row.value("validation", Json::object());
    std::string check = str(v, "status");
    if (check == "pass")
      check += " " + str(v, "equal") + "/" + str(v, "compared") + (num(v, "ties") > 0 ? " +" + str(v, "ties") + " ties" : "");
    else if (check == "fail")
      check = "FAIL at " + str(v, "first_failure");
    else if (check == "error")
      check = "ERROR: " + str(v, "detail").substr(0, 80);
    const std::string backend = str(row, "backend") == "cuda" ? "cuda " + str(row, "route") : str(row, "backend");
    // The weights as stored (an FP8 model's fp8 bytes and scales, not the f32 it loads as).
    const double size = num(m, "stored_bytes") > 0 ? num(m, "stored_bytes") : num(m, "bytes");
    s += "| " + cell(str(row, "model")) + " | " + human_bytes(size) + " | " + human_count(num(m, "parameters")) +
         " | " + backend + " | " + cell(str(row, "workload")) + (num(row, "batch") > 1 ? " (x" + str(row, "batch") + ")" : "") +
         " | " + fmt(num(row, "prefill_ms"), "%.2f") + " | " + fmt(num(row, "decode_ms_per_token"), "%.3f") + mark + " | " +
         fmt(num(row, "request_ms"), "%.1f") + " | " + fmt(num(row, "tokens_per_s"), "%.1f") + " |";
    // Against a peer: the whole request's speedup first (the headline), then its two parts.
    for (const auto& p : peers) {
      const Json& pj = row.value("peers", Json::object()).value(p, Json());
      s += " " + (pj.is_object() && counted ? fmt(num(pj, "request_speedup"), "%.2fx") + " (TTFT " +
                                                  fmt(num(pj, "prefill_speedup"), "%.2fx") + ", decode " +
                                                  fmt(num(pj, "speedup"), "%.2fx") + ")"
                                            : std::string("—")) + " |";
    }
    s += " " + fmt(num(row, "pct_of_floor"), "%.1f%%") + " | " + cell(check) + " |\n";
  }
  if (any_uncounted)
    s += "\n† not counted: the semantic check did not pass, there was no reference to check against, or the run failed.\n";
  s += "\n% of floor = ((weight bytes + the KV-cache bytes an average decode step reads) / copy bandwidth measured in this "
       "run) / decode ms per token. request ms = prefill "
       "(time to first token) + the other tokens' decode steps; \"vs\" a peer: its request ms over ours (its TTFT and decode "
       "ms/token over ours in brackets).\n";
  // A step only reads its weights, and reads can stream faster than a copy: the same rows against
  // the read ceiling, for the counted rows.
  std::string rf;
  for (const Json& row : r["results"])
    if (row.value("counted", false) && std::isfinite(num(row, "pct_of_read_floor")))
      rf += std::string(rf.empty() ? "" : ", ") + cell(str(row, "model")) + " " + cell(str(row, "workload")) + " " +
            fmt(num(row, "pct_of_read_floor"), "%.1f%%");
  if (!rf.empty())
    s += "Against what reads alone streamed in this run (" + fmt(num(r.value("ceilings", Json::object()), "read_GBps"), "%.0f") +
         " GB/s), the floor is lower: " + rf + " of it.\n";
  // The prompt step against the GEMM rate measured in this run (the counted rows).
  std::string pg;
  for (const Json& row : r["results"])
    if (row.value("counted", false) && std::isfinite(num(row, "prefill_pct_of_gemm")))
      pg += std::string(pg.empty() ? "" : ", ") + cell(str(row, "model")) + " " + cell(str(row, "workload")) + " " +
            fmt(num(row, "prefill_tflops"), "%.0f") + " TFLOP/s (" + fmt(num(row, "prefill_pct_of_gemm"), "%.1f%%") + ")";
  if (!pg.empty())
    s += "The prompt step (its projections, causal attention and last-token logits over the time to first token) against "
         "the cuBLAS bf16 GEMM rate measured in this run (" +
         fmt(num(r.value("ceilings", Json::object()), "gemm_tflops"), "%.0f") + " TFLOP/s): " + pg + ".\n";
  // --profile: each profiled row's kernels by phase and kind, against this run's ceilings.
  for (const Json& row : r["results"]) {
    const Json& k = row.value("kernels", Json());
    if (!k.is_object()) continue;
    s += "\nKernels of " + cell(str(row, "model")) + " " + cell(str(row, "workload")) + " (one more run, profiled launch by launch): ";
    if (str(k, "status") != "profiled") {
      s += cell(str(k, "status")) + ".\n";
      continue;
    }
    s += fmt(num(k, "decode_steps"), "%.0f") + " decode steps, " + fmt(num(k, "prompt_steps"), "%.0f") + " prompt steps.\n\n"
         "| phase | kind | ms/step | share | GB/s | % of copy | TFLOP/s | % of GEMM | launches/step |\n"
         "|---|---|---:|---:|---:|---:|---:|---:|---:|\n";
    for (const Json& kk : k["kinds"])
      s += "| " + str(kk, "phase") + " | " + cell(str(kk, "kind")) + " | " + fmt(num(kk, "ms_per_step"), "%.4f") + " | " +
           fmt(num(kk, "share_pct"), "%.1f%%") + " | " + fmt(num(kk, "GBps"), "%.0f") + " | " + fmt(num(kk, "pct_of_copy"), "%.1f%%") +
           " | " + fmt(num(kk, "TFLOPs"), "%.1f") + " | " + fmt(num(kk, "pct_of_gemm"), "%.1f%%") + " | " +
           fmt(num(kk, "launches_per_step"), "%.0f") + " |\n";
  }
  bool any_peer = false;
  std::string t = "\n| model | workload | peer | prefill ms (TTFT) | decode ms/token | request ms | tok/s |\n|---|---|---|---:|---:|---:|---:|\n";
  for (const Json& row : r["results"])
    for (auto& [name, pj] : member(row, "peers").items()) {
      any_peer = true;
      t += "| " + cell(str(row, "model")) + " | " + cell(str(row, "workload")) + " | " + cell(name) + " | " +
           fmt(num(pj, "prefill_ms"), "%.2f") + " | " + fmt(num(pj, "decode_ms_per_token"), "%.3f") + " | " +
           fmt(num(pj, "request_ms"), "%.1f") + " | " + fmt(num(pj, "tokens_per_s"), "%.1f") + " |\n";
    }
  return any_peer ? s + t : s;
}

std::string module_table(const Json& r) {
  std::string s = "| model | phase | backend | tokens | context | layer ms | GB/s | % of copy | TFLOP/s | % of GEMM |\n"
                  "|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const Json& row : r["results"])
    s += "| " + cell(str(row, "model")) + " | " + str(row, "phase") + " | " + str(row, "backend") + " " + str(row, "route") +
         " | " + fmt(num(row, "tokens"), "%.0f") + " | " + fmt(num(row, "context"), "%.0f") + " | " +
         fmt(num(row, "layer_ms"), "%.4f") + " | " + fmt(num(row, "GBps"), "%.0f") + " | " +
         fmt(num(row, "pct_of_copy"), "%.1f%%") + " | " + fmt(num(row, "TFLOPs"), "%.2f") + " | " +
         fmt(num(row, "pct_of_gemm"), "%.1f%%") + " |\n";
  // A "—" layer time says why: the difference of the two medians did not stand out of the noise.
  std::string notes;
  for (const Json& row : r["results"])
    if (!std::isfinite(num(row, "layer_ms")) && !str(row, "note").empty())
      notes += "- " + cell(str(row, "model")) + " " + str(row, "phase") + ": — because " + cell(str(row, "note")) + "\n";
  return notes.empty() ? s : s + "\n" + notes;
}

std::string kernels_table(const Json& r) {
  std::string s = "| model | region | batch | shape | route | kernel | µs | GB/s | % of copy | % of reads | TFLOP/s |\n"
                  "|---|---|---:|---|---|---|---:|---:|---:|---:|---:|\n";
  for (const Json& row : r["results"])
    for (const char* route : {"fast", "reference", "library"}) {
      const Json& rt = row.value("routes", Json::object()).value(route, Json());
      if (!rt.is_object()) continue;
      s += "| " + cell(str(row, "model")) + " | " + str(row, "region") + " | " + str(row, "batch") + " | " +
           cell(str(row, "shape")) + " | " + route + " | " + cell(str(rt, "kernel")) + " | " + fmt(num(rt, "us"), "%.2f") +
           " | " + fmt(num(rt, "GBps"), "%.0f") + " | " + fmt(num(rt, "pct_of_copy"), "%.1f%%") + " | " +
           fmt(num(rt, "pct_of_read"), "%.1f%%") + " | " + fmt(num(rt, "TFLOPs"), "%.2f") + " |\n";
    }
  return s;
}

// Comparable rows of a report: key -> (metric name -> value, lower is better for all).
std::map<std::string, std::map<std::string, double>> metrics(const Json& r) {
  std::map<std::string, std::map<std::string, double>> out;
  const std::string tier = str(r, "tier");
  for (const Json& row : r.value("results", Json::array())) {
    if (tier == "e2e") {
      const std::string k = str(row, "model") + " " + str(row, "workload") + " " + str(row, "backend") + " " + str(row, "route");
      out[k]["decode ms/token"] = num(row, "decode_ms_per_token");
      out[k]["prefill ms"] = num(row, "prefill_ms");
    } else if (tier == "module") {
      out[str(row, "model") + " " + str(row, "phase") + " " + str(row, "backend") + " " + str(row, "route")]["layer ms"] =
          num(row, "layer_ms");
    } else if (tier == "kernels") {
      for (auto& [route, rt] : member(row, "routes").items())
        out[str(row, "model") + " " + str(row, "region") + " b" + str(row, "batch") + " " + route]["µs"] = num(rt, "us");
    }
  }
  return out;
}

}  // namespace

std::string markdown_report(const Json& r) {
  const std::string tier = str(r, "tier");
  std::string s = header_lines(r);
  if (tier == "e2e") s += e2e_tables(r);
  else if (tier == "module") s += module_table(r);
  else if (tier == "kernels") s += kernels_table(r);
  return s;
}

std::string compare_markdown(const Json& before, const Json& after, const std::string& before_name) {
  std::string s = "\n### change against " + cell(before_name) + " (" + str(before, "created") + ", " +
                  str(before.value("environment", Json::object()), "engine_commit") + ")\n\n";
  if (str(before, "tier") != str(after, "tier"))
    return s + "not comparable: that report is of tier " + str(before, "tier") + ", this one of " + str(after, "tier") + "\n";
  const auto a = metrics(before), b = metrics(after);
  s += "| row | metric | before | after | change |\n|---|---|---:|---:|---:|\n";
  for (const auto& [key, ms] : b)
    for (const auto& [metric, v] : ms) {
      auto it = a.find(key);
      if (it == a.end() || !it->second.count(metric)) {
        s += "| " + cell(key) + " | " + metric + " | — | " + fmt(v, "%.4g") + " | new |\n";
        continue;
      }
      const double old = it->second.at(metric);
      const double pct = 100.0 * (v - old) / old;
      s += "| " + cell(key) + " | " + metric + " | " + fmt(old, "%.4g") + " | " + fmt(v, "%.4g") + " | " +
           (std::isfinite(pct) ? fmt(pct, "%+.1f%%") + (pct < 0 ? " faster" : pct > 0 ? " slower" : "") : "—") + " |\n";
    }
  for (const auto& [key, ms] : a)
    if (!b.count(key)) s += "| " + cell(key) + " | — | — | — | gone |\n";
  return s;
}

Json load_report(const fs::path& path) {
  const std::string subject = path.string();
  Json j = parse_json_strict(read_file(path, size_t(512) << 20), subject);
  if (!j.is_object() || j.value("schema", "") != kReportSchema)
    throw_input(subject, std::string("not a bench report (no \"schema\": \"") + kReportSchema + "\")");
  const std::string tier = json_string(j, subject, "tier");
  if (tier != "e2e" && tier != "module" && tier != "kernels") throw_input(subject, "tier: unknown tier " + json_quote(tier));
  if (!json_require(j, subject, "results").is_array()) throw_input(subject, "results: expected an array");
  check_report_fields(j, subject);
  return j;
}

}  // namespace ac::bench
