// FP8 checkpoints: e4m3 codes decoded and rounded as the format defines (checked against a
// decoder written here from the format's definition), block-scaled ("fp8") and per-channel
// ("compressed-tensors") weights dequantized to fp8 x scale on load, with partial edge blocks,
// and one-line errors for a missing or mis-shaped scale, FP8 without quantization_config, another
// FP8 format, and quantization methods that are not supported. synth-model's FP8 folders hold
// the 16-bit model quantized.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>

#include "agentcompile/core/fp8.h"
#include "agentcompile/model/fp8_quantize.h"
#include "agentcompile/model/model.h"
#include "agentcompile/model/synth_model.h"
#include "agentcompile/ir/graph.h"
#include "agentcompile/runtime/weights_accuracy.h"
#include "unit/model_test_util.h"

using namespace ac;

namespace {

// synth-model's options for a preset written quietly to `out`.
SynthOptions quiet_preset(const char* preset, uint64_t seed, const fs::path& out) {
  SynthOptions o;
  o.preset = preset;
  o.seed = seed;
  o.quiet = true;
  o.out = out;
  return o;
}

// e4m3fn from its definition: (-1)^s * 2^(e-7) * (1 + m/8), subnormal 2^-6 * m/8, S.1111.111 NaN.
double e4m3_value(int code) {
  const int s = code >> 7, e = (code >> 3) & 15, m = code & 7;
  if (e == 15 && m == 7) return NAN;
  const double mag = e == 0 ? std::pow(2.0, -6) * m / 8.0 : std::pow(2.0, e - 7) * (1.0 + m / 8.0);
  return s ? -mag : mag;
}

// Codes that are finite: a pattern over the whole range, NaN codes skipped.
uint8_t code_at(const std::string& name, size_t i) {
  uint8_t c = uint8_t((i * 37 + name.size() * 11) & 0xff);
  return (c & 0x7f) == 0x7f ? uint8_t(c - 1) : c;
}

test::TestTensor fp8_weight(const std::string& name, std::vector<int64_t> shape) {
  std::string bytes(size_t(test::numel_of(shape)), '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = char(code_at(name, i));
  return {name, "F8_E4M3", std::move(shape), bytes};
}

float scale_at(size_t i) { return 0.25f + 0.125f * float(i % 7); }  // exact in bf16

test::TestTensor scale_tensor(const std::string& name, const std::string& dtype, std::vector<int64_t> shape) {
  const DType dt = *dtype_from_safetensors_name(dtype);
  std::string bytes(size_t(test::numel_of(shape)) * dtype_size(dt), '\0');
  for (size_t i = 0; i < size_t(test::numel_of(shape)); ++i) store_from_f32(bytes.data(), dt, i, scale_at(i));
  return {name, dtype, std::move(shape), bytes};
}

const test::TinyShape kShape{.model_type = "qwen3", .hidden = 8, .intermediate = 12, .layers = 1, .heads = 2,
                             .kv_heads = 1, .head_dim = 4, .vocab = 16};

bool is_linear(const std::string& n) { return n.find("_proj.weight") != std::string::npos; }

// A tiny qwen3 folder whose linear weights are FP8 with scales of [bo, bi] blocks (bi 0: per row).
// `edit` may change the tensors before they are written.
void write_fp8_model(const fs::path& dir, const Json& quant, int64_t bo, int64_t bi, const std::string& suffix,
                     const std::string& scale_dtype, const std::function<void(std::vector<test::TestTensor>&)>& edit = {}) {
  Json cfg = test::tiny_config(kShape);
  cfg["quantization_config"] = quant;
  std::vector<test::TestTensor> out;
  for (auto& t : test::tiny_tensors(kShape)) {
    if (!is_linear(t.name)) {
      out.push_back(t);
      continue;
    }
    const int64_t rows = t.shape[0], cols = t.shape[1];
    const int64_t so = (rows + bo - 1) / bo, si = bi ? (cols + bi - 1) / bi : 1;
    out.push_back(fp8_weight(t.name, t.shape));
    out.push_back(scale_tensor(t.name.substr(0, t.name.size() - 6) + suffix, scale_dtype, {so, si}));
  }
  if (edit) edit(out);
  test::write_bytes(dir / "config.json", cfg.dump());
  test::write_bytes(dir / "model.safetensors", test::st_file(out));
}

// Every linear weight of the loaded model equals code x scale of its block, from the test's decoder.
void expect_dequantized(const Model& m, int64_t bo, int64_t bi) {
  int checked = 0;
  for (const auto& [name, t] : m.store.all()) {
    if (!is_linear(name)) continue;
    ASSERT_EQ(t->dtype, DType::F32) << name;
    const int64_t rows = t->shape[0], cols = t->shape[1];
    const int64_t b_in = bi ? bi : cols, si = (cols + b_in - 1) / b_in;
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        const size_t k = size_t(i * cols + j);
        const double want = e4m3_value(code_at(name, k)) * scale_at(size_t((i / bo) * si + j / b_in));
        ASSERT_EQ(double(load_as_f32(t->data, t->dtype, k)), double(float(want))) << name << " [" << i << ", " << j << "]";
      }
    ++checked;
  }
  EXPECT_EQ(checked, 7);
  EXPECT_EQ(m.dequant.tensors, 7);
}

}  // namespace

