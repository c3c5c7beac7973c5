// agentcompile compile MODEL --out DIR [...]: searches, validates and measures candidates per
// region, picks the cheapest correct route, checks the plan end to end and writes the plan folder
// (plan.json, report.json, report.md) atomically.
#include <unistd.h>

#include <cstdio>

#include "agentcompile/compiler/compile.h"
#include "agentcompile/core/error.h"
#include "agentcompile/ir/graph.h"
#include "agentcompile/model/fp8_quantize.h"
#include "agentcompile/model/model.h"
#include "agentcompile/runtime/weights_accuracy.h"
#include "agentcompile/runtime/backends.h"
#include "cli/cli_common.h"

namespace ac::cli {

namespace {

struct CompileCliOptions {
  std::string model, out, backend = "auto", db, objective = "latency", seed_plan, weights, lm_head;
  AdvisorFlags advice;
  double budget = 120, db_wait = TuningDb::kDefaultWaitS;
  int max_batch = 1;
  bool allow_regression = false, json = false, no_step_tuning = false;
};

// Regions done / candidates measured / budget left: one rewritten line on a terminal, a plain
// line per stage change otherwise.
class ProgressPrinter {
 public:
  ProgressPrinter() : tty_(::isatty(STDERR_FILENO) == 1) {}
  void operator()(const CompileProgress& p) {
    char line[200];
    std::snprintf(line, sizeof line, "[%zu/%zu regions] %zu measured, %zu from the DB, %.0f s of budget left  %s",
                  p.regions_done, p.regions_total, p.candidates_measured, p.candidates_reused, p.budget_left_s,
                  p.stage.c_str());
    if (tty_) {
      std::fprintf(stderr, "\r\033[K%s", line);
    } else if (p.stage != last_) {
      std::fprintf(stderr, "%s\n", line);
    }
    last_ = p.stage;
    std::fflush(stderr);
  }
  void done() {
    if (tty_) std::fprintf(stderr, "\r\033[K");
  }

