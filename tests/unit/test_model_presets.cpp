// The synth-model presets: configs round-trip through config.json, parameter counts equal the
// published ones (real presets) or hand-computed ones (tiny presets), and a synthesised tiny
// folder loads with exactly that many parameters.
#include <gtest/gtest.h>

#include <cstring>

#include "agentcompile/model/architecture.h"
#include "agentcompile/model/model.h"
#include "agentcompile/model/synth_model.h"
#include "model_test_util.h"

using namespace ac;
using namespace ac::test;

namespace {

// Parameters of a llama-family decoder, from the HF modeling code: embedding (and lm_head when
// untied), per layer q/k/v/o + optional q/k norms + two RMSNorms + gate/up/down, final norm.
int64_t decoder_params(int64_t h, int64_t f, int64_t layers, int64_t heads, int64_t kv, int64_t hd, int64_t vocab,
                       bool tied, bool qk_norm) {
  int64_t layer = 2 * h * heads * hd + 2 * h * kv * hd + 3 * h * f + 2 * h + (qk_norm ? 2 * hd : 0);
  return vocab * h * (tied ? 1 : 2) + layers * layer + h;
}

int64_t expected_sum(const ModelConfig& c) {
  int64_t n = 0;
  for (const auto& t : expected_tensors(c)) n += numel_of(t.shape);
  return n;
}

ModelConfig preset_config(const std::string& name) {
  const SynthPreset* p = find_synth_preset(name);
  EXPECT_NE(p, nullptr) << name;
  return parse_model_config(p->config, name);
}

void expect_same_config(const ModelConfig& a, const ModelConfig& b) {
  EXPECT_EQ(a.arch, b.arch);
  EXPECT_EQ(a.hidden_size, b.hidden_size);
  EXPECT_EQ(a.intermediate_size, b.intermediate_size);
  EXPECT_EQ(a.num_layers, b.num_layers);
  EXPECT_EQ(a.num_heads, b.num_heads);
  EXPECT_EQ(a.num_kv_heads, b.num_kv_heads);
  EXPECT_EQ(a.head_dim, b.head_dim);
  EXPECT_EQ(a.vocab_size, b.vocab_size);
  EXPECT_EQ(a.max_position_embeddings, b.max_position_embeddings);
  EXPECT_EQ(a.rms_norm_eps, b.rms_norm_eps);
  EXPECT_EQ(a.rope.theta, b.rope.theta);
  EXPECT_EQ(a.rope.type, b.rope.type);
  EXPECT_EQ(a.rope.factor, b.rope.factor);
  EXPECT_EQ(a.tie_word_embeddings, b.tie_word_embeddings);
  EXPECT_EQ(a.qk_norm, b.qk_norm);
  EXPECT_EQ(a.torch_dtype, b.torch_dtype);
  EXPECT_EQ(a.bos_token_id, b.bos_token_id);
  EXPECT_EQ(a.attention_window, b.attention_window);
  EXPECT_EQ(a.moe.experts, b.moe.experts);
  EXPECT_EQ(a.moe.experts_per_token, b.moe.experts_per_token);
  EXPECT_EQ(a.moe.expert_intermediate, b.moe.expert_intermediate);
  EXPECT_EQ(a.moe.norm_topk_prob, b.moe.norm_topk_prob);
  EXPECT_EQ(a.moe.decoder_sparse_step, b.moe.decoder_sparse_step);
  EXPECT_EQ(a.moe.mlp_only_layers, b.moe.mlp_only_layers);
}

}  // namespace