TEST(Fp8, EveryCodeDecodesAsTheFormatDefines) {
  for (int c = 0; c < 256; ++c) {
    const double want = e4m3_value(c);
    if (std::isnan(want)) EXPECT_TRUE(std::isnan(fp8_e4m3_to_f32(uint8_t(c)))) << c;
    else EXPECT_EQ(double(fp8_e4m3_to_f32(uint8_t(c))), want) << c;
  }
  EXPECT_EQ(fp8_e4m3_to_f32(0x7e), 448.0f);
}

// gemv.fp8's conversion below sm_89 (kernels/cuda/common/vec.cuh unpack_fp8x4): the code's bits
// moved into an f16 (sign to bit 15, exponent and mantissa shifted by 7) hold its value / 2^8,
// subnormals included, so times 256 every finite code is exact.
TEST(Fp8, TheKernelsBitMoveIntoF16IsExact) {
  for (int c = 0; c < 256; ++c) {
    if ((c & 0x7f) == 0x7f) continue;  // NaN
    const uint16_t h = uint16_t(((c & 0x80) << 8) | ((c & 0x7f) << 7));
    const float v = load_as_f32(reinterpret_cast<const uint8_t*>(&h), DType::F16, 0) * 256.0f;
    EXPECT_EQ(v, fp8_e4m3_to_f32(uint8_t(c))) << c;
  }
}

TEST(Fp8, RoundsToNearestEvenAndSaturates) {
  std::vector<std::pair<double, int>> pos;  // positive finite values and their codes, ascending
  for (int c = 0; c < 127; ++c) pos.emplace_back(e4m3_value(c), c);
  for (size_t k = 0; k + 1 < pos.size(); ++k) {
    const auto [a, ca] = pos[k];
    const auto [b, cb] = pos[k + 1];
    EXPECT_EQ(f32_to_fp8_e4m3(float(a)), ca);
    EXPECT_EQ(f32_to_fp8_e4m3(float(-a)), ca | 0x80) << a;
    const double mid = (a + b) / 2;
    EXPECT_EQ(f32_to_fp8_e4m3(float(mid)), (ca % 2 == 0) ? ca : cb) << "halfway between " << a << " and " << b;
    EXPECT_EQ(f32_to_fp8_e4m3(std::nextafter(float(mid), 1e9f)), cb) << mid;
    EXPECT_EQ(f32_to_fp8_e4m3(std::nextafter(float(mid), 0.0f)), ca) << mid;
  }
  EXPECT_EQ(f32_to_fp8_e4m3(1000.0f), 0x7e);
  EXPECT_EQ(f32_to_fp8_e4m3(-1e30f), 0xfe);
  EXPECT_TRUE(std::isnan(fp8_e4m3_to_f32(f32_to_fp8_e4m3(NAN))));
}

