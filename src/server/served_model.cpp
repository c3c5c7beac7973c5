#include "agentcompile/server/served_model.h"

#include <algorithm>

#include "agentcompile/core/error.h"
#include "agentcompile/runtime/chat_prompt.h"
#include "agentcompile/runtime/generation_defaults.h"

namespace ac::server {

std::unique_ptr<ServedModel> load_served_model(const fs::path& dir, const std::string& name, SchedulerOptions options,
                                               const ModelExecutorFactory& make_executor,
                                               const std::function<void(Model&)>& prepare) {
  auto m = std::make_unique<ServedModel>();
  m->name = name;
  m->model = load_model(dir);
  if (prepare) prepare(*m->model);
  if (!m->model->has_tokenizer()) throw_input(dir.string(), "has no tokenizer.json (the server needs one)");
  m->tokenizer = std::make_unique<Tokenizer>(Tokenizer::load(m->model->dir));
  const ModelConfig& cfg = m->model->config;
  if (m->tokenizer->vocab_size() > cfg.vocab_size)
    throw_input(dir.string(), "the tokenizer has " + std::to_string(m->tokenizer->vocab_size()) +
                                  " tokens, more than the model's " + std::to_string(cfg.vocab_size));
  m->chat_template = std::make_unique<chat::ChatTemplate>(chat::ChatTemplate::load(m->model->dir));
  m->defaults = load_sampling_defaults(m->model->dir);
  m->eos_ids = cfg.eos_token_ids;
  m->chat_stop_ids = chat_stop_ids(cfg, *m->tokenizer);
  options.max_seq = std::min(options.max_seq, cfg.context_limit());
  m->context = options.max_seq;
  m->graph = std::make_unique<Graph>(build_decoder_graph(cfg, m->model->weights));
  const Model& model = *m->model;
  const Graph& graph = *m->graph;
  m->scheduler = std::make_unique<Scheduler>(
      [&model, &graph, make_executor](const ExecutorLimits& lim) { return make_executor(model, graph, lim); }, options);
  m->scheduler->wait_ready();
  return m;
}

}  // namespace ac::server
