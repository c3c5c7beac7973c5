// config.json and generation_config.json: both transformers spellings of rope, derived and
// explicit head_dim, GQA, per-architecture biases, token ids, and every way a field can be wrong.
// Expected values are the published configs' numbers, written out here.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "agentcompile/model/hf_config.h"
#include "model_test_util.h"

using namespace ac;
using namespace ac::test;

namespace {

// meta-llama/Llama-3.2-1B-Instruct config.json as transformers 4.x writes it.
const char* kLlama32_4x = R"({
  "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009], "head_dim": 64, "hidden_act": "silu",
  "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 8192, "max_position_embeddings": 131072,
  "mlp_bias": false, "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 16,
  "num_key_value_heads": 8, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
  "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                   "original_max_position_embeddings": 8192, "rope_type": "llama3"},
  "rope_theta": 500000.0, "tie_word_embeddings": true, "torch_dtype": "bfloat16", "use_cache": true,
  "vocab_size": 128256})";

// The same model as transformers 5.x writes it: rope_parameters holds theta and the scaling.
const char* kLlama32_5x = R"({
  "architectures": ["LlamaForCausalLM"], "attention_bias": false, "bos_token_id": 128000,
  "eos_token_id": [128001, 128008, 128009], "head_dim": 64, "hidden_act": "silu", "hidden_size": 2048,
  "intermediate_size": 8192, "max_position_embeddings": 131072, "mlp_bias": false, "model_type": "llama",
  "num_attention_heads": 32, "num_hidden_layers": 16, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
  "rope_parameters": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                      "original_max_position_embeddings": 8192, "rope_theta": 500000.0, "rope_type": "llama3"},
  "tie_word_embeddings": true, "dtype": "bfloat16", "vocab_size": 128256})";

// Qwen/Qwen3-1.7B config.json (4.x).
const char* kQwen3_17b = R"({
  "architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu", "hidden_size": 2048,
  "initializer_range": 0.02, "intermediate_size": 6144, "max_position_embeddings": 40960,
  "max_window_layers": 28, "model_type": "qwen3", "num_attention_heads": 16, "num_hidden_layers": 28,
  "num_key_value_heads": 8, "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000,
  "sliding_window": null, "tie_word_embeddings": true, "torch_dtype": "bfloat16", "use_cache": true,
  "use_sliding_window": false, "vocab_size": 151936})";

ModelConfig cfg_of(const char* text) { return parse_model_config(parse_json_strict(text, "config.json"), "config.json"); }
ModelConfig cfg_of(const Json& j) { return parse_model_config(j, "config.json"); }

Json base() { return tiny_config(TinyShape{}); }

std::string reject(const Json& j, std::initializer_list<std::string> needles) {
  return expect_bad_input([&] { cfg_of(j); }, needles);
}

}  // namespace

TEST(HfConfig, Llama32Transformers4) {
  ModelConfig c = cfg_of(kLlama32_4x);
  EXPECT_EQ(c.arch, Arch::Llama);
  EXPECT_EQ(c.hidden_size, 2048);
  EXPECT_EQ(c.intermediate_size, 8192);
  EXPECT_EQ(c.num_layers, 16);
  EXPECT_EQ(c.num_heads, 32);
  EXPECT_EQ(c.num_kv_heads, 8);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.q_dim(), 2048);
  EXPECT_EQ(c.kv_dim(), 512);
  EXPECT_EQ(c.vocab_size, 128256);
  EXPECT_EQ(c.max_position_embeddings, 131072);
  EXPECT_EQ(c.context_limit(), 131072);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-5);
  EXPECT_DOUBLE_EQ(c.rope.theta, 500000.0);
  EXPECT_EQ(c.rope.type, RopeType::Llama3);
  EXPECT_DOUBLE_EQ(c.rope.factor, 32.0);
  EXPECT_DOUBLE_EQ(c.rope.low_freq_factor, 1.0);
  EXPECT_DOUBLE_EQ(c.rope.high_freq_factor, 4.0);
  EXPECT_EQ(c.rope.original_max_position_embeddings, 8192);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_FALSE(c.attention_bias);
  EXPECT_FALSE(c.o_proj_bias);
  EXPECT_FALSE(c.mlp_bias);
  EXPECT_FALSE(c.qk_norm);
  EXPECT_FALSE(c.sliding_window.has_value());
  EXPECT_EQ(c.torch_dtype, DType::BF16);
  EXPECT_EQ(c.bos_token_id, std::optional<int64_t>(128000));
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{128001, 128008, 128009}));
}

