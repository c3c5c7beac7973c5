// The synth-model presets as data. The real ones carry the published config.json values of
// Qwen/Qwen3-1.7B, Qwen/Qwen3-4B, meta-llama/Llama-3.2-1B-Instruct and Qwen/Qwen3-30B-A3B; the tiny
// ones keep the real vocabularies (so the real tokenizers work with them) and shrink everything
// else, with head_dim != hidden/heads and GQA so those paths are exercised (the mixture-of-experts
// ones also dense layers among sparse ones, and a sliding window shorter than a test's sequence).
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

// Qwen3-MoE: qwen3 attention, `experts` experts of width moe_inter per sparse layer.
Json qwen3_moe_config(int64_t hidden, int64_t inter, int64_t layers, int64_t heads, int64_t kv, int64_t head_dim,
                      int64_t experts, int64_t top_k, int64_t moe_inter, Json mlp_only_layers) {
  Json c = qwen3_config(hidden, inter, layers, heads, kv, head_dim);
  c["architectures"] = {"Qwen3MoeForCausalLM"};
  c["model_type"] = "qwen3_moe";
  c["tie_word_embeddings"] = false;
  c["decoder_sparse_step"] = 1;
  c["mlp_only_layers"] = std::move(mlp_only_layers);
  c["moe_intermediate_size"] = moe_inter;
  c["norm_topk_prob"] = true;
  c["num_experts"] = experts;
  c["num_experts_per_tok"] = top_k;
  c["output_router_logits"] = false;
  c["router_aux_loss_coef"] = 0.001;
  return c;
}

// Mixtral (mistralai/Mixtral-8x7B-v0.1's config.json form; its vocabulary of 32000 ids).
Json mixtral_config(int64_t hidden, int64_t inter, int64_t layers, int64_t heads, int64_t kv, int64_t experts,
                    int64_t top_k, Json sliding_window) {
  return Json{{"architectures", {"MixtralForCausalLM"}},
              {"attention_dropout", 0.0},
              {"bos_token_id", 1},
              {"eos_token_id", 2},
              {"hidden_act", "silu"},
              {"hidden_size", hidden},
              {"initializer_range", 0.02},
              {"intermediate_size", inter},
              {"max_position_embeddings", 32768},
              {"model_type", "mixtral"},
              {"num_attention_heads", heads},
              {"num_experts_per_tok", top_k},
              {"num_hidden_layers", layers},
              {"num_key_value_heads", kv},
              {"num_local_experts", experts},
              {"output_router_logits", false},
              {"rms_norm_eps", 1e-05},
              {"rope_theta", 1000000.0},
              {"router_aux_loss_coef", 0.02},
              {"router_jitter_noise", 0.0},
              {"sliding_window", std::move(sliding_window)},
              {"tie_word_embeddings", false},
              {"torch_dtype", "bfloat16"},
              {"use_cache", true},
              {"vocab_size", 32000}};
}

Json qwen3_generation() {
  return Json{{"bos_token_id", 151643}, {"eos_token_id", {151645, 151643}}, {"pad_token_id", 151643}};
}
Json llama_generation() {
  return Json{{"bos_token_id", 128000}, {"eos_token_id", {128001, 128008, 128009}}};
}
Json mixtral_generation() { return Json{{"bos_token_id", 1}, {"eos_token_id", 2}}; }

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
      {"tiny-qwen3-moe",
       "Qwen3-MoE architecture, real vocabulary, 4 layers of width 64: 8 experts (2 per token) in layers 0, 2 and 3, "
       "layer 1 dense (mlp_only_layers)",
       qwen3_moe_config(64, 128, 4, 4, 2, 32, 8, 2, 32, Json::array({1})), qwen3_generation()},
      {"qwen3-30b-a3b", "Qwen/Qwen3-30B-A3B shapes (published config.json; about 61 GB of bf16 weights)",
       qwen3_moe_config(2048, 6144, 48, 32, 4, 128, 128, 8, 768, Json::array()), qwen3_generation()},
      {"tiny-mixtral",
       "Mixtral architecture, its vocabulary size, 2 layers of width 64: 4 experts (2 per token), sliding window of 16",
       mixtral_config(64, 96, 2, 4, 2, 4, 2, 16), mixtral_generation()},
  };
  return presets;
}

const SynthPreset* find_synth_preset(const std::string& name) {
  for (const auto& p : synth_presets())
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace ac