TEST(Fp8Weights, BlockScaledWithPartialEdgeBlocks) {
  test::TempDir dir;
  const Json quant = {{"quant_method", "fp8"}, {"fmt", "e4m3"}, {"activation_scheme", "dynamic"}, {"weight_block_size", {3, 5}}};
  write_fp8_model(dir.path(), quant, 3, 5, "weight_scale_inv", "F32");
  auto m = load_model(dir.path());
  EXPECT_EQ(m->quant.scheme, "block 3x5");
  expect_dequantized(*m, 3, 5);
  // BF16 scales read the same way.
  test::TempDir dir2;
  write_fp8_model(dir2.path(), quant, 3, 5, "weight_scale_inv", "BF16");
  expect_dequantized(*load_model(dir2.path()), 3, 5);
}

TEST(Fp8Weights, PerChannelCompressedTensors) {
  test::TempDir dir;
  const Json quant = {{"quant_method", "compressed-tensors"},
                      {"format", "float-quantized"},
                      {"config_groups",
                       {{"group_0",
                         {{"targets", {"Linear"}},
                          {"weights", {{"num_bits", 8}, {"type", "float"}, {"strategy", "channel"}, {"symmetric", true}}}}}}},
                      {"ignore", {"lm_head"}}};
  // A static activation scale beside one weight: dropped (activations stay unquantized).
  write_fp8_model(dir.path(), quant, 1, 0, "weight_scale", "BF16", [](std::vector<test::TestTensor>& ts) {
    ts.push_back(scale_tensor("model.layers.0.self_attn.q_proj.input_scale", "F32", {1}));
  });
  auto m = load_model(dir.path());
  EXPECT_EQ(m->quant.scheme, "channel");
  expect_dequantized(*m, 1, 0);
  EXPECT_EQ(m->store.find("model.layers.0.self_attn.q_proj.input_scale"), nullptr);
}

TEST(Fp8Weights, BadFp8FoldersGetOneLineErrors) {
  const Json block = {{"quant_method", "fp8"}, {"weight_block_size", {4, 4}}};
  const auto attempt = [](const std::function<void(const fs::path&)>& write, std::initializer_list<std::string> needles) {
    test::TempDir dir;
    write(dir.path());
    test::expect_bad_input([&] { load_model(dir.path()); }, needles);
  };
  const std::string q = "model.layers.0.self_attn.q_proj.";
  attempt([&](const fs::path& d) {
    write_fp8_model(d, block, 4, 4, "weight_scale_inv", "F32", [&](auto& ts) {
      std::erase_if(ts, [&](const test::TestTensor& t) { return t.name == q + "weight_scale_inv"; });
    });
  }, {"no scale tensor", q + "weight_scale_inv"});
  attempt([&](const fs::path& d) {
    write_fp8_model(d, block, 4, 4, "weight_scale_inv", "F32", [&](auto& ts) {
      for (auto& t : ts)
        if (t.name == q + "weight_scale_inv") t = scale_tensor(t.name, "F32", {3, 2});
    });
  }, {q + "weight_scale_inv", "[3, 2]", "expected [2, 2]"});
  attempt([&](const fs::path& d) {
    write_fp8_model(d, block, 4, 4, "weight_scale_inv", "F32", [&](auto& ts) {
      for (auto& t : ts)
        if (t.name == q + "weight_scale_inv") t = {t.name, "I32", t.shape, std::string(size_t(test::numel_of(t.shape)) * 4, '\0')};
    });
  }, {q + "weight_scale_inv", "I32"});
  attempt([&](const fs::path& d) { write_fp8_model(d, nullptr, 4, 4, "weight_scale_inv", "F32"); },
          {"_proj.weight", "is F8_E4M3 but config.json has no quantization_config"});
  attempt([&](const fs::path& d) {
    write_fp8_model(d, block, 4, 4, "weight_scale_inv", "F32", [&](auto& ts) {
      for (auto& t : ts)
        if (t.name == q + "weight") t.dtype = "F8_E5M2";
    });
  }, {q + "weight", "F8_E5M2"});
  attempt([&](const fs::path& d) {
    write_fp8_model(d, {{"quant_method", "fp8"}, {"weight_block_size", {4, 4}}, {"modules_to_not_convert", {"q_proj"}}}, 4, 4,
                    "weight_scale_inv", "F32");
  }, {q + "weight", "unquantized"});
  for (const char* method : {"awq", "gptq", "bitsandbytes", "hqq"})
    attempt([&](const fs::path& d) { write_fp8_model(d, {{"quant_method", method}}, 4, 4, "weight_scale_inv", "F32"); },
            {"quant_method", std::string("\"") + method + "\" is not supported"});
  attempt([&](const fs::path& d) {
    write_fp8_model(d, {{"quant_method", "compressed-tensors"}, {"format", "pack-quantized"},
                        {"config_groups", {{"g", {{"weights", {{"num_bits", 4}, {"type", "int"}}}}}}}}, 4, 4, "weight_scale", "F32");
  }, {"pack-quantized", "not supported"});
}