TEST(HfConfig, Transformers5RopeParametersMeanTheSame) {
  ModelConfig a = cfg_of(kLlama32_4x), b = cfg_of(kLlama32_5x);
  EXPECT_EQ(b.rope.type, RopeType::Llama3);
  EXPECT_DOUBLE_EQ(b.rope.theta, a.rope.theta);
  EXPECT_DOUBLE_EQ(b.rope.factor, a.rope.factor);
  EXPECT_DOUBLE_EQ(b.rope.low_freq_factor, a.rope.low_freq_factor);
  EXPECT_DOUBLE_EQ(b.rope.high_freq_factor, a.rope.high_freq_factor);
  EXPECT_EQ(b.rope.original_max_position_embeddings, a.rope.original_max_position_embeddings);
  EXPECT_EQ(b.torch_dtype, DType::BF16);  // "dtype" is 5.x's spelling of torch_dtype
  EXPECT_EQ(b.head_dim, a.head_dim);

  Json q = parse_json_strict(kQwen3_17b, "c");
  q.erase("rope_theta");
  q.erase("rope_scaling");
  q["rope_parameters"] = {{"rope_theta", 1000000.0}, {"rope_type", "default"}};
  ModelConfig c = cfg_of(q);
  EXPECT_DOUBLE_EQ(c.rope.theta, 1e6);
  EXPECT_EQ(c.rope.type, RopeType::Default);
  // 4.x "type" (older spelling of rope_type) for linear scaling.
  Json l = base();
  l["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};
  EXPECT_EQ(cfg_of(l).rope.type, RopeType::Linear);
  EXPECT_DOUBLE_EQ(cfg_of(l).rope.factor, 2.0);
  l["rope_scaling"] = {{"rope_type", "default"}};
  EXPECT_EQ(cfg_of(l).rope.type, RopeType::Default);
  // No rope fields at all: HF's default theta.
  Json d = base();
  d.erase("rope_theta");
  EXPECT_DOUBLE_EQ(cfg_of(d).rope.theta, 10000.0);
}

TEST(HfConfig, Qwen3) {
  ModelConfig c = cfg_of(kQwen3_17b);
  EXPECT_EQ(c.arch, Arch::Qwen3);
  EXPECT_EQ(c.head_dim, 128);  // explicit, not hidden / heads (2048 / 16 = 128 here by chance)
  EXPECT_EQ(c.q_dim(), 2048);
  EXPECT_EQ(c.kv_dim(), 1024);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_FALSE(c.attention_bias);
  EXPECT_EQ(c.rope.type, RopeType::Default);
  EXPECT_DOUBLE_EQ(c.rope.theta, 1e6);
  EXPECT_FALSE(c.sliding_window.has_value());  // sliding_window null, use_sliding_window false
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{151645}));
  // Qwen3-4B style: head_dim 128 with hidden 2560 and 32 heads (hidden / heads would be 80).
  Json j = parse_json_strict(kQwen3_17b, "c");
  j["hidden_size"] = 2560;
  j["num_attention_heads"] = 32;
  EXPECT_EQ(cfg_of(j).head_dim, 128);
  EXPECT_EQ(cfg_of(j).q_dim(), 4096);
  j["attention_bias"] = true;
  EXPECT_TRUE(cfg_of(j).attention_bias);
  EXPECT_TRUE(cfg_of(j).o_proj_bias);
}

