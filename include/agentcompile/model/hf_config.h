#pragma once
// A Hugging Face config.json (+ generation_config.json) for the decoder-only architectures this
// project runs: llama, qwen2, qwen3, mistral, and the mixture-of-experts qwen3_moe and mixtral.
// Both rope spellings are accepted: transformers 4.x (`rope_theta`, `rope_scaling`) and 5.x
// (`rope_parameters` holding `rope_theta` and the scaling).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agentcompile/core/dtype.h"
#include "agentcompile/core/fs.h"
#include "agentcompile/core/json.h"

namespace ac {

enum class Arch { Llama, Qwen2, Qwen3, Mistral, Qwen3Moe, Mixtral };
std::string_view arch_name(Arch a);  // the HF model_type

enum class RopeType { Default, Linear, Llama3 };
std::string_view rope_type_name(RopeType t);

struct RopeConfig {
  double theta = 10000.0;
  RopeType type = RopeType::Default;
  double factor = 1.0;                            // linear, llama3
  double low_freq_factor = 1.0;                   // llama3
  double high_freq_factor = 4.0;                  // llama3
  int64_t original_max_position_embeddings = 0;  // llama3
};

// The sparse MLP of a mixture-of-experts model (qwen3_moe, mixtral): per sparse layer a router
// [experts, hidden] picks experts_per_token of `experts` SwiGLU experts of width
// expert_intermediate. qwen3_moe renormalises the picked probabilities only with norm_topk_prob
// (HF default false); mixtral always does. Layer i is sparse when experts > 0, i is not in
// mlp_only_layers and (i + 1) % decoder_sparse_step == 0 (Qwen3MoeDecoderLayer); mixtral: every
// layer. Dense layers keep the MLP of width intermediate_size.
struct MoeConfig {
  int64_t experts = 0;  // 0: a dense model
  int64_t experts_per_token = 0;
  int64_t expert_intermediate = 0;
  bool norm_topk_prob = false;
  int64_t decoder_sparse_step = 1;
  std::vector<int64_t> mlp_only_layers;
};

struct ModelConfig {
  Arch arch = Arch::Llama;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t vocab_size = 0;
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  RopeConfig rope;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // q/k/v (and o for llama/qwen3) projections carry a bias
  bool o_proj_bias = false;
  bool mlp_bias = false;
  bool qk_norm = false;         // qwen3: RMSNorm over head_dim on q and k before rope
  // mistral (and qwen with use_sliding_window): the usable context is capped to it
  std::optional<int64_t> sliding_window;
  int64_t attention_window = 0;  // mixtral: a query attends to its last attention_window positions (0: all)
  MoeConfig moe;
  DType torch_dtype = DType::BF16;
  std::optional<int64_t> bos_token_id;
  std::vector<int64_t> eos_token_ids;  // generation_config.json first, then config.json

  int64_t q_dim() const { return num_heads * head_dim; }
  int64_t kv_dim() const { return num_kv_heads * head_dim; }
  int64_t context_limit() const;  // the longest sequence (prompt + generated) allowed
  bool is_moe() const { return moe.experts > 0; }
  bool is_sparse_layer(int64_t layer) const;  // its MLP is the experts' (see MoeConfig)
  int64_t sparse_layers() const;
};

// Limits applied to untrusted configs, so a hostile file cannot ask for absurd allocations.
struct ConfigLimits {
  static constexpr int64_t kMaxHidden = 65536;
  static constexpr int64_t kMaxIntermediate = 262144;
  static constexpr int64_t kMaxLayers = 512;
  static constexpr int64_t kMaxHeads = 1024;
  static constexpr int64_t kMaxHeadDim = 1024;
  static constexpr int64_t kMaxVocab = 4'000'000;
  static constexpr int64_t kMaxPositions = 16'777'216;
  static constexpr int64_t kMaxExperts = 4096;
};

// Parses config.json content; errors read "<subject>: <field>: <what is wrong>".
ModelConfig parse_model_config(const Json& j, const std::string& subject);
// Reads <dir>/config.json and, when present, <dir>/generation_config.json (eos ids).
ModelConfig load_model_config(const fs::path& dir);
// Applies generation_config.json content to cfg (eos_token_id one or a list, bos_token_id).
void apply_generation_config(ModelConfig& cfg, const Json& j, const std::string& subject);

}  // namespace ac