// synth-model --weights: the 16-bit model of the same seed, quantized; loads and dequantizes to
// within e4m3's rounding of it (half a step: 1/16 of the value, or of the scale near zero).
TEST(Fp8Weights, SynthModelWritesTheSixteenBitModelQuantized) {
  test::TempDir dir;
  SynthOptions o = quiet_preset("tiny-qwen3", 4, dir / "bf16");
  synth_model(o);
  auto ref = load_model(o.out);
  for (const char* kind : {"fp8-block", "fp8-channel"}) {
    o.weights = kind;
    o.out = dir / kind;
    synth_model(o);
    auto m = load_model(o.out);
    EXPECT_GT(m->dequant.tensors, 0) << kind;
    int64_t compared = 0;
    for (const auto& [name, t] : ref->store.all()) {
      const TensorInfo* d = m->store.find(name);
      ASSERT_NE(d, nullptr) << name;
      const bool quantized = name.find("_proj.weight") != std::string::npos;
      ASSERT_EQ(d->dtype, quantized ? DType::F32 : t->dtype) << kind << " " << name;
      if (!quantized) continue;
      float amax = 0.0f;
      for (int64_t i = 0; i < t->numel(); ++i) amax = std::max(amax, std::fabs(load_as_f32(t->data, t->dtype, size_t(i))));
      for (int64_t i = 0; i < t->numel(); ++i) {
        const float w = load_as_f32(t->data, t->dtype, size_t(i)), q = load_as_f32(d->data, d->dtype, size_t(i));
        ASSERT_LE(std::fabs(q - w), std::fabs(w) / 16 + amax / 448 / 512 + 1e-12f) << kind << " " << name << "[" << i << "]";
        ++compared;
      }
    }
    EXPECT_GT(compared, 1000) << kind;
  }
  o.weights = "int4";
  test::expect_bad_input([&] { synth_model(o); }, {"--weights", "int4"});
}

// Quantizing a loaded 16-bit model (quantize_fp8_weights) gives, bit for bit, the weights that
// loading the FP8 checkpoint synth-model writes of the same seed gives; the tensors FP8
// checkpoints keep 16-bit stay untouched, and the counted bytes are the checkpoint's.
TEST(Fp8Weights, QuantizingAtLoadEqualsLoadingTheCheckpoint) {
  test::TempDir dir;
  // Experts and a router: the router stays 16-bit.
  SynthOptions o = quiet_preset("tiny-qwen3-moe", 6, dir / "bf16");
  synth_model(o);
  for (const char* kind : {"fp8-block", "fp8-channel"}) {
    auto ref = load_model(dir / "bf16");
    const DequantStats st = quantize_fp8_weights(ref->store, std::string(kind) == "fp8-block");
    o.weights = kind;
    o.out = dir / kind;
    synth_model(o);
    auto ckpt = load_model(o.out);
    EXPECT_EQ(st.tensors, ckpt->dequant.tensors) << kind;
    EXPECT_EQ(st.stored_bytes, ckpt->dequant.stored_bytes) << kind;
    EXPECT_EQ(st.loaded_bytes, ckpt->dequant.loaded_bytes) << kind;
    int64_t quantized = 0;
    for (const auto& [name, t] : ckpt->store.all()) {
      const TensorInfo* q = ref->store.find(name);
      ASSERT_NE(q, nullptr) << name;
      ASSERT_EQ(q->dtype, t->dtype) << kind << " " << name;
      ASSERT_EQ(q->nbytes(), t->nbytes()) << name;
      EXPECT_EQ(std::memcmp(q->data, t->data, t->nbytes()), 0) << kind << " " << name;
      quantized += t->dtype == DType::F32;
      if (name.ends_with("mlp.gate.weight")) EXPECT_NE(t->dtype, DType::F32) << name;
    }
    EXPECT_EQ(quantized, st.tensors) << kind;
  }
}