TEST(HfConfig, ArchitectureSpecificFlags) {
  Json j = base();
  j["model_type"] = "qwen2";
  j["attention_bias"] = false;  // Qwen2 ignores it: q/k/v always have a bias, o_proj never
  ModelConfig q2 = cfg_of(j);
  EXPECT_TRUE(q2.attention_bias);
  EXPECT_FALSE(q2.o_proj_bias);
  EXPECT_FALSE(q2.qk_norm);
  j["use_sliding_window"] = true;
  j["sliding_window"] = 32;
  EXPECT_EQ(cfg_of(j).sliding_window, std::optional<int64_t>(32));
  EXPECT_EQ(cfg_of(j).context_limit(), 32);
  j["use_sliding_window"] = false;
  EXPECT_FALSE(cfg_of(j).sliding_window.has_value());

  Json l = base();
  l["attention_bias"] = true;
  l["mlp_bias"] = true;
  ModelConfig lc = cfg_of(l);
  EXPECT_TRUE(lc.attention_bias);
  EXPECT_TRUE(lc.o_proj_bias);
  EXPECT_TRUE(lc.mlp_bias);

  Json m = base();
  m["model_type"] = "mistral";
  m["sliding_window"] = 4096;
  m["max_position_embeddings"] = 32768;
  ModelConfig mc = cfg_of(m);
  EXPECT_EQ(mc.arch, Arch::Mistral);
  EXPECT_EQ(mc.context_limit(), 4096);
  m["sliding_window"] = nullptr;
  EXPECT_EQ(cfg_of(m).context_limit(), 32768);
}

TEST(HfConfig, HeadDimDerivedOrExplicit) {
  Json j = base();
  j.erase("head_dim");
  j["hidden_size"] = 12;
  j["num_attention_heads"] = 3;
  j["num_key_value_heads"] = 1;
  EXPECT_EQ(cfg_of(j).head_dim, 4);
  j["head_dim"] = nullptr;  // null means absent
  EXPECT_EQ(cfg_of(j).head_dim, 4);
  j["head_dim"] = 6;
  EXPECT_EQ(cfg_of(j).head_dim, 6);
  EXPECT_EQ(cfg_of(j).q_dim(), 18);
  j.erase("head_dim");
  j["num_attention_heads"] = 5;
  reject(j, {"config.json", "head_dim", "not divisible by num_attention_heads 5"});
  j["head_dim"] = 7;
  reject(j, {"head_dim", "odd"});
}

TEST(HfConfig, GroupedQueryAttention) {
  Json j = base();
  j["num_attention_heads"] = 8;
  j["head_dim"] = 2;
  for (int kv : {1, 2, 4, 8}) {
    j["num_key_value_heads"] = kv;
    EXPECT_EQ(cfg_of(j).num_kv_heads, kv);
    EXPECT_EQ(cfg_of(j).kv_dim(), 2 * kv);
  }
  for (int kv : {3, 5, 6, 7, 16}) {
    j["num_key_value_heads"] = kv;
    reject(j, {"config.json", "num_key_value_heads: " + std::to_string(kv), "does not divide num_attention_heads 8"});
  }
  j.erase("num_key_value_heads");  // absent: multi-head attention
  EXPECT_EQ(cfg_of(j).num_kv_heads, 8);
}

TEST(HfConfig, MissingRequiredFieldsAreNamed) {
  for (const char* key : {"model_type", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                          "vocab_size", "max_position_embeddings"}) {
    Json j = base();
    j.erase(key);
    reject(j, {"config.json", std::string(key) + ": missing"});
    j[key] = nullptr;
    reject(j, {"config.json", std::string(key) + ": missing"});
  }
  reject(Json::array(), {"config.json", "expected a JSON object"});
  reject(Json("llama"), {"config.json", "expected a JSON object"});
}

