// agentcompile bench e2e|module|kernels [...]: the benchmark tiers (docs/bench.md), and
// bench report FILE to render a saved JSON report (optionally against another with --compare).
#include <cstdio>
#include <fstream>
#include <iterator>
#include <optional>

#include "agentcompile/bench/report.h"
#include "agentcompile/bench/tiers.h"
#include "agentcompile/core/error.h"
#include "cli/cli_common.h"

namespace ac::cli {

namespace {

struct BenchCliOptions {
  bench::BenchOptions b;
  std::vector<std::string> models;
  std::string workloads = "W1,W2,W3,W4,W5", batches = "1", json_out, md_out, compare, report_file;
  bool quiet = false;
};

std::vector<std::string> split_list(const std::vector<std::string>& items) {
  std::vector<std::string> out;
  for (const std::string& s : items) {
    size_t i = 0;
    while (i <= s.size()) {
      size_t j = s.find(',', i);
      if (j == std::string::npos) j = s.size();
      if (j > i) out.push_back(s.substr(i, j - i));
      i = j + 1;
    }
  }
  return out;
}

void check_output_path(const std::string& path, const std::string& flag) {
  if (path.empty()) return;
  const fs::path parent = fs::absolute(path).parent_path();
  std::error_code ec;
  if (!fs::is_directory(parent, ec)) throw_input(flag, "folder " + json_quote(parent.string()) + " does not exist");
  if (fs::is_directory(path, ec)) throw_input(flag, json_quote(path) + " is a folder");
}

// Checks shared by the tiers, before anything is measured (bad input never costs a run).
void check_common(BenchCliOptions& o, const std::string& tier) {
  o.b.models = split_list(o.models);
  if (o.b.models.empty()) throw_input("--model", "give at least one model folder or preset");
  if (o.b.repeats < 1) throw_input("--repeats", "must be >= 1");
  if (o.b.warmup < 0) throw_input("--warmup", "must be >= 0");
  if (o.b.rebuild_kernels && o.b.plan.empty()) throw_input("--rebuild-kernels", "needs --plan");
  if (o.b.in_memory && !o.b.plan.empty())
    throw_input("--in-memory", "a plan is made for a model folder (compile reads one): give the folder, not --in-memory");
  if (o.b.backend != "cpu" && o.b.backend != "cuda" && o.b.backend != "auto")
    throw_input("--backend", json_quote(o.b.backend) + " is not one of cpu, cuda, auto");
  const std::string& r = o.b.cuda_route;
  if (r != "fast" && r != "library" && r != "reference" && r != "auto")
    throw_input("--cuda-route", json_quote(r) + " is not one of fast, library, reference, auto");
  if (tier == "e2e") {
    o.b.workloads = bench::parse_workloads(o.workloads, "--workloads");
    if (!(o.b.tie_epsilon >= 0)) throw_input("--tie-epsilon", "must be >= 0");
    if (o.b.validate_tokens < 1 || o.b.validate_tokens > 4096) throw_input("--validate-tokens", "must be 1 to 4096");
    const std::string& ref = o.b.reference;
    if (ref != "auto" && ref != "peer" && ref != "cpu")
      throw_input("--reference", json_quote(ref) + " is not one of auto, peer, cpu");
  }
  if (tier == "kernels") {
    o.b.batches.clear();
    for (int32_t b : parse_id_list(o.batches, "--batch")) {
      if (b < 1 || b > 8) throw_input("--batch", "decode batches are 1 to 8");
      o.b.batches.push_back(b);
    }
  }
  check_output_path(o.json_out, "--json-out");
  check_output_path(o.md_out, "--md-out");
  o.b.progress = !o.quiet;
}

// Prints the markdown (and the change against --compare), writes the files whole or not at all.
void emit(const Json& report, const BenchCliOptions& o, const Json* before) {
  std::string md = bench::markdown_report(report);
  if (before) md += bench::compare_markdown(*before, report, o.compare);
  std::fwrite(md.data(), 1, md.size(), stdout);
  std::fflush(stdout);
  if (!o.json_out.empty()) write_file_atomic(o.json_out, report.dump(1, ' ', false, Json::error_handler_t::replace) + "\n");
  if (!o.md_out.empty()) write_file_atomic(o.md_out, md);
}

int run_tier(BenchCliOptions& o, const std::string& tier, const std::string& command) {
  check_common(o, tier);
  o.b.command = command;
  std::optional<Json> before;
  if (!o.compare.empty()) before = bench::load_report(o.compare);
  const Json report = tier == "e2e" ? bench::run_e2e(o.b) : tier == "module" ? bench::run_module(o.b) : bench::run_kernels(o.b);
  emit(report, o, before ? &*before : nullptr);
  if (tier == "e2e") {
    int failed = 0, errors = 0, total = 0;
    for (const Json& r : report["results"]) {
      ++total;
      failed += r["validation"]["status"] == "fail";
      errors += r.contains("error");
    }
    if (errors)
      throw_internal("bench e2e", std::to_string(errors) + " of " + std::to_string(total) +
                                      " runs failed (report written; see their \"error\")");
    if (failed)
      throw_internal("semantic check", std::to_string(failed) + " of " + std::to_string(total) +
                                           " runs differ from the reference (report written; those rows do not count)");
  }
  return 0;
}

void add_common(CLI::App* app, BenchCliOptions& o) {
  app->add_option("--model", o.models, "Model folder or preset (qwen3-1.7b, qwen3-4b, llama-3.2-1b, ...); repeat or comma-separate")
      ->required();
  app->add_option("--backend", o.b.backend, "cpu, cuda or auto (default auto)");
  app->add_option("--cuda-route", o.b.cuda_route, "fast (default), library, reference or auto");
  app->add_option("--plan", o.b.plan, "Run a compiled plan folder (e2e, kernels; one --model; refused when made for another model, machine or engine)");
  app->add_flag("--rebuild-kernels", o.b.rebuild_kernels, "Ignore the plan's kernel binaries: compile its kernels from this build's templates (its choices are kept)");
  app->add_option("--repeats", o.b.repeats, "Measured runs (default 3)")->check(in_range(1, 100000));
  app->add_option("--warmup", o.b.warmup, "Warm-up runs before measuring (default 1)")->check(in_range(0, 100000));
  app->add_option("--cache-dir", o.b.cache_dir, "Where presets are synthesised (default ~/.cache/agentcompile/models)");
  app->add_flag("--in-memory", o.b.in_memory,
                "Make presets' weights in memory instead of synthesising them into --cache-dir (no file: for presets "
                "larger than the disk, e.g. qwen3-30b-a3b)");
  app->add_option("--seed", o.b.seed, "Synthesis seed of presets (default 11)")->check(in_range(0, 18446744073709551615.0L));
  app->add_option("--json-out", o.json_out, "Write the JSON report (every sample, the environment) here");
  app->add_option("--md-out", o.md_out, "Write the markdown report here (it is also printed)");
  app->add_option("--compare", o.compare, "An earlier JSON report: show the change against it");
  app->add_flag("--quiet", o.quiet, "No progress lines on stderr");
}

// The command as typed, for the report (Linux: /proc/self/cmdline, NUL-separated).
std::string command_line() {
  std::ifstream f("/proc/self/cmdline", std::ios::binary);  // procfs sizes read 0: stream it
  const std::string raw((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (raw.empty()) return "agentcompile bench";
  std::string s;
  size_t i = 0;
  while (i < raw.size()) {
    size_t j = raw.find('\0', i);
    if (j == std::string::npos) j = raw.size();
    std::string a = raw.substr(i, j - i);
    if (i == 0) a = fs::path(a).filename().string();
    if (a.empty() || a.find_first_of(" \t'\"$") != std::string::npos) a = "'" + a + "'";
    s += (s.empty() ? "" : " ") + a;
    i = j + 1;
  }
  return s;
}

}  // namespace

Subcommand add_bench(CLI::App& root) {
  auto o = std::make_shared<BenchCliOptions>();
  CLI::App* app = root.add_subcommand("bench", "Benchmarks: e2e (whole generation vs peers), module (one decoder layer), "
                                               "kernels (decode regions vs reference and cuBLAS); report (render a JSON report)");
  app->require_subcommand(1);
  CLI::App* e2e = app->add_subcommand("e2e", "Whole generation per workload, against the peers, with the semantic check");
  add_common(e2e, *o);
  e2e->add_option("--workloads", o->workloads, "W1..W5 and/or P/G[xB] items, comma-separated (default W1,W2,W3,W4,W5)");
  e2e->add_option("--peer", o->b.peer_files, "A peer record (bench/peers/*.py output); repeatable");
  e2e->add_option("--tie-epsilon", o->b.tie_epsilon, "Logit margin under which a different token is a tie (default 0.1)")->check(in_range(0, 1e6));
  e2e->add_option("--validate-tokens", o->b.validate_tokens, "Generated tokens checked against the reference (default 32)")->check(in_range(1, 4096));
  e2e->add_option("--reference", o->b.reference,
                  "The semantic check's reference: peer (a --peer record's), cpu (the CPU reference backend on the "
                  "same weights, run here), auto (cpu for FP8 weights, else peer; default)");
  e2e->add_flag("--profile", o->b.profile,
                "After each row's timed runs, one more run profiled kernel by kernel: ms per step by kind and phase, "
                "against this run's copy bandwidth or GEMM rate (CUDA fast path and plans)");
  CLI::App* module = app->add_subcommand("module", "One decoder layer, prefill and decode (2-layer minus 1-layer model)");
  add_common(module, *o);
  module->add_option("--prompt", o->b.module_prompt, "Prefill tokens and decode context (default 128)")->check(in_range(1, 1 << 20));
  module->add_option("--steps", o->b.module_steps, "Decode steps per run (default 64)")->check(in_range(1, 1 << 20));
  CLI::App* kernels = app->add_subcommand("kernels", "Decode regions: fast kernel vs reference kernel vs cuBLAS (needs a GPU)");
  add_common(kernels, *o);
  kernels->add_option("--context", o->b.context, "KV positions for the attention region (default 1024)")->check(in_range(1, 1 << 20));
  kernels->add_option("--batch", o->batches, "Decode batch sizes, comma-separated, 1-8 (default 1)");
  CLI::App* report = app->add_subcommand("report", "Print the markdown of a saved JSON report");
  report->add_option("FILE", o->report_file, "JSON report written by --json-out")->required();
  report->add_option("--compare", o->compare, "An earlier JSON report: show the change against it");
  report->add_option("--md-out", o->md_out, "Write the markdown here too");
  return {app, [o, e2e, module, kernels, report]() {
            for (CLI::App* tier : {e2e, module, kernels})
              if (tier->parsed()) return run_tier(*o, tier->get_name(), command_line());
            if (report->parsed()) {
              check_output_path(o->md_out, "--md-out");
              const Json r = bench::load_report(o->report_file);
              std::optional<Json> before;
              if (!o->compare.empty()) before = bench::load_report(o->compare);
              emit(r, *o, before ? &*before : nullptr);
              return 0;
            }
            throw_input("bench", "give a tier: e2e, module, kernels or report");
          }};
}

}  // namespace ac::cli
