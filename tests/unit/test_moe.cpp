// Mixture-of-experts models (qwen3_moe, mixtral): the config fields and which layers are sparse,
// the routing (f32 softmax, top-k with ties, renormalisation), the MoeMlp op of the CPU reference
// against a naive computation written here from the HF modeling code, mixtral's sliding window,
// parameter counts, and the errors of corrupted (sharded) model folders.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <numeric>

#include "agentcompile/backends/cpu/cpu_executor.h"
#include "agentcompile/backends/cpu/cpu_families.h"
#include "agentcompile/backends/cpu/op_runner.h"
#include "agentcompile/core/rng.h"
#include "agentcompile/ir/decoder_layers.h"
#include "agentcompile/ir/graph.h"
#include "agentcompile/model/architecture.h"
#include "agentcompile/model/model.h"
#include "agentcompile/model/safetensors.h"
#include "agentcompile/model/synth_model.h"
#include "agentcompile/tuning/reference_ops.h"
#include "agentcompile/tuning/regions.h"
#include "model_test_util.h"

using namespace ac;
using namespace ac::test;

namespace {

Json moe_config(int64_t experts, int64_t top_k, int64_t layers = 4) {
  return Json{{"model_type", "qwen3_moe"}, {"hidden_size", 16},  {"intermediate_size", 24},
              {"num_hidden_layers", layers}, {"num_attention_heads", 2}, {"num_key_value_heads", 1},
              {"head_dim", 8},              {"vocab_size", 32},     {"max_position_embeddings", 128},
              {"num_experts", experts},     {"num_experts_per_tok", top_k}, {"moe_intermediate_size", 12},
              {"norm_topk_prob", true}};
}

std::vector<int64_t> sparse_of(const ModelConfig& c) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < c.num_layers; ++i)
    if (c.is_sparse_layer(i)) v.push_back(i);
  return v;
}

// Softmax in double, the picks by descending probability with the lower index first on ties.
struct NaiveRoute {
  std::vector<int> ids;
  std::vector<double> weights;
};
NaiveRoute naive_route(const std::vector<double>& logits, int k, bool renorm) {
  double mx = *std::max_element(logits.begin(), logits.end()), sum = 0;
  std::vector<double> p;
  for (double l : logits) sum += std::exp(l - mx);
  for (double l : logits) p.push_back(std::exp(l - mx) / sum);
  NaiveRoute r;
  std::vector<bool> taken(p.size(), false);
  for (int j = 0; j < k; ++j) {
    int best = -1;
    for (size_t e = 0; e < p.size(); ++e)
      if (!taken[e] && (best < 0 || p[e] > p[size_t(best)])) best = int(e);  // strict >: the lower index wins ties
    taken[size_t(best)] = true;
    r.ids.push_back(best);
    r.weights.push_back(p[size_t(best)]);
  }
  if (renorm) {
    double s = std::accumulate(r.weights.begin(), r.weights.end(), 0.0);
    for (double& w : r.weights) w /= s;
  }
  return r;
}