// The accuracy report of quantized weights: a model against itself is exact; its FP8 quantization
// (block and channel) is close but not equal, and every figure is in its range.
TEST(Fp8Weights, AccuracyReportAgainstTheSixteenBitModel) {
  test::TempDir dir;
  SynthOptions o = quiet_preset("tiny-qwen3", 8, dir / "m");
  synth_model(o);
  auto ref = load_model(o.out);
  const Graph gr = build_decoder_graph(ref->config, ref->weights);
  std::vector<int32_t> tokens;
  for (int32_t i = 0; i < 24; ++i) tokens.push_back(int32_t((i * 7919 + 13) % ref->config.vocab_size));
  const WeightsAccuracy self = weights_accuracy(gr, gr, tokens, 8, 12);
  EXPECT_EQ(self.positions, 24);
  EXPECT_EQ(self.max_abs_dlogit, 0.0);
  EXPECT_EQ(self.mean_kl, 0.0);
  EXPECT_EQ(self.top1_agreement, 1.0);
  EXPECT_EQ(self.greedy_tokens, 12);
  EXPECT_EQ(self.greedy_prefix, 12);
  for (bool block : {true, false}) {
    auto m = load_model(o.out);
    quantize_model_fp8(*m, block);
    EXPECT_GT(m->dequant.tensors, 0);
    const Graph gq = build_decoder_graph(m->config, m->weights);
    const WeightsAccuracy a = weights_accuracy(gr, gq, tokens, 8, 12);
    std::printf("[ accuracy ] %s: %s\n", block ? "fp8-block" : "fp8-channel", a.to_json().dump().c_str());
    EXPECT_GT(a.max_abs_dlogit, 0.0) << block;
    EXPECT_GT(a.mean_abs_dlogit, 0.0) << block;
    EXPECT_LE(a.mean_abs_dlogit, a.max_abs_dlogit) << block;
    EXPECT_GT(a.mean_kl, 0.0) << block;
    EXPECT_LT(a.mean_kl, 0.1) << block;  // e4m3 weights move a tiny model's softmax only a little
    EXPECT_GE(a.top1_agreement, 0.5) << block;
    EXPECT_LE(a.top1_agreement, 1.0) << block;
    EXPECT_LE(a.greedy_prefix, a.greedy_tokens) << block;
    const Json j = a.to_json();
    EXPECT_EQ(j["positions"], 24);
    EXPECT_DOUBLE_EQ(j["mean_kl"].get<double>(), a.mean_kl);
    test::expect_bad_input([&] { quantize_model_fp8(*m, block); }, {"already quantized"});
  }
}

