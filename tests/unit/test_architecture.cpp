// Binding stored tensors to the architecture: the expected list matches the HF modeling code
// (written out independently in model_test_util.h), and a missing, extra, mis-shaped or
// wrongly typed tensor is an error naming the tensor and the file.
#include <gtest/gtest.h>

#include <set>

#include "agentcompile/model/architecture.h"
#include "agentcompile/model/model.h"
#include "model_test_util.h"

using namespace ac;
using namespace ac::test;

namespace {

struct Folder {
  TempDir dir;
  ModelConfig cfg;
  WeightStore store;
};

// Writes config.json + model.safetensors and opens the weights.
std::unique_ptr<Folder> folder(const TinyShape& s, const std::vector<TestTensor>& tensors) {
  auto f = std::make_unique<Folder>();
  Json j = tiny_config(s);
  write_bytes(f->dir / "config.json", j.dump());
  write_bytes(f->dir / "model.safetensors", st_file(tensors));
  f->cfg = parse_model_config(j, "config.json");
  f->store = WeightStore::open(f->dir.path());
  return f;
}

std::string bind_error(const TinyShape& s, const std::vector<TestTensor>& tensors,
                       std::initializer_list<std::string> needles) {
  auto f = folder(s, tensors);
  std::string msg = expect_bad_input([&] { bind_weights(f->cfg, f->store); }, needles);
  EXPECT_NE(msg.find((f->dir / "model.safetensors").string()), std::string::npos) << msg;
  return msg;
}

std::vector<TestTensor> without(std::vector<TestTensor> ts, const std::string& name) {
  std::erase_if(ts, [&](const TestTensor& t) { return t.name == name; });
  return ts;
}

std::vector<TestTensor> replaced(std::vector<TestTensor> ts, const std::string& name, const TestTensor& with) {
  for (auto& t : ts)
    if (t.name == name) t = with;
  return ts;
}

const std::string kQ = "model.layers.0.self_attn.q_proj.weight";

}  // namespace

TEST(Architecture, ExpectedTensorsMatchTheHfModels) {
  std::vector<TinyShape> shapes;
  for (const char* mt : {"llama", "qwen2", "qwen3", "mistral"})
    for (bool tied : {true, false})
      for (bool bias : {false, true}) {
        TinyShape s;
        s.model_type = mt;
        s.tied = tied;
        s.attention_bias = bias && std::string(mt) != "mistral";
        s.layers = 3;
        s.heads = 4;
        s.kv_heads = 2;
        s.head_dim = 6;  // != hidden / heads, as in Qwen3
        shapes.push_back(s);
      }
  for (const auto& s : shapes) {
    ModelConfig cfg = parse_model_config(tiny_config(s), "config.json");
    std::vector<ExpectedTensor> got = expected_tensors(cfg);
    std::vector<TestTensor> want = tiny_tensors(s);
    ASSERT_EQ(got.size(), want.size()) << s.model_type << " tied=" << s.tied << " bias=" << s.attention_bias;
    std::set<std::string> names;
    for (size_t i = 0; i < got.size(); ++i) {
      names.insert(got[i].name);
      // Same set; the order only has to start with the embedding and end with norm / lm_head.
      auto it = std::find_if(want.begin(), want.end(), [&](const TestTensor& t) { return t.name == got[i].name; });
      ASSERT_NE(it, want.end()) << "unexpected " << got[i].name;
      EXPECT_EQ(got[i].shape, it->shape) << got[i].name;
    }
    EXPECT_EQ(names.size(), got.size());
    EXPECT_EQ(got.front().name, "model.embed_tokens.weight");
    EXPECT_EQ(got.back().name, s.tied ? "model.norm.weight" : "lm_head.weight");
  }
}

