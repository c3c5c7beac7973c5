// The synth-model presets as data. The three real ones carry the published config.json values of
// Qwen/Qwen3-1.7B, Qwen/Qwen3-4B and meta-llama/Llama-3.2-1B-Instruct; the tiny ones keep the real
// vocabularies (so the real tokenizers work with them) and shrink everything else, with
// head_dim != hidden/heads and GQA so those paths are exercised.
#include "agentcompile/model/synth_model.h"

namespace ac {

namespace {

Json qwen3_config(int64_t hidden, int64_t inter, int64_t layers, int64_t heads, int64_t kv, int64_t head_dim) {
  return Json{{"architectures", {"Qwen3ForCausalLM"}},
              {"attention_bias", false},
              {"attention_dropout", 0.0},
              {"bos_token_id", 151643},
              {"eos_token_id", 151645},
              {"head_dim", head_dim},
              {"hidden_act", "silu"},
              {"hidden_size", hidden},
              {"initializer_range", 0.02},
              {"intermediate_size", inter},
              {"max_position_embeddings", 40960},
              {"max_window_layers", layers},
              {"model_type", "qwen3"},
              {"num_attention_heads", heads},
              {"num_hidden_layers", layers},
              {"num_key_value_heads", kv},
              {"rms_norm_eps", 1e-06},
              {"rope_scaling", nullptr},
              {"rope_theta", 1000000},
              {"sliding_window", nullptr},
              {"tie_word_embeddings", true},
              {"torch_dtype", "bfloat16"},
              {"use_cache", true},
              {"use_sliding_window", false},
              {"vocab_size", 151936}};
}

Json llama_config(int64_t hidden, int64_t inter, int64_t layers, int64_t heads, int64_t kv, int64_t head_dim) {
  return Json{{"architectures", {"LlamaForCausalLM"}},
              {"attention_bias", false},
              {"attention_dropout", 0.0},
              {"bos_token_id", 128000},
              {"eos_token_id", {128001, 128008, 128009}},
              {"head_dim", head_dim},
              {"hidden_act", "silu"},
              {"hidden_size", hidden},
              {"initializer_range", 0.02},
              {"intermediate_size", inter},
              {"max_position_embeddings", 131072},
              {"mlp_bias", false},
              {"model_type", "llama"},
              {"num_attention_heads", heads},
              {"num_hidden_layers", layers},
              {"num_key_value_heads", kv},
              {"pretraining_tp", 1},
              {"rms_norm_eps", 1e-05},
              {"rope_scaling",
               {{"factor", 32.0},
                {"high_freq_factor", 4.0},
                {"low_freq_factor", 1.0},
                {"original_max_position_embeddings", 8192},
                {"rope_type", "llama3"}}},
              {"rope_theta", 500000.0},
              {"tie_word_embeddings", true},
              {"torch_dtype", "bfloat16"},
              {"use_cache", true},
              {"vocab_size", 128256}};
}

Json qwen3_generation() {
  return Json{{"bos_token_id", 151643}, {"eos_token_id", {151645, 151643}}, {"pad_token_id", 151643}};
}
Json llama_generation() {
  return Json{{"bos_token_id", 128000}, {"eos_token_id", {128001, 128008, 128009}}};
}

}  // namespace

const std::vector<SynthPreset>& synth_presets() {
  static const std::vector<SynthPreset> presets = {
      {"tiny-qwen3", "Qwen3 architecture, real vocabulary, 2 layers of width 64 (the demo model)",
       qwen3_config(64, 192, 2, 4, 2, 32), qwen3_generation()},
      {"tiny-llama", "Llama 3 architecture with llama3 rope scaling, real vocabulary, 2 layers of width 64",
       llama_config(64, 192, 2, 4, 1, 32), llama_generation()},
      {"qwen3-1.7b", "Qwen/Qwen3-1.7B shapes (published config.json)", qwen3_config(2048, 6144, 28, 16, 8, 128),
       qwen3_generation()},
      {"qwen3-4b", "Qwen/Qwen3-4B shapes (published config.json)", qwen3_config(2560, 9728, 36, 32, 8, 128),
       qwen3_generation()},
      {"llama-3.2-1b", "meta-llama/Llama-3.2-1B-Instruct shapes (published config.json)",
       llama_config(2048, 8192, 16, 32, 8, 64), llama_generation()},
  };
  return presets;
}

const SynthPreset* find_synth_preset(const std::string& name) {
  for (const auto& p : synth_presets())
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace ac