// The weight bytes one decode step reads, as stored: a 16-bit model's are parameter_counts'; an
// FP8 mixture of experts reads each quantized tensor's fp8 bytes and scales (counted here from the
// checkpoint's files), its experts at the picked share, the router and embeddings 16-bit.
TEST(Fp8Weights, DecodeStepBytesCountTheStoredFormat) {
  test::TempDir dir;
  SynthOptions o = quiet_preset("tiny-qwen3-moe", 3, dir / "bf16");
  synth_model(o);
  o.out = dir / "fp8";
  o.weights = "fp8-block";
  synth_model(o);
  auto m16 = load_model(dir / "bf16");
  const ParameterCounts pc = parameter_counts(m16->config, DType::BF16);
  EXPECT_EQ(m16->decode_step_bytes(), pc.decode_bytes);
  auto m8 = load_model(dir / "fp8");
  const WeightStore raw = WeightStore::open(dir / "fp8");
  const ModelConfig& c = m8->config;
  const double picked = double(c.moe.experts_per_token) / double(c.moe.experts);
  double want = double(pc.decode_bytes);
  int quantized = 0;
  for (const auto& [name, t] : raw.all()) {
    if (t->dtype != DType::F8_E4M3) continue;
    ++quantized;
    const TensorInfo* s = raw.find(name.substr(0, name.size() - 6) + "weight_scale_inv");
    ASSERT_NE(s, nullptr) << name;
    const double share = name.find(".experts.") != std::string::npos ? picked : 1.0;
    want -= (double(t->numel()) * 2.0 - double(t->nbytes() + s->nbytes())) * share;
  }
  EXPECT_GT(quantized, 0);
  EXPECT_NEAR(double(m8->decode_step_bytes()), want, 1.0);
  EXPECT_LT(m8->decode_step_bytes(), m16->decode_step_bytes());
  // Quantized at load, the same count.
  auto mq = load_model(dir / "bf16");
  quantize_model_fp8(*mq, true);
  EXPECT_EQ(mq->decode_step_bytes(), m8->decode_step_bytes());
}

// compile --lm-head fp8: the lm_head quantized as the projections are. A tied head (tiny-qwen3)
// becomes a tensor of its own, the embedding's rows untouched; an untied one (tiny-qwen3-moe) is
// quantized in place. The graph's logits read the quantized head, the decode step reads one byte
// per head weight (plus scales), and the accuracy report sees the head's quantization.
TEST(Fp8Weights, TheLmHeadQuantizedToo) {
  test::TempDir dir;
  for (const char* preset : {"tiny-qwen3", "tiny-qwen3-moe"}) {
    SCOPED_TRACE(preset);
    SynthOptions o = quiet_preset(preset, 9, dir / preset);
    synth_model(o);
    auto m16 = load_model(o.out);
    const bool tied = m16->config.tie_word_embeddings;
    EXPECT_EQ(tied, std::string(preset) == "tiny-qwen3");
    auto body = load_model(o.out);
    quantize_model_fp8(*body, true);
    auto m = load_model(o.out);
    quantize_model_fp8(*m, true, true);
    EXPECT_TRUE(m->quant.lm_head_fp8);
    EXPECT_FALSE(body->quant.lm_head_fp8);
    EXPECT_NE(m->quant.describe().find("lm_head"), std::string::npos) << m->quant.describe();
    EXPECT_FALSE(m->config.tie_word_embeddings);
    ASSERT_NE(m->weights.lm_head, m->weights.embed);
    EXPECT_EQ(m->weights.lm_head->name, "lm_head.weight");
    EXPECT_EQ(m->weights.lm_head->dtype, DType::F32);
    ASSERT_TRUE(m->dequant.weights.count("lm_head.weight"));
    EXPECT_EQ(m->dequant.tensors, body->dequant.tensors + 1);
    // The embedding keeps the 16-bit model's bytes.
    ASSERT_EQ(m->weights.embed->dtype, m16->weights.embed->dtype);
    EXPECT_EQ(std::memcmp(m->weights.embed->data, m16->weights.embed->data, m16->weights.embed->nbytes()), 0);
    // The head holds what its e4m3 codes and block scales give, of the 16-bit head's values.
    const TensorInfo& h16 = *m16->weights.lm_head;
    const int64_t V = h16.shape[0], H = h16.shape[1];
    std::vector<float> w(size_t(V * H));
    for (size_t i = 0; i < w.size(); ++i) w[i] = load_as_f32(h16.data, h16.dtype, i);
    std::vector<uint8_t> q, sc;
    quantize_fp8(w, V, H, kFp8Block, kFp8Block, DType::F32, q, sc);
    const std::vector<float> want = dequantize_fp8(q.data(), sc.data(), DType::F32, V, H, kFp8Block, kFp8Block);
    ASSERT_EQ(m->weights.lm_head->nbytes(), want.size() * 4);
    EXPECT_EQ(std::memcmp(m->weights.lm_head->data, want.data(), want.size() * 4), 0);
    EXPECT_NE(std::memcmp(want.data(), w.data(), want.size() * 4), 0);  // quantization moved something
    const Graph g = build_decoder_graph(m->config, m->weights);
    size_t head_fp8 = 0;
    for (const auto& [t, f] : g.fp8) head_fp8 += t == m->weights.lm_head;
    EXPECT_EQ(head_fp8, 1u);
    // A decode step reads the head's codes and scales instead of its 16-bit weights.
    const double head16 = double(V * H) * double(dtype_size(h16.dtype)), head8 = double(q.size() + sc.size());
    EXPECT_NEAR(double(m->decode_step_bytes()), double(body->decode_step_bytes()) - head16 + head8, 1.0);
    // Against the 16-bit model, the head's quantization shows in the logits.
    std::vector<int32_t> tokens;
    for (int32_t i = 0; i < 16; ++i) tokens.push_back(int32_t((i * 7919 + 13) % m16->config.vocab_size));
    const Graph g16 = build_decoder_graph(m16->config, m16->weights);
    const WeightsAccuracy with = weights_accuracy(g16, g, tokens, 4, 4);
    const WeightsAccuracy without = weights_accuracy(g16, build_decoder_graph(body->config, body->weights), tokens, 4, 4);
    EXPECT_NE(with.max_abs_dlogit, without.max_abs_dlogit);
    EXPECT_GT(with.mean_abs_dlogit, 0.0);
  }
}