TEST(Architecture, BindsAndCountsParameters) {
  for (bool tied : {true, false}) {
    TinyShape s;
    s.tied = tied;
    auto ts = tiny_tensors(s);
    auto f = folder(s, ts);
    ModelWeights w = bind_weights(f->cfg, f->store);
    // By hand: embed 16*8, per layer 8 + 64 + 32 + 32 + 64 + 8 + 3*128, final norm 8, lm_head 16*8.
    int64_t want = 128 + (8 + 64 + 32 + 32 + 64 + 8 + 384) + 8 + (tied ? 0 : 128);
    EXPECT_EQ(w.parameters, want);
    EXPECT_EQ(w.parameters, total_numel(ts));
    EXPECT_EQ(w.bytes, uint64_t(want) * 2);
    ASSERT_EQ(w.layers.size(), 1u);
    EXPECT_EQ(w.embed->name, "model.embed_tokens.weight");
    EXPECT_EQ(w.final_norm->name, "model.norm.weight");
    EXPECT_EQ(w.lm_head, tied ? w.embed : f->store.find("lm_head.weight"));
    EXPECT_EQ(w.layers[0].q->name, kQ);
    EXPECT_EQ(w.layers[0].down->name, "model.layers.0.mlp.down_proj.weight");
    EXPECT_EQ(w.layers[0].q_bias, nullptr);
    EXPECT_EQ(w.layers[0].q_norm, nullptr);
    EXPECT_TRUE(w.ignored.empty());
  }
}

TEST(Architecture, BindsBiasesAndQkNorm) {
  TinyShape q2;
  q2.model_type = "qwen2";
  auto f = folder(q2, tiny_tensors(q2));
  ModelWeights w = bind_weights(f->cfg, f->store);
  EXPECT_EQ(w.layers[0].q_bias->name, "model.layers.0.self_attn.q_proj.bias");
  EXPECT_EQ(w.layers[0].v_bias->shape, (std::vector<int64_t>{4}));
  EXPECT_EQ(w.layers[0].o_bias, nullptr);

  TinyShape q3;
  q3.model_type = "qwen3";
  q3.head_dim = 6;
  q3.layers = 2;
  auto g = folder(q3, tiny_tensors(q3));
  ModelWeights w3 = bind_weights(g->cfg, g->store);
  ASSERT_EQ(w3.layers.size(), 2u);
  EXPECT_EQ(w3.layers[1].k_norm->name, "model.layers.1.self_attn.k_norm.weight");
  EXPECT_EQ(w3.layers[1].k_norm->shape, (std::vector<int64_t>{6}));
  EXPECT_EQ(w3.layers[1].q->shape, (std::vector<int64_t>{12, 8}));
  EXPECT_EQ(w3.parameters, total_numel(tiny_tensors(q3)));
}

TEST(Architecture, MixedComputeDtypesAreAccepted) {
  TinyShape s;
  auto ts = tiny_tensors(s);
  for (auto& t : ts) {
    if (t.name.ends_with("norm.weight")) t.dtype = "F32";
    if (t.name.ends_with("o_proj.weight")) t.dtype = "F16";
  }
  auto f = folder(s, ts);
  ModelWeights w = bind_weights(f->cfg, f->store);
  EXPECT_EQ(w.final_norm->dtype, DType::F32);
  EXPECT_EQ(w.layers[0].o->dtype, DType::F16);
  EXPECT_EQ(w.bytes, uint64_t(total_numel(ts)) * 2 + 3 * 8 * 2);  // three f32 norms of 8
}

TEST(Architecture, IgnoredTensorsAreNotCounted) {
  TinyShape s;  // tied
  auto ts = tiny_tensors(s);
  ts.push_back({"lm_head.weight", "BF16", {16, 8}, ""});  // a tied copy some exporters keep
  ts.push_back({"model.layers.0.self_attn.rotary_emb.inv_freq", "F32", {2}, ""});
  auto f = folder(s, ts);
  ModelWeights w = bind_weights(f->cfg, f->store);
  EXPECT_EQ(w.parameters, total_numel(tiny_tensors(s)));
  EXPECT_EQ(w.ignored.size(), 2u);
  EXPECT_EQ(w.lm_head, w.embed);
}

