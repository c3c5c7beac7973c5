// agentcompile inspect MODEL [--json]: what a model folder holds, validated.
#include <cmath>
#include <cstdio>
#include <map>

#include "agentcompile/core/error.h"
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
  bool config_only = false;
};

// Bytes as "61.06 GB" (human_count's "B" means billions).
std::string human_bytes(double b) {
  char buf[32];
  if (b >= 1e9) std::snprintf(buf, sizeof buf, "%.2f GB", b / 1e9);
  else if (b >= 1e6) std::snprintf(buf, sizeof buf, "%.2f MB", b / 1e6);
  else if (b >= 1e3) std::snprintf(buf, sizeof buf, "%.1f KB", b / 1e3);
  else std::snprintf(buf, sizeof buf, "%.0f B", b);
  return buf;
}

// Layer indices as "0, 2-5, 7" (short for 48 layers).
std::string layer_ranges(const std::vector<int64_t>& v) {
  std::string out;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    out += (out.empty() ? "" : ", ") + std::to_string(v[i]) + (j > i ? "-" + std::to_string(v[j]) : "");
    i = j + 1;
  }
  return out.empty() ? "none" : out;
}

// What the config alone says: shapes, rope, the experts of a mixture-of-experts model, and the
// parameter counts at `dtype` (the stored one when there are weights).
Json describe_config(const ModelConfig& c, const fs::path& dir, DType dtype) {
  Json rope = {{"theta", c.rope.theta}, {"type", std::string(rope_type_name(c.rope.type))}};
  if (c.rope.type != RopeType::Default) rope["factor"] = c.rope.factor;
  if (c.rope.type == RopeType::Llama3) {
    rope["low_freq_factor"] = c.rope.low_freq_factor;
    rope["high_freq_factor"] = c.rope.high_freq_factor;
    rope["original_max_position_embeddings"] = c.rope.original_max_position_embeddings;
  }
  const ParameterCounts pc = parameter_counts(c, dtype);
  Json j = {
      {"model", dir.string()},
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
      {"parameters", pc.total},
      {"active_parameters_per_token", pc.active_per_token},
      {"decode_step_weight_bytes", pc.decode_bytes},
      {"eos_token_ids", c.eos_token_ids},
  };
  j["attention_window"] = c.attention_window > 0 ? Json(c.attention_window) : Json(nullptr);
  if (c.is_moe()) {
    std::vector<int64_t> sparse, dense;
    for (int64_t i = 0; i < c.num_layers; ++i) (c.is_sparse_layer(i) ? sparse : dense).push_back(i);
    j["moe"] = {{"experts", c.moe.experts},
                {"experts_per_token", c.moe.experts_per_token},
                {"expert_intermediate_size", c.moe.expert_intermediate},
                {"renormalise_top_k", c.moe.norm_topk_prob},
                {"sparse_layers", sparse},
                {"dense_layers", dense}};
  } else {
    j["moe"] = nullptr;
  }
  j["bos_token_id"] = c.bos_token_id ? Json(*c.bos_token_id) : Json(nullptr);
  j["quantization"] = read_quantization_config(dir).describe();
  return j;
}

Json describe(const Model& m) {
  std::map<std::string, int64_t> dtypes;
  for (const auto& [name, t] : m.store.all()) dtypes[std::string(dtype_safetensors_name(t->dtype))] += 1;
  Json files = Json::array();
  for (const auto& f : m.store.files()) files.push_back(f.string());
  Json j = describe_config(m.config, m.dir, m.weights.embed->dtype);
  j["dtypes"] = dtypes;
  j["tensors"] = m.store.all().size();
  j["parameters"] = m.weights.parameters;
  j["bytes"] = m.weights.bytes;
  // FP8 checkpoints: what the files hold, beside the dequantized weights that "bytes" counts.
  j["stored_bytes"] = m.stored_bytes();
  // A decode step reads the stored fp8 bytes and their scales, not the 16-bit size the count from
  // the config assumes.
  j["decode_step_weight_bytes"] = m.decode_step_bytes();
  j["files"] = files;
  j["ignored_tensors"] = m.weights.ignored;
  j["tokenizer"] = m.has_tokenizer();
  return j;
}

// A folder without weights, described from config.json (+ generation_config.json).
Json describe_config_only(const fs::path& dir) {
  const ModelConfig c = load_model_config(dir);
  Json j = describe_config(c, dir, c.torch_dtype);
  j["weights"] = "none (config only)";
  j["bytes"] = uint64_t(j["parameters"].get<int64_t>()) * dtype_size(c.torch_dtype);
  std::error_code ec;
  j["tokenizer"] = fs::exists(dir / "tokenizer.json", ec);
  return j;
}