TEST(ModelPresets, RealPresetsHaveThePublishedParameterCounts) {
  // Exact counts of the published checkpoints (tied embeddings counted once).
  EXPECT_EQ(expected_sum(preset_config("qwen3-1.7b")), 1'720'574'976);
  EXPECT_EQ(expected_sum(preset_config("qwen3-4b")), 4'022'468'096);
  EXPECT_EQ(expected_sum(preset_config("llama-3.2-1b")), 1'235'814'400);
  EXPECT_EQ(expected_sum(preset_config("qwen3-1.7b")), decoder_params(2048, 6144, 28, 16, 8, 128, 151936, true, true));
  EXPECT_EQ(expected_sum(preset_config("llama-3.2-1b")), decoder_params(2048, 8192, 16, 32, 8, 64, 128256, true, false));
}

TEST(ModelPresets, EveryPresetConfigRoundTripsThroughJson) {
  ASSERT_GE(synth_presets().size(), 5u);
  for (const auto& p : synth_presets()) {
    ModelConfig direct = parse_model_config(p.config, p.name);
    // What synth-model writes: the dump, read back by the strict parser.
    ModelConfig reread = parse_model_config(parse_json_strict(p.config.dump(2) + "\n", "config.json"), "config.json");
    expect_same_config(direct, reread);
    ModelConfig with_gen = reread;
    apply_generation_config(with_gen, parse_json_strict(p.generation_config.dump(2), "g.json"), "g.json");
    EXPECT_FALSE(with_gen.eos_token_ids.empty()) << p.name;
    for (int64_t id : with_gen.eos_token_ids) EXPECT_LT(id, direct.vocab_size) << p.name;
  }
}

TEST(ModelPresets, TinyPresetsSynthesiseAndLoadWithExactCounts) {
  struct Case {
    const char* preset;
    DType dtype;
    int64_t params;  // by hand, see decoder_params
  };
  const Case cases[] = {
      {"tiny-qwen3", DType::BF16, 9'847'232},  // 151936*64 + 2*(8192+4096+4096+8192+64+128+36864) + 64
      {"tiny-llama", DType::F16, 8'323'392},   // 128256*64 + 2*(8192+2048+2048+8192+128+36864) + 64
  };
  EXPECT_EQ(cases[0].params, decoder_params(64, 192, 2, 4, 2, 32, 151936, true, true));
  EXPECT_EQ(cases[1].params, decoder_params(64, 192, 2, 4, 1, 32, 128256, true, false));
  for (const auto& c : cases) {
    TempDir dir;
    SynthOptions o;
    o.preset = c.preset;
    o.out = dir / "m";
    o.seed = 7;
    o.dtype = c.dtype;
    o.quiet = true;
    SynthResult r = synth_model(o);
    EXPECT_EQ(r.parameters, c.params) << c.preset;
    auto m = load_model(dir / "m");
    EXPECT_EQ(m->weights.parameters, c.params) << c.preset;
    EXPECT_EQ(m->weights.bytes, uint64_t(c.params) * dtype_size(c.dtype));
    EXPECT_EQ(m->config.torch_dtype, c.dtype);
    EXPECT_EQ(m->weights.parameters, expected_sum(m->config));
    EXPECT_TRUE(m->weights.ignored.empty());
    for (const auto& [name, t] : m->store.all()) EXPECT_EQ(t->dtype, c.dtype) << name;
    // The folder holds nothing but the header and the tensors.
    SafetensorsFile f(dir / "m" / "model.safetensors");
    EXPECT_EQ(fs::file_size(dir / "m" / "model.safetensors"), f.header().data_offset + m->weights.bytes);
    ModelConfig want = preset_config(c.preset);
    want.torch_dtype = c.dtype;
    expect_same_config(m->config, want);
    // generation_config.json's eos list replaces config.json's single id.
    EXPECT_GE(m->config.eos_token_ids.size(), 2u);
  }
}

// A preset made in memory holds, tensor for tensor, the bytes the folder synth-model writes holds
// (16-bit, mixture of experts, FP8 block-scaled: its dequantized weights and counts too), so a
// benchmark of a preset too large for the disk runs the model the folder would give.
TEST(ModelPresets, InMemoryHoldsTheFolderBytes) {
  struct Case {
    const char* preset;
    const char* weights;
  };
  for (const Case c : {Case{"tiny-qwen3", ""}, Case{"tiny-qwen3-moe", ""}, Case{"tiny-qwen3", "fp8-block"}}) {
    SCOPED_TRACE(std::string(c.preset) + " " + c.weights);
    TempDir dir;
    SynthOptions o;
    o.preset = c.preset;
    o.out = dir / "m";
    o.seed = 9;
    o.quiet = true;
    o.weights = c.weights;
    synth_model(o);
    auto file = load_model(dir / "m");
    auto mem = synth_model_in_memory(o);
    ASSERT_EQ(mem->store.all().size(), file->store.all().size());
    for (const auto& [name, t] : file->store.all()) {
      const TensorInfo* u = mem->store.find(name);
      ASSERT_NE(u, nullptr) << name;
      EXPECT_EQ(u->dtype, t->dtype) << name;
      EXPECT_EQ(u->shape, t->shape) << name;
      ASSERT_EQ(u->nbytes(), t->nbytes()) << name;
      EXPECT_EQ(std::memcmp(u->data, t->data, t->nbytes()), 0) << name;
    }
    EXPECT_EQ(mem->weights.parameters, file->weights.parameters);
    EXPECT_EQ(mem->weights.bytes, file->weights.bytes);
    EXPECT_EQ(mem->stored_bytes(), file->stored_bytes());
    EXPECT_EQ(mem->quant.kind, file->quant.kind);
    EXPECT_EQ(mem->dequant.tensors, file->dequant.tensors);
    expect_same_config(mem->config, file->config);
    EXPECT_FALSE(mem->has_tokenizer());
  }
  SynthOptions bad;
  bad.preset = "tiny-nope";
  expect_bad_input([&] { synth_model_in_memory(bad); }, {"tiny-nope"});
}

// --layers: the preset's first N layers, the same shapes; the parameters drop by exactly the cut
// layers' share, and a count outside 1..the preset's is a one-line error.
TEST(ModelPresets, LayersCutsThePresetToItsFirstLayers) {
  TempDir dir;
  SynthOptions o;
  o.preset = "qwen3-30b-a3b";
  o.out = dir / "cfg";
  o.config_only = true;
  o.quiet = true;
  const SynthResult full = synth_model(o);
  o.out = dir / "cut";
  o.layers = 8;
  const SynthResult cut = synth_model(o);
  const ModelConfig whole = preset_config("qwen3-30b-a3b");
  int64_t shared = 0;  // embeddings, lm_head and the final norm: the tensors outside the layers
  for (const auto& t : expected_tensors(whole))
    if (t.name.rfind("model.layers.", 0) != 0) shared += numel_of(t.shape);
  EXPECT_EQ(cut.parameters - shared, (full.parameters - shared) / whole.num_layers * 8);
  auto m = load_model_config(dir / "cut");
  EXPECT_EQ(m.num_layers, 8);
  EXPECT_EQ(m.moe.experts, whole.moe.experts);
  EXPECT_EQ(m.hidden_size, whole.hidden_size);

  // A tiny mixture-of-experts preset cut to two layers loads: layer 0 sparse, layer 1 dense.
  TempDir tiny;
  SynthOptions t;
  t.preset = "tiny-qwen3-moe";
  t.out = tiny / "m";
  t.layers = 2;
  t.quiet = true;
  const SynthResult r = synth_model(t);
  auto model = load_model(tiny / "m");
  EXPECT_EQ(model->config.num_layers, 2);
  EXPECT_EQ(model->weights.parameters, r.parameters);
  EXPECT_EQ(model->weights.parameters, expected_sum(model->config));

  for (int64_t bad : {int64_t(-1), int64_t(49)}) {
    o.layers = bad;
    o.out = dir / ("bad" + std::to_string(bad));
    expect_bad_input([&] { synth_model(o); }, {"--layers", "48 layers"});
  }
}
