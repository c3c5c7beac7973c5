// agentcompile inspect MODEL [--json]: what a model folder holds, validated.
#include <cstdio>
#include <map>

#include "agentcompile/core/text.h"
#include "agentcompile/ir/graph.h"
#include "agentcompile/model/model.h"
#include "cli/cli_common.h"

namespace ac::cli {

namespace {

struct InspectOptions {
  std::string model;
  bool json = false;
  bool graph = false;
  bool regions = false;
};

Json describe(const Model& m) {
  const ModelConfig& c = m.config;
  std::map<std::string, int64_t> dtypes;
  for (const auto& [name, t] : m.store.all()) dtypes[std::string(dtype_safetensors_name(t->dtype))] += 1;
  Json rope = {{"theta", c.rope.theta}, {"type", std::string(rope_type_name(c.rope.type))}};
  if (c.rope.type != RopeType::Default) rope["factor"] = c.rope.factor;
  if (c.rope.type == RopeType::Llama3) {
    rope["low_freq_factor"] = c.rope.low_freq_factor;
    rope["high_freq_factor"] = c.rope.high_freq_factor;
    rope["original_max_position_embeddings"] = c.rope.original_max_position_embeddings;
  }
  Json files = Json::array();
  for (const auto& f : m.store.files()) files.push_back(f.string());
  Json j = {
      {"model", m.dir.string()},
      {"architecture", std::string(arch_name(c.arch))},
      {"layers", c.num_layers},
      {"hidden_size", c.hidden_size},
      {"intermediate_size", c.intermediate_size},
      {"heads", c.num_heads},
      {"kv_heads", c.num_kv_heads},
      {"head_dim", c.head_dim},
      {"vocab_size", c.vocab_size},
      {"max_position_embeddings", c.max_position_embeddings},
      {"context_limit", c.context_limit()},
      {"rms_norm_eps", c.rms_norm_eps},
      {"rope", rope},
      {"tie_word_embeddings", c.tie_word_embeddings},
      {"qk_norm", c.qk_norm},
      {"attention_bias", c.attention_bias},
      {"torch_dtype", std::string(dtype_torch_name(c.torch_dtype))},
      {"dtypes", dtypes},
      {"tensors", m.store.all().size()},
      {"parameters", m.weights.parameters},
      {"bytes", m.weights.bytes},
      {"files", files},
      {"ignored_tensors", m.weights.ignored},
      {"eos_token_ids", c.eos_token_ids},
      {"tokenizer", m.has_tokenizer()},
  };
  j["bos_token_id"] = c.bos_token_id ? Json(*c.bos_token_id) : Json(nullptr);
  // FP8 checkpoints: what the files hold, beside the dequantized weights that "bytes" counts.
  j["quantization"] = m.quant.describe();
  j["stored_bytes"] = m.weights.bytes - m.dequant.loaded_bytes + m.dequant.stored_bytes;
  return j;
}


void print_text(const Json& j) {
  std::printf("model         %s\n", j["model"].get<std::string>().c_str());
  std::printf("architecture  %s\n", j["architecture"].get<std::string>().c_str());
  std::printf("parameters    %lld (%s)\n", static_cast<long long>(j["parameters"].get<int64_t>()),
              human_count(double(j["parameters"].get<int64_t>())).c_str());
  std::printf("bytes         %llu (%s)\n", static_cast<unsigned long long>(j["bytes"].get<uint64_t>()),
              (human_count(double(j["bytes"].get<uint64_t>())) + "B").c_str());
  std::printf("layers        %lld\n", static_cast<long long>(j["layers"].get<int64_t>()));
  std::printf("hidden        %lld (intermediate %lld)\n", static_cast<long long>(j["hidden_size"].get<int64_t>()),
              static_cast<long long>(j["intermediate_size"].get<int64_t>()));
  std::printf("heads         %lld query, %lld key/value, head_dim %lld\n", static_cast<long long>(j["heads"].get<int64_t>()),
              static_cast<long long>(j["kv_heads"].get<int64_t>()), static_cast<long long>(j["head_dim"].get<int64_t>()));
  std::printf("vocabulary    %lld%s\n", static_cast<long long>(j["vocab_size"].get<int64_t>()),
              j["tie_word_embeddings"].get<bool>() ? " (embedding tied to lm_head)" : "");
  std::printf("context       %lld positions\n", static_cast<long long>(j["context_limit"].get<int64_t>()));
  std::printf("rope          %s\n", j["rope"].dump().c_str());
  std::printf("extras        qk_norm=%s attention_bias=%s rms_norm_eps=%g\n", j["qk_norm"].get<bool>() ? "yes" : "no",
              j["attention_bias"].get<bool>() ? "yes" : "no", j["rms_norm_eps"].get<double>());
  std::string dt;
  for (auto it = j["dtypes"].begin(); it != j["dtypes"].end(); ++it)
    dt += (dt.empty() ? "" : ", ") + it.key() + " x" + std::to_string(it->get<int64_t>());
  std::printf("tensors       %lld (%s)\n", static_cast<long long>(j["tensors"].get<int64_t>()), dt.c_str());
  if (j["quantization"] != "none")
    std::printf("quantization  %s; %s stored, %s loaded\n", j["quantization"].get<std::string>().c_str(),
                (human_count(double(j["stored_bytes"].get<uint64_t>())) + "B").c_str(),
                (human_count(double(j["bytes"].get<uint64_t>())) + "B").c_str());
  std::printf("eos ids       %s\n", j["eos_token_ids"].dump().c_str());
  std::printf("tokenizer     %s\n", j["tokenizer"].get<bool>() ? "tokenizer.json present" : "none");
}

}  // namespace

Subcommand add_inspect(CLI::App& root) {
  auto opts = std::make_shared<InspectOptions>();
  CLI::App* app = root.add_subcommand("inspect", "Describe a model folder: architecture, shapes, dtypes, bytes, parameters");
  app->add_option("MODEL", opts->model, "Hugging Face model folder")->required();
  app->add_flag("--json", opts->json, "Print JSON");
  app->add_flag("--graph", opts->graph, "Also print the decoder graph (one op per line; \"graph\" in --json)");
  app->add_flag("--regions", opts->regions, "Also print the regions and their summaries (\"regions\" in --json)");
  return {app, [opts]() {
            auto model = load_model(opts->model);
            Json j = describe(*model);
            std::string graph;
            if (opts->graph) graph = build_decoder_graph(model->config, model->weights).to_string();
            if (opts->json) {
              if (opts->graph) j["graph"] = graph;
              if (opts->regions) j["regions"] = regions_report(*model);
              std::printf("%s\n", j.dump(2).c_str());
            } else {
              print_text(j);
              if (opts->graph) std::printf("\ngraph (N = tokens in the step):\n%s", graph.c_str());
              if (opts->regions) print_regions(regions_report(*model));
            }
            return 0;
          }};
}

}  // namespace ac::cli
