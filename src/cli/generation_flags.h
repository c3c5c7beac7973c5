#pragma once
// The flags `generate` and `chat` share: sampling (--temperature, --top-k, --top-p, --min-p,
// --seed) and where the model runs (--backend, --plan, --rebuild-kernels, --cuda-route).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "agentcompile/plan/plan.h"
#include "agentcompile/tuning/executor.h"
#include "agentcompile/runtime/sampler.h"

namespace ac {
struct Model;
struct Graph;
}  // namespace ac

namespace ac::cli {

struct GenerationFlags {
  std::optional<float> temperature, top_p, min_p;
  std::optional<int> top_k;
  uint64_t seed = 0;
  std::string backend = "auto", plan, cuda_route = "auto";
  bool rebuild_kernels = false;
};

void add_sampling_flags(CLI::App* app, GenerationFlags& flags);
void add_executor_flags(CLI::App* app, GenerationFlags& flags);

// The sampling parameters: the flags given, else generation_config.json's defaults, else greedy.
// A top-k / top-p / min-p flag without --temperature samples at temperature 1.
SamplingParams sampling_from_flags(const GenerationFlags& flags, const fs::path& model_dir);

// The plan of --plan (checked against the model and this machine), or nullopt.
// A plan compiled with --weights quantizes the model the same way; before the graph is built.
void prepare_model_from_flags(const GenerationFlags& flags, Model& model);
std::optional<Plan> plan_from_flags(const GenerationFlags& flags, const Model& model);

// The executor: the plan's, or the backend's; warns on stderr about plan kernels built from
// other kernel sources.
std::unique_ptr<Executor> executor_from_flags(const GenerationFlags& flags, const std::optional<Plan>& plan,
                                              const Graph& graph, const ExecutorLimits& limits);

}  // namespace ac::cli