TEST(HfConfig, WrongTypesAreNamed) {
  const Json wrong[] = {Json("8"), Json(true), Json(8.5), Json::array({8}), Json::object({{"v", 8}})};
  for (const char* key : {"hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                          "num_key_value_heads", "head_dim", "vocab_size", "max_position_embeddings"}) {
    for (const Json& w : wrong) {
      Json j = base();
      j[key] = w;
      reject(j, {"config.json", std::string(key) + ": expected an integer"});
    }
  }
  for (const char* key : {"rms_norm_eps", "rope_theta"}) {
    Json j = base();
    j[key] = "1e-6";
    reject(j, {"config.json", std::string(key) + ": expected a number"});
  }
  for (const char* key : {"tie_word_embeddings", "attention_bias", "mlp_bias", "use_sliding_window"}) {
    Json j = base();
    j[key] = 1;
    reject(j, {"config.json", std::string(key) + ": expected true or false"});
  }
  for (const char* key : {"model_type", "hidden_act", "torch_dtype"}) {
    Json j = base();
    j[key] = 3;
    reject(j, {"config.json", std::string(key) + ": expected a string"});
  }
}

TEST(HfConfig, UnsupportedValuesAreNamed) {
  Json j = base();
  j["model_type"] = "gpt2";
  reject(j, {"model_type: \"gpt2\" is not supported"});
  j = base();
  j["model_type"] = "llama\n\x1b[2J";  // a hostile value stays on one line
  std::string msg = reject(j, {"model_type", "\\n"});
  EXPECT_EQ(msg.find('\x1b'), std::string::npos);
  j = base();
  j["hidden_act"] = "gelu";
  reject(j, {"hidden_act: \"gelu\""});
  j = base();
  j["torch_dtype"] = "int8";
  reject(j, {"torch_dtype: \"int8\""});
  j = base();
  j.erase("torch_dtype");
  j["dtype"] = "float64";
  reject(j, {"dtype: \"float64\""});
  for (const char* t : {"float16", "float32", "bfloat16"}) {
    j["dtype"] = t;
    EXPECT_EQ(dtype_torch_name(cfg_of(j).torch_dtype), t);
  }
}

TEST(HfConfig, AbsurdSizesAreRefusedBeforeUse) {
  const std::pair<const char*, int64_t> too_big[] = {
      {"hidden_size", ConfigLimits::kMaxHidden + 1},           {"intermediate_size", ConfigLimits::kMaxIntermediate + 1},
      {"num_hidden_layers", ConfigLimits::kMaxLayers + 1},     {"num_attention_heads", ConfigLimits::kMaxHeads + 1},
      {"num_key_value_heads", ConfigLimits::kMaxHeads + 1},    {"head_dim", ConfigLimits::kMaxHeadDim + 2},
      {"vocab_size", ConfigLimits::kMaxVocab + 1},             {"max_position_embeddings", ConfigLimits::kMaxPositions + 1},
      {"hidden_size", int64_t(1) << 62},                      {"vocab_size", INT64_MAX},
  };
  for (const auto& [key, v] : too_big) {
    Json j = base();
    j[key] = v;
    reject(j, {"config.json", std::string(key) + ": " + std::to_string(v) + " is out of range"});
  }
  for (const char* key : {"hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                          "num_key_value_heads", "head_dim", "vocab_size", "max_position_embeddings"}) {
    for (int64_t v : {int64_t(0), int64_t(-1), INT64_MIN}) {
      Json j = base();
      j[key] = v;
      reject(j, {std::string(key) + ": " + std::to_string(v) + " is out of range"});
    }
    Json j = base();
    j[key] = 1e300;
    reject(j, {std::string(key) + ": expected an integer"});
  }
  Json j = base();
  j["rms_norm_eps"] = 0;
  reject(j, {"rms_norm_eps: must be in (0, 1)"});
  j["rms_norm_eps"] = 1;
  reject(j, {"rms_norm_eps"});
  j = base();
  j["rope_theta"] = 1e300;
  reject(j, {"rope_theta: must be in"});
  j["rope_theta"] = -5;
  reject(j, {"rope_theta: must be in"});
}

TEST(HfConfig, RopeScalingErrorsNameTheField) {
  auto with_scaling = [](const Json& s) {
    Json j = base();
    j["rope_scaling"] = s;
    return j;
  };
  Json l3 = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
             {"original_max_position_embeddings", 16}};
  EXPECT_EQ(cfg_of(with_scaling(l3)).rope.type, RopeType::Llama3);
  for (const char* key : {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"}) {
    Json s = l3;
    s.erase(key);
    reject(with_scaling(s), {"config.json: rope_scaling", std::string(key) + ": missing"});
    s[key] = "x";
    reject(with_scaling(s), {"config.json: rope_scaling", std::string(key) + ": expected"});
  }
  Json s = l3;
  s["low_freq_factor"] = 4.0;
  s["high_freq_factor"] = 4.0;
  reject(with_scaling(s), {"rope_scaling", "low_freq_factor < high_freq_factor"});
  s = l3;
  s["factor"] = 0.5;
  reject(with_scaling(s), {"rope_scaling", "factor: must be in [1, 1024]"});
  reject(with_scaling({{"rope_type", "yarn"}, {"factor", 4.0}}), {"rope_scaling", "rope_type: \"yarn\" is not supported"});
  reject(with_scaling({{"rope_type", "dynamic"}, {"factor", 4.0}}), {"rope_scaling", "\"dynamic\""});
  reject(with_scaling(Json("llama3")), {"rope_scaling", "expected an object"});
  reject(with_scaling(Json::array()), {"rope_scaling", "expected an object"});
  reject(with_scaling({{"rope_type", 3}}), {"rope_scaling", "rope_type: expected a string"});

  Json p = base();
  p["rope_parameters"] = {{"rope_type", "default"}};
  reject(p, {"config.json: rope_parameters", "rope_theta: missing"});
  p["rope_parameters"] = Json::array({10000.0});
  reject(p, {"rope_parameters: expected an object"});
  // Per-layer-type rope parameters (other architectures) are not silently misread.
  p["rope_parameters"] = {{"full_attention", {{"rope_theta", 1e4}, {"rope_type", "default"}}}};
  reject(p, {"rope_parameters", "rope_theta: missing"});
}

TEST(HfConfig, TokenIds) {
  Json j = base();
  j["eos_token_id"] = 3;
  EXPECT_EQ(cfg_of(j).eos_token_ids, (std::vector<int64_t>{3}));
  j["eos_token_id"] = {3, 4, 5};
  EXPECT_EQ(cfg_of(j).eos_token_ids, (std::vector<int64_t>{3, 4, 5}));
  j["eos_token_id"] = Json::array();
  EXPECT_TRUE(cfg_of(j).eos_token_ids.empty());
  j["eos_token_id"] = nullptr;
  EXPECT_TRUE(cfg_of(j).eos_token_ids.empty());
  j["eos_token_id"] = 16;  // vocab is 16
  reject(j, {"eos_token_id: 16 is outside the vocabulary (16)"});
  j["eos_token_id"] = {1, -2};
  reject(j, {"eos_token_id: -2 is not a token id"});
  j["eos_token_id"] = "</s>";
  reject(j, {"eos_token_id: \"</s>\" is not a token id"});
  j["eos_token_id"] = Json(std::vector<int>(65, 1));
  reject(j, {"eos_token_id: more than 64 ids"});

  j = base();
  j["bos_token_id"] = 1;
  EXPECT_EQ(cfg_of(j).bos_token_id, std::optional<int64_t>(1));
  j["bos_token_id"] = {1};
  EXPECT_EQ(cfg_of(j).bos_token_id, std::optional<int64_t>(1));
  j["bos_token_id"] = nullptr;
  EXPECT_FALSE(cfg_of(j).bos_token_id.has_value());
  // Regression: an empty list used to escape as std::out_of_range (an internal error, exit 1).
  j["bos_token_id"] = Json::array();
  reject(j, {"config.json", "bos_token_id: expected one token id, got []"});
  j["bos_token_id"] = {1, 2};
  reject(j, {"bos_token_id: expected one token id"});
  j["bos_token_id"] = 16;
  reject(j, {"bos_token_id: 16 is outside the vocabulary"});
}

TEST(HfConfig, GenerationConfigOverridesTokenIds) {
  ModelConfig c = cfg_of(base());
  ASSERT_EQ(c.eos_token_ids, (std::vector<int64_t>{2}));
  apply_generation_config(c, Json{{"eos_token_id", {2, 3}}, {"bos_token_id", 1}, {"do_sample", true}}, "gen.json");
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(c.bos_token_id, std::optional<int64_t>(1));
  apply_generation_config(c, Json{{"eos_token_id", 5}}, "gen.json");
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{5}));
  EXPECT_EQ(c.bos_token_id, std::optional<int64_t>(1));  // untouched when absent
  apply_generation_config(c, Json{{"eos_token_id", nullptr}}, "gen.json");
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{5}));
  expect_bad_input([&] { apply_generation_config(c, Json::array(), "gen.json"); }, {"gen.json", "expected a JSON object"});
  expect_bad_input([&] { apply_generation_config(c, Json{{"eos_token_id", 99}}, "gen.json"); },
                   {"gen.json", "eos_token_id: 99 is outside the vocabulary"});
  expect_bad_input([&] { apply_generation_config(c, Json{{"bos_token_id", Json::array()}}, "gen.json"); },
                   {"gen.json", "bos_token_id"});
  expect_bad_input([&] { apply_generation_config(c, Json{{"eos_token_id", {{"a", 1}}}}, "gen.json"); },
                   {"gen.json", "eos_token_id"});
}