// The FP8 weights kept as stored (what FP8 kernels read) describe exactly the f32 weights the
// model runs: every code times its block's scale is the loaded value, bit for bit; a checkpoint's
// codes are its file's own bytes. Block and channel checkpoints, and a model quantized at load.
TEST(Fp8Weights, KeptCodesAndScalesGiveTheLoadedWeights) {
  test::TempDir dir;
  SynthOptions o = quiet_preset("tiny-qwen3-moe", 5, dir / "bf16");
  synth_model(o);
  std::vector<std::unique_ptr<Model>> models;
  for (const char* w : {"fp8-block", "fp8-channel"}) {
    o.out = dir / w;
    o.weights = w;
    synth_model(o);
    models.push_back(load_model(dir / w));
  }
  models.push_back(load_model(dir / "bf16"));
  quantize_model_fp8(*models.back(), false);
  for (size_t k = 0; k < models.size(); ++k) {
    const Model& m = *models[k];
    SCOPED_TRACE(k);
    EXPECT_EQ(int64_t(m.dequant.weights.size()), m.dequant.tensors);
    const WeightStore* raw = nullptr;
    WeightStore file_store;
    if (k < 2) {
      file_store = WeightStore::open(m.dir);
      raw = &file_store;
    }
    for (const auto& [name, fw] : m.dequant.weights) {
      const TensorInfo* t = m.store.find(name);
      ASSERT_NE(t, nullptr) << name;
      ASSERT_EQ(t->dtype, DType::F32) << name;
      ASSERT_EQ((std::vector<int64_t>{fw->out, fw->in}), t->shape) << name;
      const int64_t si = (fw->in + fw->bi - 1) / fw->bi;
      ASSERT_EQ(int64_t(fw->scales.size()), (fw->out + fw->bo - 1) / fw->bo * si) << name;
      const float* w = reinterpret_cast<const float*>(t->data);
      for (int64_t i = 0; i < fw->out; ++i)
        for (int64_t j = 0; j < fw->in; ++j) {
          const float v = fp8_e4m3_to_f32(fw->codes[i * fw->in + j]) * fw->scales[size_t((i / fw->bo) * si + j / fw->bi)];
          ASSERT_EQ(std::memcmp(&v, &w[i * fw->in + j], 4), 0) << name << " [" << i << ", " << j << "]";
        }
      if (raw) {
        const TensorInfo* q = raw->find(name);
        ASSERT_NE(q, nullptr) << name;
        EXPECT_EQ(std::memcmp(q->data, fw->codes, size_t(fw->out * fw->in)), 0) << name;
      }
    }
  }
}
