#include "agentcompile/model/hf_config.h"

#include <algorithm>

#include "agentcompile/core/error.h"

namespace ac {

namespace {
constexpr size_t kMaxConfigBytes = 4u << 20;

// One token id or a list of them (eos may be several), each inside the vocabulary.
std::vector<int64_t> parse_token_ids(const Json& v, const std::string& subject, const std::string& key,
                                     int64_t vocab_size) {
  std::vector<int64_t> ids;
  auto one = [&](const Json& x) {
    auto id = json_as_int(x, 0, ConfigLimits::kMaxVocab - 1);
    if (!id) throw_input(subject, key + ": " + json_brief(x) + " is not a token id");
    if (*id >= vocab_size)
      throw_input(subject, key + ": " + std::to_string(*id) + " is outside the vocabulary (" +
                               std::to_string(vocab_size) + ")");
    ids.push_back(*id);
  };
  if (v.is_array()) {
    if (v.size() > 64) throw_input(subject, key + ": more than 64 ids");
    for (const Json& x : v) one(x);
  } else {
    one(v);
  }
  return ids;
}

// bos_token_id: absent or null means none; otherwise exactly one id (a one-element list is
// accepted, as some exporters write one).
std::optional<int64_t> parse_bos(const Json& j, const std::string& subject, int64_t vocab_size) {
  if (!j.contains("bos_token_id") || j.at("bos_token_id").is_null()) return std::nullopt;
  const Json& v = j.at("bos_token_id");
  auto ids = parse_token_ids(v, subject, "bos_token_id", vocab_size);
  if (ids.size() != 1) throw_input(subject, "bos_token_id: expected one token id, got " + json_brief(v));
  return ids[0];
}

// Reads the scaling part of a rope description (4.x rope_scaling or 5.x rope_parameters).
void parse_rope_scaling(const Json& r, const std::string& subject, const std::string& field, RopeConfig& rope) {
  const std::string where = subject + ": " + field;
  if (!r.is_object()) throw_input(where, "expected an object");
  std::optional<std::string> type = json_opt_string(r, where, "rope_type");
  if (!type) type = json_opt_string(r, where, "type");
  if (!type || *type == "default") {
    rope.type = RopeType::Default;
    return;
  }
  if (*type == "linear") {
    rope.type = RopeType::Linear;
  } else if (*type == "llama3") {
    rope.type = RopeType::Llama3;
    rope.low_freq_factor = json_number(r, where, "low_freq_factor");
    rope.high_freq_factor = json_number(r, where, "high_freq_factor");
    rope.original_max_position_embeddings =
        json_int(r, where, "original_max_position_embeddings", 1, ConfigLimits::kMaxPositions);
    if (!(rope.low_freq_factor > 0 && rope.high_freq_factor > rope.low_freq_factor))
      throw_input(where, "need 0 < low_freq_factor < high_freq_factor");
  } else {
    throw_input(where, "rope_type: " + json_quote(*type) + " is not supported (default, linear, llama3)");
  }
  rope.factor = json_number(r, where, "factor");
  if (!(rope.factor >= 1.0 && rope.factor <= 1024.0)) throw_input(where, "factor: must be in [1, 1024]");
}

// The experts of qwen3_moe (num_experts, moe_intermediate_size, norm_topk_prob, decoder_sparse_step,
// mlp_only_layers) or mixtral (num_local_experts; the experts are intermediate_size wide, every
// layer is sparse, the picked probabilities are always renormalised). Fields that fix tensor
// shapes are required; the behaviour flags default as in transformers.
MoeConfig parse_moe(const Json& j, const std::string& subject, const ModelConfig& c) {
  MoeConfig m;
  const bool mixtral = c.arch == Arch::Mixtral;
  const std::string experts_key = mixtral ? "num_local_experts" : "num_experts";
  m.experts = json_int(j, subject, experts_key, mixtral ? 1 : 0, ConfigLimits::kMaxExperts);
  if (m.experts == 0) return m;  // qwen3_moe without experts: every layer dense (as HF builds it)
  m.experts_per_token = json_int(j, subject, "num_experts_per_tok", 1, ConfigLimits::kMaxExperts);
  if (m.experts_per_token > m.experts)
    throw_input(subject, "num_experts_per_tok: " + std::to_string(m.experts_per_token) + " is more than " + experts_key +
                             " (" + std::to_string(m.experts) + ")");
  if (mixtral) {
    m.expert_intermediate = c.intermediate_size;
    m.norm_topk_prob = true;
    return m;
  }
  m.expert_intermediate = json_int(j, subject, "moe_intermediate_size", 1, ConfigLimits::kMaxIntermediate);
  m.norm_topk_prob = json_opt_bool(j, subject, "norm_topk_prob").value_or(false);
  m.decoder_sparse_step = json_opt_int(j, subject, "decoder_sparse_step", 1, 1'000'000).value_or(1);
  if (j.contains("mlp_only_layers") && !j.at("mlp_only_layers").is_null()) {
    const Json& v = j.at("mlp_only_layers");
    if (!v.is_array()) throw_input(subject, "mlp_only_layers: expected a list of layer indices, got " + json_brief(v));
    if (v.size() > size_t(ConfigLimits::kMaxLayers))
      throw_input(subject, "mlp_only_layers: more than " + std::to_string(ConfigLimits::kMaxLayers) + " entries");
    for (const Json& x : v) {
      auto id = json_as_int(x, 0, ConfigLimits::kMaxLayers - 1);
      if (!id) throw_input(subject, "mlp_only_layers: " + json_brief(x) + " is not a layer index");
      m.mlp_only_layers.push_back(*id);  // an index past the last layer selects nothing, as in HF
    }
  }
  return m;
}
}  // namespace

std::string_view arch_name(Arch a) {
  switch (a) {
    case Arch::Llama: return "llama";
    case Arch::Qwen2: return "qwen2";
    case Arch::Qwen3: return "qwen3";
    case Arch::Mistral: return "mistral";
    case Arch::Qwen3Moe: return "qwen3_moe";
    case Arch::Mixtral: return "mixtral";
  }
  return "?";
}

std::string_view rope_type_name(RopeType t) {
  switch (t) {
    case RopeType::Default: return "default";
    case RopeType::Linear: return "linear";
    case RopeType::Llama3: return "llama3";
  }
  return "?";
}

int64_t ModelConfig::context_limit() const {
  int64_t n = max_position_embeddings;
  if (sliding_window) n = std::min(n, *sliding_window);
  return n;
}

bool ModelConfig::is_sparse_layer(int64_t layer) const {
  if (moe.experts == 0) return false;
  const auto& dense = moe.mlp_only_layers;
  if (std::find(dense.begin(), dense.end(), layer) != dense.end()) return false;
  return (layer + 1) % moe.decoder_sparse_step == 0;
}

int64_t ModelConfig::sparse_layers() const {
  int64_t n = 0;
  for (int64_t i = 0; i < num_layers; ++i) n += is_sparse_layer(i);
  return n;
}

ModelConfig parse_model_config(const Json& j, const std::string& subject) {
  if (!j.is_object()) throw_input(subject, "expected a JSON object");
  ModelConfig c;
  std::string mt = json_string(j, subject, "model_type");
  if (mt == "llama") c.arch = Arch::Llama;
  else if (mt == "qwen2") c.arch = Arch::Qwen2;
  else if (mt == "qwen3") c.arch = Arch::Qwen3;
  else if (mt == "mistral") c.arch = Arch::Mistral;
  else if (mt == "qwen3_moe") c.arch = Arch::Qwen3Moe;
  else if (mt == "mixtral") c.arch = Arch::Mixtral;
  else
    throw_input(subject, "model_type: " + json_quote(mt) +
                             " is not supported (llama, qwen2, qwen3, mistral, qwen3_moe, mixtral)");

  c.hidden_size = json_int(j, subject, "hidden_size", 1, ConfigLimits::kMaxHidden);
  c.intermediate_size = json_int(j, subject, "intermediate_size", 1, ConfigLimits::kMaxIntermediate);
  c.num_layers = json_int(j, subject, "num_hidden_layers", 1, ConfigLimits::kMaxLayers);
  c.num_heads = json_int(j, subject, "num_attention_heads", 1, ConfigLimits::kMaxHeads);
  c.num_kv_heads = json_opt_int(j, subject, "num_key_value_heads", 1, ConfigLimits::kMaxHeads).value_or(c.num_heads);
  if (c.num_heads % c.num_kv_heads != 0)
    throw_input(subject, "num_key_value_heads: " + std::to_string(c.num_kv_heads) +
                             " does not divide num_attention_heads " + std::to_string(c.num_heads));
  if (auto hd = json_opt_int(j, subject, "head_dim", 1, ConfigLimits::kMaxHeadDim)) {
    c.head_dim = *hd;
  } else {
    if (c.hidden_size % c.num_heads != 0)
      throw_input(subject, "head_dim: missing, and hidden_size " + std::to_string(c.hidden_size) +
                               " is not divisible by num_attention_heads " + std::to_string(c.num_heads));
    c.head_dim = c.hidden_size / c.num_heads;
  }
  if (c.head_dim % 2 != 0) throw_input(subject, "head_dim: " + std::to_string(c.head_dim) + " is odd (rope needs pairs)");
  c.vocab_size = json_int(j, subject, "vocab_size", 1, ConfigLimits::kMaxVocab);
  c.max_position_embeddings = json_int(j, subject, "max_position_embeddings", 1, ConfigLimits::kMaxPositions);
  c.rms_norm_eps = json_opt_number(j, subject, "rms_norm_eps").value_or(1e-6);
  if (!(c.rms_norm_eps > 0 && c.rms_norm_eps < 1)) throw_input(subject, "rms_norm_eps: must be in (0, 1)");

  std::string act = json_opt_string(j, subject, "hidden_act").value_or("silu");
  if (act != "silu") throw_input(subject, "hidden_act: " + json_quote(act) + " is not supported (silu)");

  // Rope: 5.x rope_parameters, else 4.x rope_theta + rope_scaling.
  if (j.contains("rope_parameters") && !j.at("rope_parameters").is_null()) {
    const Json& rp = j.at("rope_parameters");
    if (!rp.is_object()) throw_input(subject, "rope_parameters: expected an object");
    // Per-layer-type rope parameters ({"full_attention": {...}}) are not used by these architectures.
    c.rope.theta = json_number(rp, subject + ": rope_parameters", "rope_theta");
    parse_rope_scaling(rp, subject, "rope_parameters", c.rope);
  } else {
    c.rope.theta = json_opt_number(j, subject, "rope_theta").value_or(10000.0);
    if (j.contains("rope_scaling") && !j.at("rope_scaling").is_null())
      parse_rope_scaling(j.at("rope_scaling"), subject, "rope_scaling", c.rope);
  }
  if (!(c.rope.theta > 1.0 && c.rope.theta < 1e12)) throw_input(subject, "rope_theta: must be in (1, 1e12)");

  // These configs all default tie_word_embeddings to false (PretrainedConfig's own default is true).
  c.tie_word_embeddings = json_opt_bool(j, subject, "tie_word_embeddings").value_or(false);
  bool attention_bias = json_opt_bool(j, subject, "attention_bias").value_or(false);
  switch (c.arch) {
    case Arch::Qwen2:  // q/k/v always carry a bias, o_proj never (Qwen2Attention)
      c.attention_bias = true;
      c.o_proj_bias = false;
      break;
    case Arch::Qwen3:
    case Arch::Qwen3Moe:  // Qwen3MoeAttention is Qwen3Attention
      c.attention_bias = attention_bias;
      c.o_proj_bias = attention_bias;
      c.qk_norm = true;
      break;
    case Arch::Llama:
      c.attention_bias = attention_bias;
      c.o_proj_bias = attention_bias;
      c.mlp_bias = json_opt_bool(j, subject, "mlp_bias").value_or(false);
      break;
    case Arch::Mistral:
    case Arch::Mixtral:
      c.attention_bias = false;
      break;
  }
  // Sliding-window attention: qwen2/qwen3/qwen3_moe only when use_sliding_window is true; mistral
  // when set (these cap the context to it); mixtral when set, attended as a window (a window as
  // long as the context changes nothing).
  if (c.arch == Arch::Mixtral) {
    const int64_t w = json_opt_int(j, subject, "sliding_window", 1, ConfigLimits::kMaxPositions).value_or(0);
    c.attention_window = w < c.max_position_embeddings ? w : 0;
  } else {
    bool use_sw = c.arch == Arch::Mistral || json_opt_bool(j, subject, "use_sliding_window").value_or(false);
    if (use_sw) c.sliding_window = json_opt_int(j, subject, "sliding_window", 1, ConfigLimits::kMaxPositions);
  }
  if (c.arch == Arch::Qwen3Moe || c.arch == Arch::Mixtral) c.moe = parse_moe(j, subject, c);

  // transformers 5.x writes "dtype" where 4.x wrote "torch_dtype".
  const char* dtype_key = j.contains("torch_dtype") ? "torch_dtype" : "dtype";
  if (auto td = json_opt_string(j, subject, dtype_key)) {
    auto d = dtype_from_user_name(*td);
    if (!d) throw_input(subject, std::string(dtype_key) + ": " + json_quote(*td) + " is not supported (bfloat16, float16, float32)");
    c.torch_dtype = *d;
  }
  c.bos_token_id = parse_bos(j, subject, c.vocab_size);
  if (j.contains("eos_token_id") && !j.at("eos_token_id").is_null())
    c.eos_token_ids = parse_token_ids(j.at("eos_token_id"), subject, "eos_token_id", c.vocab_size);
  return c;
}

void apply_generation_config(ModelConfig& cfg, const Json& j, const std::string& subject) {
  if (!j.is_object()) throw_input(subject, "expected a JSON object");
  if (j.contains("eos_token_id") && !j.at("eos_token_id").is_null())
    cfg.eos_token_ids = parse_token_ids(j.at("eos_token_id"), subject, "eos_token_id", cfg.vocab_size);
  if (auto bos = parse_bos(j, subject, cfg.vocab_size)) cfg.bos_token_id = bos;
}

ModelConfig load_model_config(const fs::path& dir) {
  fs::path path = dir / "config.json";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw_input(dir.string(), "not a model folder");
  if (!fs::exists(path, ec)) throw_input(path.string(), "missing (a model folder needs config.json)");
  ModelConfig cfg = parse_model_config(parse_json_strict(read_file(path, kMaxConfigBytes), path.string()), path.string());
  fs::path gen = dir / "generation_config.json";
  if (fs::exists(gen, ec))
    apply_generation_config(cfg, parse_json_strict(read_file(gen, kMaxConfigBytes), gen.string()), gen.string());
  return cfg;
}

}  // namespace ac