 private:
  bool tty_;
  std::string last_;
};

// The output folder must be new, empty, or one compile wrote (it is replaced whole).
void check_out(const fs::path& out) {
  std::error_code ec;
  if (out.empty()) throw_input("--out", "is required");
  if (!fs::exists(fs::symlink_status(out, ec)) && out.has_parent_path() && !fs::is_directory(out.parent_path(), ec))
    throw_input("--out " + out.string(), "its parent folder does not exist");
  check_replaceable(out, plan_folder_kind(), "--out " + out.string());
}

// compile --weights: the plan runs the model quantized at load, and its report says how far that
// computes from the 16-bit source on the CPU reference (a fixed 64-token sequence, then 32 greedy
// tokens after its first 16).
void add_weights_accuracy(CompileResult& r, const std::string& weights, const Model& source, const Model& quantized) {
  r.plan.weights = weights;
  r.plan.lm_head_fp8 = quantized.quant.lm_head_fp8;
  std::vector<int32_t> tokens;
  const int64_t vocab = source.config.vocab_size;
  for (int64_t i = 0; i < 64; ++i) tokens.push_back(int32_t((i * 7919 + 17) % vocab));
  const WeightsAccuracy a = weights_accuracy(build_decoder_graph(source.config, source.weights),
                                             build_decoder_graph(quantized.config, quantized.weights), tokens, 16, 32);
  r.report["weights"] = {{"weights", weights}, {"lm_head", quantized.quant.lm_head_fp8 ? "fp8" : "16-bit"},
                         {"quantization", quantized.quant.describe()}, {"accuracy", a.to_json()},
                         {"reference", "the 16-bit model on the CPU reference; teacher-forced over 64 fixed tokens, "
                                       "greedy for 32 tokens after the first 16"}};
  char b[440];
  std::snprintf(b, sizeof b,
                "\n## Weights\n\nQuantized at load (%s%s): against the 16-bit model on the CPU reference over %lld positions, "
                "max |dlogit| %.4g, mean |dlogit| %.4g, mean KL %.4g nats, top-1 agreement %.1f%%; greedy tokens agree "
                "for %lld of %lld.\n",
                weights.c_str(), quantized.quant.lm_head_fp8 ? ", the lm_head too" : "", (long long)a.positions, a.max_abs_dlogit, a.mean_abs_dlogit, a.mean_kl,
                100 * a.top1_agreement, (long long)a.greedy_prefix, (long long)a.greedy_tokens);
  r.report_md += b;
}

int run_compile(const CompileCliOptions& o) {
  check_out(o.out);
  CompileOptions co;
  co.backend = o.backend == "auto" ? (cuda_backend_available() ? "cuda" : "cpu") : o.backend;
  if (co.backend != "cpu" && co.backend != "cuda") throw_input("--backend", json_quote(o.backend) + " is not cpu, cuda or auto");
  if (co.backend == "cuda") resolve_backend("cuda");  // a clear error without a GPU
  co.advisor = advisor_config(o.advice.advisor, o.advice.llm_url, o.advice.llm_model);
  co.budget_s = o.budget;
  co.db_path = o.db;
  co.db_wait_s = o.db_wait;
  co.objective = o.objective;
  co.max_batch = o.max_batch;
  co.allow_regression = o.allow_regression;
  co.step_tuning = !o.no_step_tuning;
  if (!o.seed_plan.empty()) {
    co.seed_plan = Plan::load_choices(o.seed_plan, "--seed-plan");
    co.seed_from = o.seed_plan;
  }
  ProgressPrinter printer;
  co.progress = [&](const CompileProgress& p) { printer(p); };
  if (!o.weights.empty() && o.weights != "fp8-block" && o.weights != "fp8-channel")
    throw_input("--weights", json_quote(o.weights) + " is not fp8-block or fp8-channel");
  if (!o.lm_head.empty() && o.lm_head != "fp8" && o.lm_head != "16-bit")
    throw_input("--lm-head", json_quote(o.lm_head) + " is not fp8 or 16-bit");
  if (o.lm_head == "fp8" && o.weights.empty())
    throw_input("--lm-head", "fp8 goes with --weights fp8-block or fp8-channel (the lm_head quantized with the projections)");
  auto model = load_model(o.model);
  std::unique_ptr<Model> source;  // the 16-bit model, for the accuracy report
  if (!o.weights.empty()) {
    if (model->quant.kind != QuantConfig::Kind::None)
      throw_input("--weights", o.model + " is already quantized (" + model->quant.method + ")");
    source = load_model(o.model);
    quantize_model_fp8(*model, o.weights == "fp8-block", o.lm_head == "fp8");
  }
  CompileResult r = compile_model(*model, co);
  printer.done();
  if (source) add_weights_accuracy(r, o.weights, *source, *model);
  // Measurements the tuning database did not take are worth a line even when the plan is written.
  if (!r.db_note.empty()) std::fprintf(stderr, "warning: tuning db %s: %s\n", r.report["db"]["path"].get<std::string>().c_str(), r.db_note.c_str());
  if (!r.advisor_note.empty()) std::fprintf(stderr, "warning: %s\n", r.advisor_note.c_str());
  if (!r.regression.empty()) throw Error(ErrorKind::Internal, "compile", r.regression);
  write_plan_folder(o.out, r);
  const Json& e = r.report["e2e"];
  if (o.json) {
    Json routes = Json::array();
    for (const auto& x : r.plan.routes)
      routes.push_back({{"region", x.region}, {"phase", x.phase}, {"family", x.family}, {"params", x.params},
                        {"time_us", x.time_us}, {"fallback_us", x.fallback_us}});
    Json out = {{"plan", o.out}, {"backend", co.backend}, {"routes", routes}, {"e2e", e},
                {"totals", r.report["totals"]}, {"spans", r.report["spans"]}, {"repairs", r.report["repairs"]},
                {"fallbacks", r.report["fallbacks"]}, {"db", r.report["db"]},
                {"regression", r.report["regression"]}, {"efficiency", r.report["efficiency"]},
                {"step_tuning", {{"status", r.report["step_tuning"].value("status", std::string())},
                                 {"cut", r.report["step_tuning"].value("cut", false)},
                                 {"note", r.report["step_tuning"].value("note", std::string())}}},
                {"elapsed_s", r.elapsed_s}};
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    std::printf("plan written to %s (%zu region routes; %zu candidates measured, %zu reused from the DB; %.1f s)\n",
                o.out.c_str(), r.plan.routes.size(), r.report["totals"]["measured"].get<size_t>(),
                r.report["totals"]["reused"].get<size_t>(), r.elapsed_s);
    for (const auto& x : r.plan.routes)
      if (x.route != "fallback")
        std::printf("  %-10s %-8s %s (%.1f us, fallback %.1f us)\n", x.region.c_str(), x.phase.c_str(),
                    Candidate{x.family, x.params}.name().c_str(), x.time_us, x.fallback_us);
    std::printf("end-to-end: %s, speedup against the reference backend %.2fx; regression check: %s\n",
                e["ok"].get<bool>() ? "passed" : "failed", e["speedup_vs_reference"].get<double>(),
                r.report["regression"]["status"].get<std::string>().c_str());
    // A tuning the budget cut short is worth a line: the plan may be a few percent off its best.
    const Json& st = r.report["step_tuning"];
    if (st.is_object() && st.value("cut", false))
      std::printf("decode-step tuning: %s\n", st.value("note", std::string()).c_str());
  }
  return 0;
}

}  // namespace

Subcommand add_compile(CLI::App& root) {
  auto o = std::make_shared<CompileCliOptions>();
  CLI::App* app = root.add_subcommand("compile", "Compile a model into a plan: measured kernel choices per region, checked end to end");
  app->add_option("MODEL", o->model, "Hugging Face model folder")->required();
  app->add_option("--out", o->out, "plan folder to write (plan.json, report.json, report.md)")->required();
  app->add_option("--backend", o->backend, "cpu, cuda or auto (default)");
  add_advisor_flags(app, o->advice);
  app->add_option("--budget", o->budget,
                  "seconds for the advice, search and checks (default 120; the advisor may take a quarter of it)")
      ->check(in_range(0.001, 7 * 24 * 3600));
  app->add_option("--db", o->db, "tuning database (default ~/.cache/agentcompile/tune.db): a regular file or a link to one");
  app->add_option("--db-wait", o->db_wait,
                  "seconds to wait for a tuning database another process holds locked (default 15), mid-compile and "
                  "again at the end; then the compile goes on without it and says what it did not store")
      ->check(in_range(0, 86400));
  app->add_option("--objective", o->objective, "latency (default: batch-1 prefill + decode) or throughput (batched decode)");
  app->add_option("--max-batch", o->max_batch, "decode batch of the throughput objective (default 1)")->check(in_range(1, 256));
  app->add_flag("--allow-regression", o->allow_regression, "accept a plan >10% slower than the best recorded one");
  app->add_option("--seed-plan", o->seed_plan,
                  "plan folder compiled before for this model: its choices, as one plan, against the searched plan "
                  "before the decode-step tuning (CUDA)");
  app->add_flag("--no-step-tuning", o->no_step_tuning,
                "CUDA: keep the search's decode points (skip timing their best few again in whole decode steps)");
  app->add_option("--weights", o->weights,
                  "fp8-block or fp8-channel: compile for the 16-bit model's weights quantized at load (W8A16), with "
                  "an accuracy report against the 16-bit model; the plan quantizes the same way wherever it runs");
  app->add_option("--lm-head", o->lm_head,
                  "with --weights: fp8 quantizes the lm_head too (one byte per weight; a tied one gets a copy, the "
                  "embedding stays 16-bit), or 16-bit (default, as FP8 checkpoints ship it)");
  app->add_flag("--json", o->json, "Print a JSON summary");
  return {app, [o]() { return run_compile(*o); }};
}

}  // namespace ac::cli