void print_text(const Json& j) {
  auto i64 = [&](const char* k) { return static_cast<long long>(j[k].get<int64_t>()); };
  const int64_t params = j["parameters"].get<int64_t>();
  std::printf("model         %s\n", j["model"].get<std::string>().c_str());
  std::printf("architecture  %s\n", j["architecture"].get<std::string>().c_str());
  std::printf("parameters    %lld (%s)\n", static_cast<long long>(params), human_count(double(params)).c_str());
  std::printf("bytes         %llu (%s)%s\n", static_cast<unsigned long long>(j["bytes"].get<uint64_t>()),
              human_bytes(double(j["bytes"].get<uint64_t>())).c_str(),
              j.contains("weights") ? " at torch_dtype, no weights in the folder (config only)" : "");
  std::printf("layers        %lld\n", i64("layers"));
  std::printf("hidden        %lld (intermediate %lld)\n", i64("hidden_size"), i64("intermediate_size"));
  if (j["moe"].is_object()) {
    const Json& m = j["moe"];
    std::printf("experts       %lld per sparse layer, %lld per token%s, intermediate %lld\n",
                static_cast<long long>(m["experts"].get<int64_t>()),
                static_cast<long long>(m["experts_per_token"].get<int64_t>()),
                m["renormalise_top_k"].get<bool>() ? " (weights renormalised)" : "",
                static_cast<long long>(m["expert_intermediate_size"].get<int64_t>()));
    std::printf("sparse layers %s\n", layer_ranges(m["sparse_layers"].get<std::vector<int64_t>>()).c_str());
    std::printf("dense layers  %s\n", layer_ranges(m["dense_layers"].get<std::vector<int64_t>>()).c_str());
  }
  const int64_t active = j["active_parameters_per_token"].get<int64_t>();
  std::printf("active        %lld parameters per token (%s, %.1f%%)\n", static_cast<long long>(active),
              human_count(double(active)).c_str(), params > 0 ? 100.0 * double(active) / double(params) : 0.0);
  std::printf("decode step   %s of weights read per token at batch 1\n",
              human_bytes(double(j["decode_step_weight_bytes"].get<uint64_t>())).c_str());
  std::printf("heads         %lld query, %lld key/value, head_dim %lld\n", i64("heads"), i64("kv_heads"),
              i64("head_dim"));
  std::printf("vocabulary    %lld%s\n", i64("vocab_size"),
              j["tie_word_embeddings"].get<bool>() ? " (embedding tied to lm_head)" : "");
  std::printf("context       %lld positions%s\n", i64("context_limit"),
              j["attention_window"].is_null()
                  ? ""
                  : (", each attending to the last " + std::to_string(j["attention_window"].get<int64_t>())).c_str());
  std::printf("rope          %s\n", j["rope"].dump().c_str());
  std::printf("extras        qk_norm=%s attention_bias=%s rms_norm_eps=%g\n", j["qk_norm"].get<bool>() ? "yes" : "no",
              j["attention_bias"].get<bool>() ? "yes" : "no", j["rms_norm_eps"].get<double>());
  if (j.contains("dtypes")) {
    std::string dt;
    for (auto it = j["dtypes"].begin(); it != j["dtypes"].end(); ++it)
      dt += (dt.empty() ? "" : ", ") + it.key() + " x" + std::to_string(it->get<int64_t>());
    std::printf("tensors       %lld (%s)\n", i64("tensors"), dt.c_str());
  }
  if (j["quantization"] != "none" && j.contains("stored_bytes"))
    std::printf("quantization  %s; %s stored, %s loaded\n", j["quantization"].get<std::string>().c_str(),
                human_bytes(double(j["stored_bytes"].get<uint64_t>())).c_str(),
                human_bytes(double(j["bytes"].get<uint64_t>())).c_str());
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
  app->add_flag("--config-only", opts->config_only,
                "Describe the model from config.json alone (a folder without weights, e.g. synth-model --config-only)");
  return {app, [opts]() {
            if (opts->config_only) {
              if (opts->graph || opts->regions) throw_input("--config-only", "--graph and --regions need the weights");
              Json j = describe_config_only(opts->model);
              if (opts->json) std::printf("%s\n", j.dump(2).c_str());
              else print_text(j);
              return 0;
            }
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
