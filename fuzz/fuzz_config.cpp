// libFuzzer target: config.json and generation_config.json. The input is read by the strict JSON
// parser, then as a config.json and, separately, as a generation_config.json applied to a fixed
// valid config. An accepted config must be self-consistent and its tensor list computable
// without overflow.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "agentcompile/model/architecture.h"
#include "agentcompile/model/hf_config.h"
#include "fuzz_common.h"

namespace {

const ac::ModelConfig& fixed_config() {
  static const ac::ModelConfig c = ac::parse_model_config(
      ac::Json{{"model_type", "qwen3"}, {"hidden_size", 64}, {"intermediate_size", 128}, {"num_hidden_layers", 2},
               {"num_attention_heads", 4}, {"num_key_value_heads", 2}, {"head_dim", 16}, {"vocab_size", 1000},
               {"max_position_embeddings", 512}},
      "fixed");
  return c;
}

void check_config(const ac::ModelConfig& c) {
  using ac::fuzz::require;
  using L = ac::ConfigLimits;
  require(c.hidden_size >= 1 && c.hidden_size <= L::kMaxHidden, "hidden_size in range");
  require(c.num_layers >= 1 && c.num_layers <= L::kMaxLayers, "layers in range");
  require(c.num_heads >= 1 && c.num_kv_heads >= 1 && c.num_heads % c.num_kv_heads == 0, "GQA divisible");
  require(c.head_dim >= 2 && c.head_dim % 2 == 0 && c.head_dim <= L::kMaxHeadDim, "head_dim even and bounded");
  require(c.vocab_size >= 1 && c.vocab_size <= L::kMaxVocab, "vocab in range");
  require(c.context_limit() >= 1, "context limit positive");
  require(c.rms_norm_eps > 0 && c.rms_norm_eps < 1, "eps in (0, 1)");
  require(c.rope.theta > 1 && c.rope.factor >= 1, "rope sane");
  for (int64_t id : c.eos_token_ids) require(id >= 0 && id < c.vocab_size, "eos inside the vocabulary");
  if (c.bos_token_id) require(*c.bos_token_id >= 0 && *c.bos_token_id < c.vocab_size, "bos inside the vocabulary");
  // The tensor list and its total size: bounded configs must not overflow int64.
  int64_t total = 0;
  for (const auto& t : ac::expected_tensors(c)) {
    int64_t n = 1;
    for (int64_t d : t.shape) {
      require(d >= 1, "positive dimension in " + t.name);
      require(!__builtin_mul_overflow(n, d, &n), "element count overflows in " + t.name);
    }
    require(!__builtin_add_overflow(total, n, &total), "parameter total overflows");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ac;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  Json j;
  try {
    j = parse_json_strict(text, "config.json");
  } catch (const Error& e) {
    fuzz::check_rejection(e);
    return 0;
  }
  try {
    check_config(parse_model_config(j, "config.json"));
  } catch (const Error& e) {
    fuzz::check_rejection(e);
  }
  try {
    ModelConfig c = fixed_config();
    apply_generation_config(c, j, "generation_config.json");
    check_config(c);
  } catch (const Error& e) {
    fuzz::check_rejection(e);
  }
  return 0;
}
