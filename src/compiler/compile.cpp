// compile_model: the compile's stages in order (compile_run.h says what each hands forward).
#include "agentcompile/compiler/compile.h"

#include "agentcompile/core/error.h"
#include "agentcompile/ir/decoder_layers.h"
#include "compiler/compile_run.h"

namespace ac {

namespace {

// The options no stage can run with: one line each, before anything is built or opened.
void check_options(const CompileOptions& o) {
  if (o.objective != "latency" && o.objective != "throughput")
    throw_input("--objective", json_quote(o.objective) + " is not latency or throughput");
  if (o.max_batch < 1 || o.max_batch > 256) throw_input("--max-batch", "must be in [1, 256]");
  if (!(o.budget_s > 0)) throw_input("--budget", "must be a positive number of seconds");
  if (!(o.db_wait_s >= 0) || o.db_wait_s > 86400) throw_input("--db-wait", "must be between 0 and 86400 seconds");
}

std::string name_of(const Model& m) {
  return m.dir.filename().empty() ? m.dir.parent_path().filename().string() : m.dir.filename().string();
}

}  // namespace

CompileRun::CompileRun(const Model& model, const CompileOptions& options)
    : m(model),
      o(options),
      start(Clock::now()),
      deadline(start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.budget_s))),
      g(build_decoder_graph(model.config, model.weights)),
      env(current_environment(options.backend)),
      backend(usable_backend(options.backend)),
      db(options.db_path.empty() ? TuningDb::default_path() : options.db_path, options.db_wait_s),
      hash(model_hash(model)),
      model_name(name_of(model)) {}

void CompileRun::progress(const std::string& stage) {
  if (!o.progress) return;
  prog.stage = stage;
  prog.budget_left_s = std::max(0.0, o.budget_s - seconds_since(start));
  o.progress(prog);
}

Clock::time_point CompileRun::at_share_of_budget(double share) const {
  return start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(share * o.budget_s));
}

CompileResult compile_model(const Model& m, const CompileOptions& o) {
  check_options(o);
  CompileRun r(m, o);
  if (o.seed_plan && o.seed_plan->model_hash != r.hash)
    throw_input("--seed-plan " + o.seed_from, "made for another model (" + o.seed_plan->model_name + ", hash " +
                                                  o.seed_plan->model_hash.substr(0, 12) + ")");
  run_front_stage(r);
  run_search_stage(r);
  run_repair_stage(r);
  run_step_stage(r);
  run_regression_stage(r);
  run_report_stage(r);
  return std::move(r.result);
}

void write_plan_folder(const fs::path& out, const CompileResult& r) {
  StagingDir dir(out, plan_folder_kind());
  for (const auto& k : r.kernels) {
    fs::create_directories((dir.path() / k.kernel.file).parent_path());
    write_file_atomic(dir.path() / k.kernel.file, k.bytes);
  }
  write_file_atomic(dir.path() / "plan.json", r.plan.to_json().dump(2) + "\n");
  write_file_atomic(dir.path() / "report.json", r.report.dump(2) + "\n");
  write_file_atomic(dir.path() / "report.md", r.report_md);
  dir.commit();
}

}  // namespace ac