TEST(Architecture, MissingTensorIsNamed) {
  TinyShape s;
  for (const auto& t : tiny_tensors(s))
    bind_error(s, without(tiny_tensors(s), t.name), {"missing tensor \"" + t.name + "\""});
  TinyShape untied;
  untied.tied = false;
  bind_error(untied, tiny_tensors(s), {"missing tensor \"lm_head.weight\""});
  TinyShape q2;
  q2.model_type = "qwen2";
  bind_error(q2, tiny_tensors(s), {"missing tensor \"model.layers.0.self_attn.q_proj.bias\""});
  TinyShape two = s;
  two.layers = 2;
  bind_error(two, tiny_tensors(s), {"missing tensor \"model.layers.1.input_layernorm.weight\""});
}

TEST(Architecture, ExtraTensorIsNamed) {
  TinyShape s;
  for (const std::string extra : {"model.layers.0.mlp.extra.weight", "model.layers.1.input_layernorm.weight",
                                  "model.layers.0.self_attn.q_norm.weight", "model.layers.0.self_attn.o_proj.bias",
                                  "lm_head.bias", "model.embed_tokens.weight_scale", "x"}) {
    auto ts = tiny_tensors(s);
    ts.push_back({extra, "BF16", {4}, ""});
    bind_error(s, ts, {"unexpected tensor \"" + extra + "\"", "llama"});
  }
  // A tied model's lm_head copy is only ignored when its shape is the embedding's.
  auto ts = tiny_tensors(s);
  ts.push_back({"lm_head.weight", "BF16", {8, 16}, ""});
  bind_error(s, ts, {"unexpected tensor \"lm_head.weight\""});
}

TEST(Architecture, MisshapedTensorIsNamed) {
  TinyShape s;
  bind_error(s, replaced(tiny_tensors(s), kQ, {kQ, "BF16", {8, 4}, ""}), {kQ, "shape [8, 4], expected [8, 8]"});
  bind_error(s, replaced(tiny_tensors(s), kQ, {kQ, "BF16", {64}, ""}), {kQ, "shape [64], expected [8, 8]"});
  bind_error(s, replaced(tiny_tensors(s), kQ, {kQ, "BF16", {8, 8, 1}, ""}), {kQ, "shape [8, 8, 1]"});
  bind_error(s, replaced(tiny_tensors(s), kQ, {kQ, "BF16", {0, 8}, ""}), {kQ, "shape [0, 8]"});
  // Transposed projection (out and in swapped).
  const std::string down = "model.layers.0.mlp.down_proj.weight";
  bind_error(s, replaced(tiny_tensors(s), down, {down, "BF16", {16, 8}, ""}), {down, "shape [16, 8], expected [8, 16]"});
  const std::string norm = "model.norm.weight";
  bind_error(s, replaced(tiny_tensors(s), norm, {norm, "BF16", {}, ""}), {norm, "shape [], expected [8]"});
  // The config disagrees with the weights: 4 heads of 4 make q [16, 8].
  TinyShape four = s;
  four.heads = 4;
  four.kv_heads = 2;
  bind_error(four, tiny_tensors(s), {kQ, "expected [16, 8]"});
}

TEST(Architecture, NonComputeDtypeIsNamed) {
  TinyShape s;
  for (const char* dt : {"I32", "I8", "U8", "I64", "F64", "BOOL", "F8_E4M3", "U16"})
    bind_error(s, replaced(tiny_tensors(s), kQ, {kQ, dt, {8, 8}, ""}), {kQ, std::string("dtype ") + dt, "BF16, F16, F32"});
}

TEST(Architecture, MissingTensorNamesTheIndexWhenSharded) {
  TinyShape s;
  auto ts = without(tiny_tensors(s), "model.norm.weight");
  TempDir dir;
  Json j = tiny_config(s);
  write_bytes(dir / "config.json", j.dump());
  write_bytes(dir / "a.safetensors", st_file(ts));
  Json index = {{"weight_map", Json::object()}};
  for (const auto& t : ts) index["weight_map"][t.name] = "a.safetensors";
  write_bytes(dir / "model.safetensors.index.json", index.dump());
  expect_bad_input([&] { load_model(dir.path()); },
                   {(dir / "model.safetensors.index.json").string(), "missing tensor \"model.norm.weight\""});
}