std::vector<float> as_f32(const TensorInfo* t) {
  std::vector<float> v(size_t(t->numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = load_as_f32(t->data, t->dtype, i);
  return v;
}

std::unique_ptr<Model> synth_and_load(const TempDir& dir, const std::string& preset, uint64_t shard_bytes = 0) {
  SynthOptions o;
  o.preset = preset;
  o.out = dir / preset;
  o.seed = 3;
  o.quiet = true;
  o.max_shard_bytes = shard_bytes;
  synth_model(o);
  return load_model(dir / preset);
}

}  // namespace

// ---- config and layer selection

TEST(MoeConfig, SparseLayersFollowDecoderSparseStepAndMlpOnlyLayers) {
  Json j = moe_config(8, 2, 6);
  EXPECT_EQ(sparse_of(parse_model_config(j, "c")), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  j["decoder_sparse_step"] = 2;  // (i + 1) % 2 == 0
  EXPECT_EQ(sparse_of(parse_model_config(j, "c")), (std::vector<int64_t>{1, 3, 5}));
  j["decoder_sparse_step"] = 3;
  j["mlp_only_layers"] = Json::array({5, 0, 40});  // an index past the last layer selects nothing (as HF)
  EXPECT_EQ(sparse_of(parse_model_config(j, "c")), (std::vector<int64_t>{2}));
  j["decoder_sparse_step"] = 1;
  j["mlp_only_layers"] = Json::array({1, 4});
  const ModelConfig c = parse_model_config(j, "c");
  EXPECT_EQ(sparse_of(c), (std::vector<int64_t>{0, 2, 3, 5}));
  EXPECT_EQ(c.sparse_layers(), 4);
  EXPECT_TRUE(c.moe.norm_topk_prob);
  j["num_experts"] = 0;  // no experts: every layer dense
  EXPECT_TRUE(sparse_of(parse_model_config(j, "c")).empty());
  j.erase("norm_topk_prob");
  j["num_experts"] = 8;
  EXPECT_FALSE(parse_model_config(j, "c").moe.norm_topk_prob);  // HF's default
}

TEST(MoeConfig, MixtralIsSparseEverywhereAndRenormalises) {
  Json j = {{"model_type", "mixtral"}, {"hidden_size", 16}, {"intermediate_size", 24}, {"num_hidden_layers", 3},
            {"num_attention_heads", 2}, {"num_key_value_heads", 1}, {"vocab_size", 32},
            {"max_position_embeddings", 128}, {"num_local_experts", 4}, {"num_experts_per_tok", 2},
            {"sliding_window", 32}, {"attention_bias", true}};
  ModelConfig c = parse_model_config(j, "c");
  EXPECT_EQ(c.arch, Arch::Mixtral);
  EXPECT_EQ(sparse_of(c), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_TRUE(c.moe.norm_topk_prob);
  EXPECT_EQ(c.moe.expert_intermediate, 24);
  EXPECT_FALSE(c.attention_bias);  // MixtralAttention has no biases whatever the config says
  EXPECT_FALSE(c.qk_norm);
  EXPECT_EQ(c.attention_window, 32);
  EXPECT_EQ(c.context_limit(), 128);  // attended as a window, not a cap on the context
  j["sliding_window"] = 128;          // as long as the context: no window
  EXPECT_EQ(parse_model_config(j, "c").attention_window, 0);
  j["sliding_window"] = nullptr;
  EXPECT_EQ(parse_model_config(j, "c").attention_window, 0);
}

TEST(MoeConfig, BadFieldsAreOneLineErrorsNamingTheField) {
  expect_bad_input([] { parse_model_config(moe_config(8, 9), "cfg.json"); },
                   {"cfg.json", "num_experts_per_tok", "9", "num_experts (8)"});
  Json j = moe_config(8, 2);
  j["decoder_sparse_step"] = 0;
  expect_bad_input([&] { parse_model_config(j, "cfg.json"); }, {"decoder_sparse_step"});
  j = moe_config(8, 2);
  j["mlp_only_layers"] = Json::array({"1"});
  expect_bad_input([&] { parse_model_config(j, "cfg.json"); }, {"mlp_only_layers", "not a layer index"});
  j = moe_config(8, 2);
  j.erase("moe_intermediate_size");
  expect_bad_input([&] { parse_model_config(j, "cfg.json"); }, {"moe_intermediate_size"});
  j = moe_config(8, 0);
  expect_bad_input([&] { parse_model_config(j, "cfg.json"); }, {"num_experts_per_tok"});
  Json m = {{"model_type", "mixtral"}, {"hidden_size", 16}, {"intermediate_size", 24}, {"num_hidden_layers", 1},
            {"num_attention_heads", 2}, {"vocab_size", 32}, {"max_position_embeddings", 128},
            {"num_local_experts", 2}, {"num_experts_per_tok", 3}};
  expect_bad_input([&] { parse_model_config(m, "cfg.json"); }, {"num_experts_per_tok", "num_local_experts (2)"});
}

TEST(MoeConfig, TensorNamesAreTheHubsPerExpertNames) {
  Json j = moe_config(2, 1, 2);
  j["mlp_only_layers"] = Json::array({1});
  std::vector<std::string> names;
  for (const auto& t : expected_tensors(parse_model_config(j, "c"))) names.push_back(t.name);
  auto has = [&](const std::string& n) { return std::find(names.begin(), names.end(), n) != names.end(); };
  EXPECT_TRUE(has("model.layers.0.mlp.gate.weight"));
  EXPECT_TRUE(has("model.layers.0.mlp.experts.1.gate_proj.weight"));
  EXPECT_TRUE(has("model.layers.0.mlp.experts.1.up_proj.weight"));
  EXPECT_TRUE(has("model.layers.0.mlp.experts.1.down_proj.weight"));
  EXPECT_FALSE(has("model.layers.0.mlp.gate_proj.weight"));
  EXPECT_TRUE(has("model.layers.1.mlp.gate_proj.weight"));  // the dense layer
  EXPECT_FALSE(has("model.layers.1.mlp.gate.weight"));
  Json m = {{"model_type", "mixtral"}, {"hidden_size", 16}, {"intermediate_size", 24}, {"num_hidden_layers", 1},
            {"num_attention_heads", 2}, {"vocab_size", 32}, {"max_position_embeddings", 128},
            {"num_local_experts", 2}, {"num_experts_per_tok", 2}};
  names.clear();
  for (const auto& t : expected_tensors(parse_model_config(m, "c"))) names.push_back(t.name);
  EXPECT_TRUE(has("model.layers.0.block_sparse_moe.gate.weight"));
  for (const char* w : {"w1", "w2", "w3"}) EXPECT_TRUE(has(std::string("model.layers.0.block_sparse_moe.experts.1.") + w + ".weight"));
}

// ---- routing

TEST(MoeRouting, SoftmaxTopKAndRenormalisation) {
  const std::vector<float> logits = {0.5f, 2.0f, -1.0f, 1.25f, 3.0f, -0.5f};
  const std::vector<double> ld(logits.begin(), logits.end());
  for (bool renorm : {false, true}) {
    int32_t ids[3];
    float w[3];
    ref::moe_route(logits.data(), 6, 3, renorm, ids, w);
    NaiveRoute want = naive_route(ld, 3, renorm);
    for (int j = 0; j < 3; ++j) {
      EXPECT_EQ(ids[j], want.ids[size_t(j)]) << j;
      EXPECT_NEAR(w[j], want.weights[size_t(j)], 1e-6) << j;
    }
    EXPECT_EQ(std::vector<int32_t>(ids, ids + 3), (std::vector<int32_t>{4, 1, 3}));  // descending probability
    const double sum = double(w[0]) + w[1] + w[2];
    if (renorm) {
      EXPECT_NEAR(sum, 1.0, 1e-6);
    } else {
      EXPECT_LT(sum, 0.95);  // the raw probabilities of the picked experts
    }
  }
}

TEST(MoeRouting, SoftmaxIsStableForLargeLogits) {
  // exp(1000) overflows f32: the max must be subtracted first.
  const float logits[4] = {1000.0f, 999.0f, -1000.0f, 998.0f};
  int32_t ids[2];
  float w[2];
  ref::moe_route(logits, 4, 2, false, ids, w);
  EXPECT_EQ(ids[0], 0);
  EXPECT_EQ(ids[1], 1);
  const double z = 1 + std::exp(-1.0) + std::exp(-2.0);
  EXPECT_NEAR(w[0], 1 / z, 1e-6);
  EXPECT_NEAR(w[1], std::exp(-1.0) / z, 1e-6);
}

TEST(MoeRouting, TiesGoToTheLowerExpertIndex) {
  const float tied[6] = {1.0f, 3.0f, 0.0f, 3.0f, -2.0f, 3.0f};
  int32_t ids[3];
  float w[3];
  ref::moe_route(tied, 6, 2, true, ids, w);
  EXPECT_EQ(ids[0], 1);
  EXPECT_EQ(ids[1], 3);
  EXPECT_FLOAT_EQ(w[0], 0.5f);
  ref::moe_route(tied, 6, 3, true, ids, w);
  EXPECT_EQ(std::vector<int32_t>(ids, ids + 3), (std::vector<int32_t>{1, 3, 5}));
  const float flat[5] = {0, 0, 0, 0, 0};
  ref::moe_route(flat, 5, 2, false, ids, w);
  EXPECT_EQ(ids[0], 0);
  EXPECT_EQ(ids[1], 1);
  EXPECT_FLOAT_EQ(w[0], 0.2f);
}

// ---- the MoeMlp op

TEST(MoeOp, CpuReferenceMatchesANaiveComputationFromTheStoredTensors) {
  TempDir dir;
  auto m = synth_and_load(dir, "tiny-qwen3-moe");
  const Graph g = build_decoder_graph(m->config, m->weights);
  const DecoderOps d = match_decoder_ops(g);
  ASSERT_EQ(d.layers.size(), 4u);
  EXPECT_EQ(d.layers[1].moe, nullptr);  // mlp_only_layers = [1]
  ASSERT_NE(d.layers[1].swiglu, nullptr);
  for (int layer : {0, 3}) {
    const Op& op = *d.layers[size_t(layer)].moe;
    ASSERT_EQ(op.kind, OpKind::MoeMlp);
    EXPECT_EQ(op.experts, 8);
    EXPECT_EQ(op.top_k, 2);
    EXPECT_TRUE(op.norm_topk);
    const int64_t n = 5, h = 64, f = 32, E = 8;
    Rng rng(17 + uint64_t(layer));
    std::vector<float> x(size_t(n * h));
    for (float& v : x) v = rng.normal();
    std::vector<float> out(size_t(n * h), NAN);
    std::map<const TensorInfo*, std::vector<float>> f32;
    std::vector<const float*> all;
    for (const TensorInfo* t : op.weights) all.push_back((f32[t] = as_f32(t)).data());
    cpu::OpArgs a;
    a.in[0] = x.data();
    a.all_w = &all;
    a.out = out.data();
    a.n = n;
    cpu::run_op(g, op, cpu::OpBinding{}, a);

    // Naive: the tensors found by their Hub names, each token in double.
    const std::string p = "model.layers." + std::to_string(layer) + ".mlp.";
    const std::vector<float> router = as_f32(m->store.find(p + "gate.weight"));
    for (int64_t t = 0; t < n; ++t) {
      const float* xt = x.data() + t * h;
      std::vector<double> logits(static_cast<size_t>(E));
      for (int64_t e = 0; e < E; ++e)
        for (int64_t i = 0; i < h; ++i) logits[size_t(e)] += double(router[size_t(e * h + i)]) * xt[i];
      NaiveRoute r = naive_route(logits, 2, true);
      std::vector<double> want(static_cast<size_t>(h), 0.0);
      for (size_t j = 0; j < r.ids.size(); ++j) {
        const std::string ep = p + "experts." + std::to_string(r.ids[j]) + ".";
        const auto gw = as_f32(m->store.find(ep + "gate_proj.weight"));
        const auto uw = as_f32(m->store.find(ep + "up_proj.weight"));
        const auto dw = as_f32(m->store.find(ep + "down_proj.weight"));
        std::vector<double> act(static_cast<size_t>(f));
        for (int64_t k = 0; k < f; ++k) {
          double gs = 0, us = 0;
          for (int64_t i = 0; i < h; ++i) {
            gs += double(gw[size_t(k * h + i)]) * xt[i];
            us += double(uw[size_t(k * h + i)]) * xt[i];
          }
          act[size_t(k)] = gs / (1 + std::exp(-gs)) * us;
        }
        for (int64_t o = 0; o < h; ++o) {
          double s = 0;
          for (int64_t k = 0; k < f; ++k) s += double(dw[size_t(o * f + k)]) * act[size_t(k)];
          want[size_t(o)] += r.weights[j] * s;
        }
      }
      double num = 0, den = 0;
      for (int64_t o = 0; o < h; ++o) {
        const double diff = double(out[size_t(t * h + o)]) - want[size_t(o)];
        num += diff * diff;
        den += want[size_t(o)] * want[size_t(o)];
      }
      EXPECT_LT(std::sqrt(num / den), 1e-5) << "layer " << layer << " token " << t;
    }
  }
}

// The CPU executor counts the experts decode steps read while asked: a one-row step reads its
// top-k in each sparse layer; a batch of three at least that and at most the union of three
// top-k; a prompt step is not counted; off stops it, on starts from zero; a dense model cannot.
TEST(MoeOp, CpuExecutorCountsTheExpertsDecodeStepsRead) {
  TempDir dir;
  auto m = synth_and_load(dir, "tiny-qwen3-moe");
  const Graph g = build_decoder_graph(m->config, m->weights);
  const int64_t sparse = m->config.sparse_layers(), k = m->config.moe.experts_per_token, E = m->config.moe.experts;
  ASSERT_EQ(sparse, 3);
  auto ex = make_cpu_executor(g, ExecutorLimits{3, 32, 32, 3});
  EXPECT_EQ(ex->expert_reads().layer_steps, 0);
  ASSERT_TRUE(ex->count_expert_reads(true));
  StepBatch prompt{{11, 12, 13, 14}, {0, 1, 2, 3}, {0, 0, 0, 0}, {3}};
  ex->forward(prompt);
  EXPECT_EQ(ex->expert_reads().layer_steps, 0) << "a prompt step is not a decode step";
  ex->forward(StepBatch{{15}, {4}, {0}, {0}});
  ExpertReads r = ex->expert_reads();
  EXPECT_EQ(r.layer_steps, sparse);
  EXPECT_EQ(r.experts, sparse * k);  // one token: its k distinct picks per layer
  ex->forward(StepBatch{{21, 305, 4000}, {5, 0, 0}, {0, 1, 2}, {0, 1, 2}});
  r = ex->expert_reads();
  EXPECT_EQ(r.layer_steps, 2 * sparse);
  const int64_t batch_experts = r.experts - sparse * k;
  EXPECT_GE(batch_experts, sparse * k);
  EXPECT_LE(batch_experts, sparse * std::min<int64_t>(E, 3 * k));
  EXPECT_GT(r.per_layer_step(), double(k));
  ASSERT_TRUE(ex->count_expert_reads(false));
  ex->forward(StepBatch{{16}, {6}, {0}, {0}});
  EXPECT_EQ(ex->expert_reads().layer_steps, 2 * sparse);
  ASSERT_TRUE(ex->count_expert_reads(true));
  EXPECT_EQ(ex->expert_reads().layer_steps, 0);
  auto dense = synth_and_load(dir, "tiny-qwen3");
  const Graph dg = build_decoder_graph(dense->config, dense->weights);
  EXPECT_FALSE(make_cpu_executor(dg, ExecutorLimits{1, 8, 8, 1})->count_expert_reads(true));
}

TEST(MoeOp, RegionsGiveASparseLayerItsOwnMlpPattern) {
  TempDir dir;
  auto m = synth_and_load(dir, "tiny-qwen3-moe");
  const Graph g = build_decoder_graph(m->config, m->weights);
  const Partition part = partition_graph(g);
  std::map<std::string, std::string> pattern;
  for (const Region& r : part.regions) pattern[r.name] = r.pattern;
  EXPECT_EQ(pattern["layers.0.mlp_in"], "rms_norm moe_mlp");
  EXPECT_EQ(pattern["layers.0.mlp_out"], "add");
  EXPECT_EQ(pattern["layers.1.mlp_in"], "rms_norm linear linear swiglu");
  EXPECT_EQ(pattern["layers.1.mlp_out"], "linear add");
  EXPECT_NE(g.to_string().find("experts=8 top_k=2 expert_intermediate=32 renormalised"), std::string::npos);
  EXPECT_EQ(cpu::mlp_spans(g).size(), 1u);  // only the dense layer has a span to fuse
}

// ---- mixtral's sliding window

TEST(SlidingWindow, ReferenceAttentionReadsOnlyTheLastWindowPositions) {
  const int64_t heads = 4, kv_heads = 2, hd = 8, kv_dim = kv_heads * hd, max_seq = 40, window = 6;
  Rng rng(5);
  std::vector<float> k(size_t(max_seq * kv_dim)), v(k.size());
  for (float& x : k) x = rng.normal();
  for (float& x : v) x = rng.normal();
  for (int32_t pos : {0, 3, 5, 6, 17, 39}) {
    std::vector<float> q(size_t(heads * hd));
    for (float& x : q) x = rng.normal();
    std::vector<float> kc = k, vc = v, out(q.size()), out_full(q.size());
    const int32_t slot = 0;
    ref::attention(q.data(), k.data() + pos * kv_dim, v.data() + pos * kv_dim, 1, &pos, &slot, heads, kv_heads, hd,
                   ref::KvCacheView{kc.data(), vc.data(), max_seq, kv_dim}, out.data(), window);
    ref::attention(q.data(), k.data() + pos * kv_dim, v.data() + pos * kv_dim, 1, &pos, &slot, heads, kv_heads, hd,
                   ref::KvCacheView{kc.data(), vc.data(), max_seq, kv_dim}, out_full.data(), 0);
    // Naive: HF's mask keeps kv > q - window.
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t kvh = h / (heads / kv_heads);
      std::vector<double> s;
      std::vector<int64_t> kept;
      for (int64_t p = 0; p <= pos; ++p) {
        if (!(p > pos - window)) continue;
        double d = 0;
        for (int64_t j = 0; j < hd; ++j) d += double(q[size_t(h * hd + j)]) * k[size_t(p * kv_dim + kvh * hd + j)];
        s.push_back(d / std::sqrt(double(hd)));
        kept.push_back(p);
      }
      const double mx = *std::max_element(s.begin(), s.end());
      double z = 0;
      for (double& x : s) z += (x = std::exp(x - mx));
      for (int64_t j = 0; j < hd; ++j) {
        double o = 0;
        for (size_t i = 0; i < kept.size(); ++i) o += s[i] / z * v[size_t(kept[i] * kv_dim + kvh * hd + j)];
        EXPECT_NEAR(out[size_t(h * hd + j)], o, 1e-5) << "pos " << pos << " head " << h;
      }
    }
    const bool inside = pos < window;  // the window holds the whole prefix: no difference
    double diff = 0;
    for (size_t i = 0; i < out.size(); ++i) diff = std::max(diff, double(std::fabs(out[i] - out_full[i])));
    if (inside) {
      EXPECT_EQ(diff, 0.0) << pos;
    } else {
      EXPECT_GT(diff, 1e-3) << pos;
    }
  }
}

TEST(SlidingWindow, BlockedAttentionFamilyHonoursTheWindow) {
  const int64_t heads = 4, kv_heads = 2, hd = 8, kv_dim = kv_heads * hd, max_seq = 64, n = 3;
  Rng rng(9);
  std::vector<float> k(size_t(2 * max_seq * kv_dim)), v(k.size()), q(size_t(n * heads * hd));
  for (float& x : k) x = rng.normal();
  for (float& x : v) x = rng.normal();
  for (float& x : q) x = rng.normal();
  const int32_t pos[n] = {50, 7, 33}, slots[n] = {0, 1, 1};
  for (int64_t window : {5, 16}) {
    std::vector<float> want(q.size()), got(q.size(), NAN);
    ref::KvCacheView view{k.data(), v.data(), max_seq, kv_dim};
    // The reference with the cached rows as "new" rows (it writes them back unchanged).
    std::vector<float> kn(size_t(n * kv_dim)), vn(kn.size());
    for (int64_t t = 0; t < n; ++t) {
      std::copy_n(k.data() + (slots[t] * max_seq + pos[t]) * kv_dim, kv_dim, kn.data() + t * kv_dim);
      std::copy_n(v.data() + (slots[t] * max_seq + pos[t]) * kv_dim, kv_dim, vn.data() + t * kv_dim);
    }
    ref::attention(q.data(), kn.data(), vn.data(), n, pos, slots, heads, kv_heads, hd, view, want.data(), window);
    for (int share : {0, 1}) {
      cpu::attention_blocked(q.data(), n, pos, slots, heads, kv_heads, hd, view, got.data(), {4, share, 2}, window);
      for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << "window " << window << " at " << i;
    }
  }
}

TEST(SlidingWindow, MixtralPrefillEqualsDecodeStepByStep) {
  TempDir dir;
  auto m = synth_and_load(dir, "tiny-mixtral");
  ASSERT_EQ(m->config.attention_window, 16);
  const Graph g = build_decoder_graph(m->config, m->weights);
  int attention_ops = 0;
  for (const Op& op : g.ops) {
    if (op.kind != OpKind::Attention) continue;
    EXPECT_EQ(op.window, 16);
    ++attention_ops;
  }
  EXPECT_EQ(attention_ops, 2);
  const int64_t T = 40;  // well past the window
  std::vector<int32_t> tokens;
  for (int64_t t = 0; t < T; ++t) tokens.push_back(int32_t((t * 7919 + 13) % 32000));
  ExecutorLimits lim;
  lim.max_slots = 1;
  lim.max_seq = 64;
  auto whole = make_cpu_executor(g, lim);
  StepBatch b;
  for (int64_t t = 0; t < T; ++t) {
    b.tokens.push_back(tokens[size_t(t)]);
    b.positions.push_back(int32_t(t));
    b.slots.push_back(0);
  }
  b.logit_rows = {int32_t(T - 1)};
  whole->forward(b);
  const std::vector<float> want(whole->logits(), whole->logits() + m->config.vocab_size);
  auto steps = make_cpu_executor(g, lim);
  for (int64_t t = 0; t < T; ++t) {
    StepBatch s{{tokens[size_t(t)]}, {int32_t(t)}, {0}, {0}};
    steps->forward(s);
  }
  double worst = 0;
  for (int64_t i = 0; i < m->config.vocab_size; ++i)
    worst = std::max(worst, double(std::fabs(steps->logits()[i] - want[size_t(i)])));
  EXPECT_LT(worst, 1e-3);
}

// ---- parameter counts

TEST(MoeCounts, Qwen3_30bA3bHasItsPublishedTotalAndActiveParameters) {
  const ModelConfig c = parse_model_config(find_synth_preset("qwen3-30b-a3b")->config, "p");
  // By hand from Qwen3MoeForCausalLM: untied embedding and lm_head; per layer attention (q, k, v,
  // o, q/k norms), two RMSNorms, the router and 128 experts of 3 x 768 x 2048; the final norm.
  const int64_t emb = 151936LL * 2048, attn = 2 * 4096LL * 2048 + 2 * 512LL * 2048 + 2 * 128 + 2 * 2048;
  const int64_t router = 128LL * 2048, expert = 3LL * 768 * 2048;
  const ParameterCounts pc = parameter_counts(c, DType::BF16);
  EXPECT_EQ(pc.total, 2 * emb + 48 * (attn + router + 128 * expert) + 2048);
  EXPECT_EQ(pc.total, 30'532'122'624);  // 30.5 B
  EXPECT_EQ(pc.active_per_token, 2 * emb + 48 * (attn + router + 8 * expert) + 2048);
  EXPECT_EQ(pc.active_per_token, 3'353'032'704);  // 3.3 B active
  // A decode step reads one embedding row, the lm_head, the attention and routers and 8 experts per layer.
  EXPECT_EQ(pc.decode_bytes, uint64_t(2048 + emb + 48 * (attn + router + 8 * expert) + 2048) * 2);
  const ParameterCounts dense = parameter_counts(parse_model_config(find_synth_preset("qwen3-1.7b")->config, "p"), DType::BF16);
  EXPECT_EQ(dense.active_per_token, dense.total);  // a dense model uses every parameter
}

TEST(MoeCounts, TinyPresetsSynthesiseWithTheirCounts) {
  TempDir dir;
  auto q = synth_and_load(dir, "tiny-qwen3-moe");
  // 3 sparse layers (router 8x64 + 8 experts of 3x32x64) and 1 dense (3x128x64), untied.
  const int64_t attn = 2 * 128 * 64 + 2 * 64 * 64 + 2 * 32 + 2 * 64;
  EXPECT_EQ(q->weights.parameters,
            2 * 151936LL * 64 + 3 * (attn + 8 * 64 + 8 * 3 * 32 * 64) + (attn + 3 * 128 * 64) + 64);
  EXPECT_EQ(q->weights.parameters, parameter_counts(q->config, DType::BF16).total);
  auto x = synth_and_load(dir, "tiny-mixtral");
  const int64_t mattn = 2 * 64 * 64 + 2 * 32 * 64 + 2 * 64;  // head_dim 64/4, no q/k norm
  EXPECT_EQ(x->weights.parameters, 2 * 32000LL * 64 + 2 * (mattn + 4 * 64 + 4 * 3 * 96 * 64) + 64);
  EXPECT_EQ(parameter_counts(x->config, DType::BF16).active_per_token,
            2 * 32000LL * 64 + 2 * (mattn + 4 * 64 + 2 * 3 * 96 * 64) + 64);
}

// ---- sharded folders and their errors

TEST(MoeShards, ShardedFolderLoadsLikeTheSingleFile) {
  TempDir dir;
  auto one = synth_and_load(dir, "tiny-qwen3-moe");
  TempDir dir2;
  auto sharded = synth_and_load(dir2, "tiny-qwen3-moe", 4u << 20);
  ASSERT_TRUE(fs::exists(dir2 / "tiny-qwen3-moe" / "model.safetensors.index.json"));
  EXPECT_FALSE(fs::exists(dir2 / "tiny-qwen3-moe" / "model.safetensors"));
  EXPECT_GE(sharded->store.files().size(), 3u);
  ASSERT_EQ(one->store.all().size(), sharded->store.all().size());
  for (const auto& [name, t] : one->store.all()) {
    const TensorInfo* s = sharded->store.find(name);
    ASSERT_NE(s, nullptr) << name;
    ASSERT_EQ(s->nbytes(), t->nbytes());
    EXPECT_EQ(std::memcmp(s->data, t->data, t->nbytes()), 0) << name;
  }
}

namespace {

// Rewrites one shard of `dir` with `edit` applied to its tensor list (and the index to match).
void edit_shard(const fs::path& dir, const std::string& tensor,
                const std::function<void(std::vector<TestTensor>&)>& edit) {
  const fs::path index_path = dir / "model.safetensors.index.json";
  Json index = parse_json_strict(read_file(index_path, 1 << 24), "index");
  const std::string file = index["weight_map"][tensor].get<std::string>();
  std::vector<TestTensor> tensors;
  {
    SafetensorsFile f(dir / file);
    for (const auto& t : f.header().tensors)
      tensors.push_back({t.name, std::string(dtype_safetensors_name(t.dtype)), t.shape,
                         std::string(reinterpret_cast<const char*>(t.data), t.nbytes())});
  }
  edit(tensors);
  Json map = Json::object();
  for (auto it = index["weight_map"].begin(); it != index["weight_map"].end(); ++it)
    if (it.value() != file) map[it.key()] = it.value();
  for (const auto& t : tensors) map[t.name] = file;
  index["weight_map"] = map;
  write_bytes(dir / file, st_file(tensors, "{\"format\":\"pt\"}"));
  write_bytes(index_path, index.dump(2));
}

}  // namespace

TEST(MoeShards, MissingExpertOrMisshapedRouterIsAnErrorNamingTheTensor) {
  TempDir dir;
  synth_and_load(dir, "tiny-qwen3-moe", 4u << 20);
  const fs::path m = dir / "tiny-qwen3-moe";
  const std::string expert = "model.layers.2.mlp.experts.5.up_proj.weight";
  const std::string router = "model.layers.3.mlp.gate.weight";

  TempDir a;  // the expert gone from its shard and from the index
  fs::copy(m, a / "m", fs::copy_options::recursive);
  edit_shard(a / "m", expert, [&](std::vector<TestTensor>& ts) {
    ts.erase(std::remove_if(ts.begin(), ts.end(), [&](const TestTensor& t) { return t.name == expert; }), ts.end());
  });
  expect_bad_input([&] { load_model(a / "m"); }, {"missing tensor", expert, "model.safetensors.index.json"});

  TempDir b;  // the index still lists it, the shard lacks it
  fs::copy(m, b / "m", fs::copy_options::recursive);
  const Json before = parse_json_strict(read_file(b / "m" / "model.safetensors.index.json", 1 << 24), "i");
  edit_shard(b / "m", expert, [&](std::vector<TestTensor>& ts) {
    ts.erase(std::remove_if(ts.begin(), ts.end(), [&](const TestTensor& t) { return t.name == expert; }), ts.end());
  });
  write_bytes(b / "m" / "model.safetensors.index.json", before.dump(2));
  expect_bad_input([&] { load_model(b / "m"); }, {expert});

  TempDir c;  // the router one expert short
  fs::copy(m, c / "m", fs::copy_options::recursive);
  edit_shard(c / "m", router, [&](std::vector<TestTensor>& ts) {
    for (auto& t : ts)
      if (t.name == router) {
        t.shape = {7, 64};
        t.bytes.resize(7 * 64 * 2);
      }
  });
  expect_bad_input([&] { load_model(c / "m"); }, {router, "[7, 64]", "expected [8, 64]"});
}
