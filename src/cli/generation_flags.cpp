#include "cli/generation_flags.h"

#include <cstdio>

#include "agentcompile/core/error.h"
#include "agentcompile/ir/graph.h"
#include "agentcompile/model/model.h"
#include "agentcompile/runtime/backends.h"
#include "agentcompile/runtime/generation_defaults.h"
#include "agentcompile/runtime/plan_executor.h"
#include "cli/cli_common.h"

namespace ac::cli {

void add_sampling_flags(CLI::App* app, GenerationFlags& f) {
  app->add_option("--temperature", f.temperature, "0 = greedy; default: generation_config.json, else greedy")->check(in_range(0, 100));
  app->add_option("--top-k", f.top_k, "Keep the k most likely tokens (0 = off)")->check(in_range(0, INT32_MAX));
  app->add_option("--top-p", f.top_p, "Keep the smallest set with this much probability (1 = off)")->check(in_range(0, 1));
  app->add_option("--min-p", f.min_p, "Drop tokens below min-p times the most likely (0 = off)")->check(in_range(0, 1));
  app->add_option("--seed", f.seed, "Sampling seed (default 0)")->check(in_range(0, 18446744073709551615.0L));
}

void add_executor_flags(CLI::App* app, GenerationFlags& f) {
  app->add_option("--backend", f.backend, "cpu, cuda or auto (default: cuda when a GPU is usable)");
  app->add_option("--plan", f.plan, "Run a compiled plan folder (refused when made for another model, machine or engine)");
  app->add_flag("--rebuild-kernels", f.rebuild_kernels, "Ignore the plan's kernel binaries: compile its kernels from this build's templates (its choices are kept)");
  app->add_option("--cuda-route", f.cuda_route,
                  "CUDA kernels without a plan: auto (default), fast (fused decode + CUDA graphs), library "
                  "(cuBLAS + reference kernels), reference");
}

SamplingParams sampling_from_flags(const GenerationFlags& f, const fs::path& model_dir) {
  const bool any_sampling_flag = f.temperature || f.top_k || f.top_p || f.min_p;
  SamplingParams s = any_sampling_flag ? SamplingParams{} : load_sampling_defaults(model_dir);
  if (f.temperature) s.temperature = *f.temperature;
  if (f.top_k) s.top_k = *f.top_k;
  if (f.top_p) s.top_p = *f.top_p;
  if (f.min_p) s.min_p = *f.min_p;
  if (any_sampling_flag && !f.temperature && (f.top_k || f.top_p || f.min_p)) s.temperature = 1.0f;
  s.seed = f.seed;
  validate_sampling(s);
  return s;
}

void prepare_model_from_flags(const GenerationFlags& f, Model& model) {
  if (!f.plan.empty()) prepare_model_for_plan(f.plan, model);
}

std::optional<Plan> plan_from_flags(const GenerationFlags& f, const Model& model) {
  if (f.rebuild_kernels && f.plan.empty()) throw_input("--rebuild-kernels", "needs --plan");
  if (f.plan.empty()) return std::nullopt;
  return load_plan_for(f.plan, model, f.backend, f.rebuild_kernels ? PlanKernels::Rebuild : PlanKernels::Load);
}

std::unique_ptr<Executor> executor_from_flags(const GenerationFlags& f, const std::optional<Plan>& plan,
                                              const Graph& graph, const ExecutorLimits& limits) {
  if (!plan) return make_executor(f.backend, graph, limits, BackendOptions{f.cuda_route});
  if (const std::string w = stale_plan_warning(*plan, stale_plan_kernels(*plan, graph)); !w.empty())
    std::fprintf(stderr, "warning: --plan %s: %s\n", f.plan.c_str(), w.c_str());
  return make_plan_executor(*plan, graph, limits);
}

}  // namespace ac::cli
