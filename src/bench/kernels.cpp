// bench kernels: each decode region at a model's shapes, on the GPU (src/backends/cuda/bench_kernels.cpp),
// with the fast route's default choices or, with --plan, a compiled plan's.
#include <optional>

#include "agentcompile/bench/tiers.h"
#include "agentcompile/core/error.h"
#include "agentcompile/model/synth_model.h"
#include "agentcompile/runtime/backends.h"
#include "agentcompile/runtime/plan_executor.h"
#include "bench/common.h"
#ifdef AGENTCOMPILE_HAVE_CUDA
#include "agentcompile/backends/cuda/bench_measure.h"
#endif

namespace ac::bench {

namespace {

// Shapes only: a preset's config is read without synthesising its weights.
std::pair<std::string, ModelConfig> model_shapes(const std::string& spec) {
  std::error_code ec;
  if (fs::is_directory(spec, ec)) {
    fs::path dir = fs::absolute(spec).lexically_normal();
    std::string name = dir.filename().empty() ? dir.parent_path().filename().string() : dir.filename().string();
    return {name, load_model_config(dir)};
  }
  if (const SynthPreset* p = find_synth_preset(spec)) return {spec, parse_model_config(p->config, spec)};
  throw_input("--model", json_quote(spec) + " is neither a model folder nor a preset");
}

}  // namespace

Json run_kernels(const BenchOptions& o) {
  std::string why;
  if (o.backend == "cpu" || !cuda_backend_available(&why)) {
    if (auto p = why.find("; use --backend cpu"); p != std::string::npos) why.resize(p);  // not an option here
    throw_input("bench kernels", "times CUDA kernels and needs a GPU (--backend cuda)" + (why.empty() ? "" : ": " + why));
  }
  if (o.context < 1) throw_input("--context", "must be >= 1");
  std::vector<std::pair<std::string, ModelConfig>> models;
  std::optional<Plan> plan;
  if (!o.plan.empty()) {  // the plan's kernel choices, for the one model it was made for
    if (o.models.size() != 1) throw_input("--plan", "a plan is made for one model: give exactly one --model");
    BenchModel bm = resolve_model(o.models[0], o);
    prepare_model_for_plan(o.plan, *bm.model);
    plan = load_plan_for(o.plan, *bm.model, "cuda", o.rebuild_kernels ? PlanKernels::Rebuild : PlanKernels::Load);
    models.push_back({bm.name, bm.model->config});
  } else {
    for (const auto& spec : o.models) models.push_back(model_shapes(spec));
  }
  Json rep = report_header("kernels", o, "cuda");
#ifdef AGENTCOMPILE_HAVE_CUDA
  rep["ceilings"] = measure_ceilings("cuda", o.progress);
  rep["models"] = Json::array();
  rep["results"] = Json::array();
  rep["method"] =
      "fast: the fused kernel the fast route launches (norm prologue, epilogue included); reference and library: the "
      "projection only (their separate norm/epilogue kernels not counted, so their times are lower bounds); weights "
      "rotated over copies > 160 MB; CUDA graph of back-to-back launches, median of replays";
  cuda::KernelBenchOptions ko;
  ko.context = o.context;
  ko.batches = o.batches;
  ko.repeats = std::max(o.repeats, 3);
  ko.copy_GBps = ceiling(rep["ceilings"], "copy_GBps");
  ko.read_GBps = ceiling(rep["ceilings"], "read_GBps");
  ko.gemm_tflops = ceiling(rep["ceilings"], "gemm_tflops");
  if (plan) {
    ko.plan = plan->cuda_fast;
    rep["settings"]["plan"] = fs::absolute(o.plan).string();
    rep["settings"]["rebuild_kernels"] = o.rebuild_kernels;
  }
  for (auto& [name, cfg] : models) {
    rep["models"].push_back({{"name", name}, {"architecture", std::string(arch_name(cfg.arch))}});
    Json rows = cuda::bench_decode_kernels(cfg, cfg.torch_dtype, ko);
    for (Json& r : rows) {
      r["model"] = name;
      progress_line(o.progress, "bench kernels: %s %s batch %lld done", name.c_str(), r["region"].get<std::string>().c_str(),
                    (long long)r["batch"].get<int64_t>());
      rep["results"].push_back(std::move(r));
    }
  }
#endif
  return rep;
}

}  // namespace ac::bench