TEST(HfConfig, LoadFromFolder) {
  TempDir dir;
  expect_bad_input([&] { load_model_config(dir / "absent"); }, {"absent", "not a model folder"});
  expect_bad_input([&] { load_model_config(dir.path()); }, {"config.json", "missing"});
  write_bytes(dir / "config.json", base().dump());
  ModelConfig c = load_model_config(dir.path());
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{2}));
  write_bytes(dir / "generation_config.json", R"({"eos_token_id": [2, 7], "bos_token_id": 1})");
  c = load_model_config(dir.path());
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{2, 7}));
  EXPECT_EQ(c.bos_token_id, std::optional<int64_t>(1));

  write_bytes(dir / "generation_config.json", R"({"eos_token_id": 2, "eos_token_id": 3})");
  expect_bad_input([&] { load_model_config(dir.path()); }, {"generation_config.json", "duplicate key"});
  fs::remove(dir / "generation_config.json");
  ASSERT_EQ(::mkfifo((dir / "generation_config.json").c_str(), 0600), 0);
  expect_bad_input([&] { load_model_config(dir.path()); }, {"generation_config.json", "not a regular file"});
  fs::remove(dir / "generation_config.json");

  write_bytes(dir / "config.json", base().dump() + "\n" + std::string(5 << 20, ' '));
  expect_bad_input([&] { load_model_config(dir.path()); }, {"config.json", "bytes, more than"});
  fs::remove(dir / "config.json");
  ASSERT_EQ(::mkfifo((dir / "config.json").c_str(), 0600), 0);  // must not wait for a writer
  expect_bad_input([&] { load_model_config(dir.path()); }, {"config.json", "not a regular file"});
  fs::remove(dir / "config.json");
  fs::create_directory(dir / "config.json");
  expect_bad_input([&] { load_model_config(dir.path()); }, {"config.json", "not a regular file"});
  fs::remove(dir / "config.json");
  write_bytes(dir / "config.json", "{\"model_type\": \"llama\"}\n");
  expect_bad_input([&] { load_model_config(dir.path()); }, {(dir / "config.json").string(), "hidden_size: missing"});
}
