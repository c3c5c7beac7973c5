#pragma once
// The model a server answers with: its config, tokenizer and chat template, the graph, and the
// scheduler that runs it (which owns the executor).
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agentcompile/chat/chat_template.h"
#include "agentcompile/core/fs.h"
#include "agentcompile/ir/graph.h"
#include "agentcompile/model/model.h"
#include "agentcompile/runtime/sampler.h"
#include "agentcompile/runtime/scheduler.h"
#include "agentcompile/tokenizer/tokenizer.h"

namespace ac::server {

// Builds the executor for the model's graph (on the scheduler's thread): a plan's, or a backend's.
using ModelExecutorFactory = std::function<std::unique_ptr<Executor>(const Model&, const Graph&, const ExecutorLimits&)>;

struct ServedModel {
  std::string name;       // what clients put in "model"
  int64_t context = 0;    // positions per request: prompt + generated
  SamplingParams defaults;  // generation_config.json's, for requests that set no sampling field
  std::vector<int64_t> eos_ids, chat_stop_ids;
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<chat::ChatTemplate> chat_template;
  std::unique_ptr<Graph> graph;
  std::unique_ptr<Scheduler> scheduler;  // last: stopped before what it runs is freed
};

// Loads the model folder (it must have a tokenizer), runs `prepare` on it (a plan's quantization
// at load), builds the graph and starts the scheduler with `options.max_seq` cut to the model's
// context; returns once the executor is built.
std::unique_ptr<ServedModel> load_served_model(const fs::path& dir, const std::string& name, SchedulerOptions options,
                                               const ModelExecutorFactory& make_executor,
                                               const std::function<void(Model&)>& prepare = {});

}  // namespace ac::server
