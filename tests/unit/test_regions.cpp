// Regions, summaries and candidate spaces. Expected patterns, keys, FLOPs, bytes and space sizes
// are written out by hand from the HF architectures and the family rules, not taken from the code.
#include <gtest/gtest.h>

#include <set>

#include "agentcompile/backends/cuda/kernels_info.h"
#include "agentcompile/compiler/candidate_space.h"
#include "agentcompile/tuning/regions.h"
#include "agentcompile/tuning/summary.h"
#include "agentcompile/core/hash.h"
#include "agentcompile/ir/graph.h"
#include "agentcompile/model/model.h"
#include "agentcompile/model/quantization.h"
#include "agentcompile/model/synth_model.h"
#include "unit/test_regions_util.h"

namespace ac {
namespace {

using test::TinyShape;

std::vector<std::string> kinds_of(const Partition& p) {
  std::vector<std::string> v;
  for (const auto& r : p.regions) v.push_back(std::string(region_kind_name(r.kind)));
  return v;
}

const Region& region_named(const Partition& p, const std::string& name) {
  for (const auto& r : p.regions)
    if (r.name == name) return r;
  throw std::runtime_error("no region " + name);
}

std::vector<std::string> value_names(const Graph& g, const std::vector<int>& ids) {
  std::vector<std::string> v;
  for (int id : ids) v.push_back(g.value(id).name);
  return v;
}

TEST(Regions, LlamaPartitionFollowsTheDecoderLayer) {
  auto m = test::tiny_shape_model(TinyShape{"llama", 8, 16, 2, 2, 1, 4, 16});
  const Partition p = partition_graph(m->graph);
  const std::vector<std::string> layer = {"attn_in", "attention", "attn_out", "mlp_in", "mlp_out"};
  std::vector<std::string> want = {"embed"};
  for (int l = 0; l < 2; ++l) want.insert(want.end(), layer.begin(), layer.end());
  want.push_back("head");
  EXPECT_EQ(kinds_of(p), want);

  EXPECT_EQ(region_named(p, "embed").pattern, "embed");
  EXPECT_EQ(region_named(p, "layers.1.attn_in").pattern, "rms_norm linear linear linear rope rope kv_write");
  EXPECT_EQ(region_named(p, "layers.1.attention").pattern, "attention");
  EXPECT_EQ(region_named(p, "layers.1.attn_out").pattern, "linear add");
  EXPECT_EQ(region_named(p, "layers.1.mlp_in").pattern, "rms_norm linear linear swiglu");
  EXPECT_EQ(region_named(p, "layers.1.mlp_out").pattern, "linear add");
  EXPECT_EQ(region_named(p, "head").pattern, "rms_norm logits");

  // Boundaries: attn_in hands only the rotated q to attention (k and v go to the cache).
  const Graph& g = m->graph;
  EXPECT_EQ(value_names(g, region_named(p, "layers.0.attn_in").inputs), std::vector<std::string>{"hidden.0"});
  EXPECT_EQ(value_names(g, region_named(p, "layers.0.attn_in").outputs), std::vector<std::string>{"layers.0.q_rot"});
  EXPECT_EQ(value_names(g, region_named(p, "layers.0.attention").inputs), std::vector<std::string>{"layers.0.q_rot"});
  EXPECT_EQ(value_names(g, region_named(p, "layers.0.attn_out").inputs),
            (std::vector<std::string>{"layers.0.attn", "hidden.0"}));  // first-use order: o_proj, then the add
  EXPECT_EQ(value_names(g, region_named(p, "layers.0.mlp_out").outputs), std::vector<std::string>{"hidden.2"});
  EXPECT_EQ(value_names(g, region_named(p, "head").outputs), std::vector<std::string>{"logits"});

  // Every op appears once, the attention op twice (its KV write and its attending half).
  std::map<int, std::vector<StepRole>> seen;
  for (const auto& r : p.regions)
    for (const auto& s : r.steps) seen[s.op].push_back(s.role);
  ASSERT_EQ(seen.size(), g.ops.size());
  for (size_t i = 0; i < g.ops.size(); ++i) {
    if (g.ops[i].kind == OpKind::Attention)
      EXPECT_EQ(seen[int(i)], (std::vector<StepRole>{StepRole::KvWrite, StepRole::Attend}));
    else
      EXPECT_EQ(seen[int(i)].size(), 1u) << g.ops[i].name;
  }
}

TEST(Regions, ShapeKeysSpellOutShapesAndDtypes) {
  auto m = test::tiny_shape_model(TinyShape{"llama", 8, 16, 2, 2, 1, 4, 16});
  const Partition p = partition_graph(m->graph);
  const std::string tail = "|act=f32,kv=f32,acc=f32";
  EXPECT_EQ(region_named(p, "layers.0.attn_in").shape_key,
            "attn_in:rms_norm[width=8,groups=1,w=bf16] linear[in=8,out=8,w=bf16,bias=none] "
            "linear[in=8,out=4,w=bf16,bias=none] linear[in=8,out=4,w=bf16,bias=none] rope[heads=2,head_dim=4] "
            "rope[heads=1,head_dim=4] kv_write[kv_heads=1,head_dim=4]" + tail);
  EXPECT_EQ(region_named(p, "layers.0.attention").shape_key, "attention:attention[heads=2,kv_heads=1,head_dim=4]" + tail);
  EXPECT_EQ(region_named(p, "layers.0.mlp_out").shape_key, "mlp_out:linear[in=16,out=8,w=bf16,bias=none] add[width=8]" + tail);
  EXPECT_EQ(region_named(p, "head").shape_key, "head:rms_norm[width=8,groups=1,w=bf16] logits[in=8,out=16,w=bf16]" + tail);
  EXPECT_EQ(region_named(p, "embed").shape_key, "embed:embed[vocab=16,hidden=8,w=bf16]" + tail);

  const std::string key = region_named(p, "layers.0.attn_in").shape_key;
  EXPECT_EQ(region_signature(key, Phase::Decode), sha256_hex("decode|" + key).substr(0, 16));
  EXPECT_EQ(region_signature(key, Phase::Prefill), sha256_hex("prefill|" + key).substr(0, 16));
  EXPECT_NE(region_signature(key, Phase::Decode), region_signature(key, Phase::Prefill));

  Numerics bf16_acts;
  bf16_acts.activations = DType::BF16;
  EXPECT_NE(partition_graph(m->graph, bf16_acts).regions[1].shape_key, key);
}

TEST(Regions, Qwen2BiasesAreInTheKey) {
  auto m = test::tiny_shape_model(TinyShape{"qwen2", 8, 16, 1, 2, 1, 4, 16});
  const Partition p = partition_graph(m->graph);
  const Region& a = region_named(p, "layers.0.attn_in");
  EXPECT_EQ(a.pattern, "rms_norm linear linear linear rope rope kv_write");
  EXPECT_NE(a.shape_key.find("linear[in=8,out=8,w=bf16,bias=bf16] linear[in=8,out=4,w=bf16,bias=bf16] "
                             "linear[in=8,out=4,w=bf16,bias=bf16]"),
            std::string::npos)
      << a.shape_key;
  // qwen2 has no o_proj bias
  EXPECT_NE(region_named(p, "layers.0.attn_out").shape_key.find("linear[in=8,out=8,w=bf16,bias=none]"), std::string::npos);
  auto llama = test::tiny_shape_model(TinyShape{"llama", 8, 16, 1, 2, 1, 4, 16});
  EXPECT_NE(partition_graph(llama->graph).regions[1].shape_key, a.shape_key);
}

TEST(Regions, Qwen3QkNormIsPartOfAttnIn) {
  auto m = test::tiny_shape_model(TinyShape{"qwen3", 8, 16, 2, 2, 1, 4, 16});
  const Partition p = partition_graph(m->graph);
  const Region& a = region_named(p, "layers.1.attn_in");
  EXPECT_EQ(a.pattern, "rms_norm linear linear linear rms_norm rms_norm rope rope kv_write");
  EXPECT_NE(a.shape_key.find("rms_norm[width=8,groups=2,w=bf16] rms_norm[width=4,groups=1,w=bf16]"), std::string::npos)
      << a.shape_key;
  EXPECT_EQ(p.regions.size(), 1u + 2 * 5 + 1);
}

TEST(Regions, IdenticalLayersShareAClassAndModelsShareSignatures) {
  auto two = test::tiny_shape_model(TinyShape{"qwen3", 8, 16, 2, 2, 1, 4, 16});
  auto three = test::tiny_shape_model(TinyShape{"qwen3", 8, 16, 3, 2, 1, 4, 16});
  const Partition p2 = partition_graph(two->graph), p3 = partition_graph(three->graph);
  ASSERT_EQ(p2.classes.size(), 7u);
  for (const auto& c : p2.classes) {
    const bool per_layer = c.kind != RegionKind::Embed && c.kind != RegionKind::Head;
    EXPECT_EQ(c.members.size(), per_layer ? 2u : 1u) << region_kind_name(c.kind);
  }
  ASSERT_EQ(p3.classes.size(), 7u);
  for (size_t i = 0; i < 7; ++i) EXPECT_EQ(p2.classes[i].shape_key, p3.classes[i].shape_key);
  // The same model in f32 is a different specialisation.
  auto f32 = test::tiny_shape_model(TinyShape{"qwen3", 8, 16, 2, 2, 1, 4, 16}, DType::F32);
  EXPECT_NE(partition_graph(f32->graph).classes[1].shape_key, p2.classes[1].shape_key);
}

TEST(Regions, RealFolderPartitionsLikeTheShapeModel) {
  test::TempDir dir;
  TinyShape s{"qwen2", 8, 16, 2, 2, 1, 4, 16};
  test::write_bytes(dir / "config.json", test::tiny_config(s).dump());
  test::write_bytes(dir / "model.safetensors", test::st_file(test::tiny_tensors(s)));
  auto model = load_model(dir.path());
  const Graph g = build_decoder_graph(model->config, model->weights);
  auto shape = test::tiny_shape_model(s);
  const Partition a = partition_graph(g), b = partition_graph(shape->graph);
  ASSERT_EQ(a.classes.size(), b.classes.size());
  for (size_t i = 0; i < a.classes.size(); ++i) EXPECT_EQ(a.classes[i].shape_key, b.classes[i].shape_key);
}

// ---- summaries ----

TEST(Summary, FlopsAndBytesByHand) {
  // hidden 8, heads 2, kv_heads 1, head_dim 4 -> q_dim 8, kv_dim 4; bf16 weights, f32 activations.
  auto m = test::tiny_shape_model(TinyShape{"llama", 8, 16, 1, 2, 1, 4, 16});
  const Partition p = partition_graph(m->graph);
  const TargetFacts t = named_target("h200");
  auto summary = [&](RegionKind k, Phase ph, ShapePoint pt) {
    for (size_t c = 0; c < p.classes.size(); ++c)
      if (p.classes[c].kind == k) return summarize_region(m->graph, p, c, ph, pt, t);
    throw std::runtime_error("no class");
  };
  // attn_in, decode, 1 token: norm 4*8, q 2*8*8, k and v 2*8*4, rope 3*8 + 3*4.
  RegionSummary s = summary(RegionKind::AttnIn, Phase::Decode, decode_point(1, 256));
  EXPECT_DOUBLE_EQ(s.cost.flops, 32 + 128 + 64 + 64 + 24 + 12);
  EXPECT_DOUBLE_EQ(s.cost.weight_bytes, (8 + 64 + 32 + 32) * 2);
  EXPECT_DOUBLE_EQ(s.cost.activation_bytes, 8 * 4 + 8 * 4);  // hidden in, q out
  EXPECT_DOUBLE_EQ(s.cost.kv_bytes, 2 * 4 * 4);               // one k and one v row
  EXPECT_EQ(s.instances, std::vector<std::string>{"layers.0.attn_in"});
  EXPECT_EQ(s.weight_dtype, "bf16");

  // attention, decode at context 256: heads * (4 hd + 5) * context; K and V rows read once.
  s = summary(RegionKind::Attention, Phase::Decode, decode_point(1, 256));
  EXPECT_DOUBLE_EQ(s.cost.flops, 2.0 * 21 * 256);
  EXPECT_DOUBLE_EQ(s.cost.kv_bytes, 2.0 * 256 * 4 * 4);
  EXPECT_EQ(s.weight_dtype, "none");
  // prefill of 128 tokens: token t sees t + 1 positions.
  s = summary(RegionKind::Attention, Phase::Prefill, prefill_point(128));
  EXPECT_DOUBLE_EQ(s.cost.flops, 2.0 * 21 * (128.0 * 129 / 2));
  EXPECT_DOUBLE_EQ(s.cost.kv_bytes, 2.0 * 128 * 4 * 4);

  // head, prefill: the norm runs over every token, the lm_head over one row per sequence.
  s = summary(RegionKind::Head, Phase::Prefill, prefill_point(128));
  EXPECT_DOUBLE_EQ(s.cost.flops, 4.0 * 128 * 8 + 2.0 * 1 * 8 * 16);
  EXPECT_DOUBLE_EQ(s.cost.activation_bytes, 128 * 8 * 4 + 1 * 16 * 4);
  EXPECT_EQ(s.roof.bound, "memory");
  EXPECT_NEAR(s.roof.time_us, s.cost.bytes() / 4000e9 * 1e6, 1e-12);

  // The unfused route moves the intermediate values too.
  s = summary(RegionKind::MlpIn, Phase::Decode, decode_point(1, 256));
  EXPECT_GT(s.cost.unfused_bytes, s.cost.bytes());
}

// FP8 projections count as stored (one byte per weight and the scales), not as the f32 the CPU
// runs them as: the achieved GB/s of an FP8 region in the compile report is against these bytes.
// The same for an FP8 mixture of experts' experts.
TEST(Summary, Fp8WeightsCountAsStored) {
  for (const char* preset : {"tiny-qwen3", "tiny-qwen3-moe"}) {
    SynthOptions so{preset, {}, 5, DType::BF16, {}, true};
    so.weights = "fp8-channel";
    auto m = synth_model_in_memory(so);
    const Graph g = build_decoder_graph(m->config, m->weights);
    ASSERT_FALSE(g.fp8.empty());
    const Partition p = partition_graph(g);
    const TargetFacts t = named_target("h200");
    bool checked = false;
    for (size_t c = 0; c < p.classes.size(); ++c) {
      const RegionKind kind = p.classes[c].kind;
      if (kind != RegionKind::AttnIn && kind != RegionKind::MlpIn) continue;
      const RegionSummary sum = summarize_region(g, p, c, Phase::Decode, decode_point(1, 64), t);
      // The region's ops' weights, each FP8 one at its stored bytes; a sparse layer's experts at
      // top_k of them per token (one token here).
      double want = 0, as_f32 = 0;
      const Region& r = p.regions.at(size_t(sum.representative));
      for (const RegionStep& st : r.steps) {
        const Op& op = g.ops.at(size_t(st.op));
        double op_want = 0, op_f32 = 0;
        for (const TensorInfo* w : op.weights) {
          op_f32 += double(w->nbytes());
          const auto it = g.fp8.find(w);
          op_want += it != g.fp8.end() ? double(it->second->stored_bytes) : double(w->nbytes());
        }
        if (op.kind == OpKind::MoeMlp) {  // the router, then top_k of the E experts' shares
          const double router = double(op.weights.at(0)->nbytes()), k = double(op.top_k), e = double(op.experts);
          op_want = router + k * (op_want - router) / e;
          op_f32 = router + k * (op_f32 - router) / e;
        }
        want += op_want;
        as_f32 += op_f32;
      }
      EXPECT_NEAR(sum.cost.weight_bytes, want, 1e-6 * want) << preset << " " << region_kind_name(kind);
      EXPECT_LT(sum.cost.weight_bytes, as_f32 / 2) << preset << " " << region_kind_name(kind);
      checked = true;
    }
    EXPECT_TRUE(checked) << preset;
  }
}

TEST(Summary, DecodeRooflineOfRealShapesMatchesTheWeightStreamingFloor) {
  // DESIGN.md: weight bytes / 4.0 TB/s is 0.61 ms/token for Llama-3.2-1B and 0.86 for Qwen3-1.7B;
  // the KV cache at 256 positions and the activations add about one percent.
  for (auto [preset, floor_ms] : {std::pair<std::string, double>{"llama-3.2-1b", 0.61}, {"qwen3-1.7b", 0.86}}) {
    auto m = test::preset_shape_model(preset);
    const Partition p = partition_graph(m->graph);
    double us = 0;
    for (size_t c = 0; c < p.classes.size(); ++c) {
      RegionSummary s = summarize_region(m->graph, p, c, Phase::Decode, decode_point(1, 256), named_target("h200"));
      ASSERT_TRUE(s.roof.known);
      us += s.roof.time_us * double(s.instances.size());
    }
    EXPECT_GT(us / 1000, floor_ms * 0.98) << preset;
    EXPECT_LT(us / 1000, floor_ms * 1.06) << preset;
  }
}

TEST(Summary, JsonCarriesTheDocumentedFields) {
  auto m = test::tiny_shape_model(TinyShape{"qwen3", 8, 16, 1, 2, 1, 4, 16});
  const Partition p = partition_graph(m->graph);
  const Json j = summarize_region(m->graph, p, 1, Phase::Decode, decode_point(1, 64), named_target("a100")).to_json();
  for (const char* k : {"region", "phase", "signature", "shape_key", "pattern", "instances", "dims", "dtypes", "steps",
                        "interface", "point", "flops", "bytes", "arithmetic_intensity", "roofline", "target"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_EQ(j["region"], "attn_in");
  EXPECT_EQ(j["target"]["sm_count"], 108);
  EXPECT_EQ(j["target"]["arch"], "sm_80");
  EXPECT_EQ(j["target"]["bandwidth_measured"], false);
  // Interface: hidden in, q out, positions and slots, both caches written.
  const Json& itf = j["interface"];
  std::set<std::string> in, state;
  for (const auto& t : itf["inputs"]) in.insert(t["name"]);
  for (const auto& t : itf["state"]) state.insert(t["name"].get<std::string>() + ":" + t["access"].get<std::string>().substr(0, 5));
  EXPECT_EQ(in, (std::set<std::string>{"hidden.0", "positions", "slots"}));
  EXPECT_EQ(itf["outputs"][0]["name"], "q_rot");
  EXPECT_EQ(itf["outputs"][0]["shape"], Json::array({"tokens", 8}));
  EXPECT_EQ(state, (std::set<std::string>{"k_cache:write", "v_cache:write"}));
}

TEST(Target, NamedTargetsAndErrors) {
  const TargetFacts h = named_target("h200");
  EXPECT_EQ(h.sm_count, 132);
  EXPECT_TRUE(h.bandwidth_measured);
  EXPECT_DOUBLE_EQ(h.bandwidth_gbs, 4000);
  EXPECT_DOUBLE_EQ(h.matmul_tflops, 790);
  EXPECT_DOUBLE_EQ(h.datasheet_bandwidth_gbs, 4800);
  const TargetFacts a = named_target("h100");
  EXPECT_FALSE(a.bandwidth_measured);
  EXPECT_DOUBLE_EQ(a.bandwidth_gbs, 3350);
  EXPECT_GT(named_target("cpu").cores, 0);
  test::expect_bad_input([] { named_target("v100"); }, {"--target", "v100", "h200"});
  test::expect_bad_input([] { resolve_target("h200", "cpu", false, nullptr); }, {"--target", "cpu"});
  test::expect_bad_input([] { resolve_target("cpu", "cuda", false, nullptr); }, {"--target", "GPU"});
}

TEST(Target, OnlyADetectedGpuHasItsCeilingsMeasured) {
  // A table row or the host: nothing measured, the facts unchanged, the reason given (no GPU is
  // touched, so this runs everywhere).
  for (TargetFacts t : {named_target("h200"), host_cpu_target(false)}) {
    const Json before = t.to_json();
    std::string why;
    EXPECT_FALSE(measure_gpu_ceilings(&t, &why));
    EXPECT_FALSE(why.empty());
    EXPECT_EQ(t.to_json(), before);
    EXPECT_FALSE(before.contains("read_gbs"));
  }
}

TEST(Target, MeasuredHostCpuHasPlausibleCeilings) {
  const TargetFacts t = host_cpu_target(true);
  EXPECT_TRUE(t.bandwidth_measured);
  EXPECT_GT(t.bandwidth_gbs, 0.1);
  EXPECT_LT(t.bandwidth_gbs, 5000);
  EXPECT_GT(t.matmul_tflops, 1e-4);
}

// ---- candidate spaces ----

struct SpaceCase {
  std::unique_ptr<test::ShapeModel> m;
  Partition p;
};

CandidateSpace space_for(const test::ShapeModel& m, const Partition& p, RegionKind k, Phase ph, ShapePoint pt,
                         const TargetFacts& t, const std::string& backend) {
  for (size_t c = 0; c < p.classes.size(); ++c)
    if (p.classes[c].kind == k) return build_candidate_space(m.graph, p, summarize_region(m.graph, p, c, ph, pt, t), backend);
  throw std::runtime_error("no class");
}

TEST(CandidateSpace, CpuSizesFollowTheFamilyRules) {
  auto m = test::tiny_shape_model(TinyShape{"llama", 8, 16, 1, 2, 1, 4, 16});
  const Partition p = partition_graph(m->graph);
  const TargetFacts t = test::test_cpu_target(4);

  // attn_in decode: linear.blocked over q (out 8), k and v (out 4), one token, 4 cores, 16 registers of 4 floats.
  // TOKENS = 1; THREADS <= min(4 cores, ceil(4 / ROWS)); ROWS * KUNROLL <= 64.
  //   ROWS 1: KUNROLL 4,8,16 x THREADS 1,2,4 = 9;  ROWS 2: 3 x {1,2} = 6;  ROWS 4: 3 x {1} = 3;
  //   ROWS 8: KUNROLL 4,8 x {1} = 2.  20 + the fallback.
  CandidateSpace s = space_for(*m, p, RegionKind::AttnIn, Phase::Decode, decode_point(1, 256), t, "cpu");
  ASSERT_EQ(s.families.size(), 2u);
  EXPECT_EQ(s.families[0].id, "cpu:fallback");
  EXPECT_EQ(s.families[1].id, "cpu:linear.blocked");
  EXPECT_EQ(s.families[1].applies_to, (std::vector<std::string>{"q_proj", "k_proj", "v_proj"}));
  EXPECT_EQ(s.families[1].raw_points, 4u * 3 * 3 * 7);
  EXPECT_EQ(s.size(), 21u);

  // attention decode at context 256 (heads 2, kv_heads 1): BLOCK_KV all 5; GQA_SHARE 0 -> 2 items -> THREADS 1,2;
  // GQA_SHARE 1 -> 1 item -> THREADS 1.  5 x 3 = 15 + 1.
  s = space_for(*m, p, RegionKind::Attention, Phase::Decode, decode_point(1, 256), t, "cpu");
  EXPECT_EQ(s.families[1].id, "cpu:attention.blocked");
  EXPECT_EQ(s.size(), 16u);
  // context 20: BLOCK_KV 16 only (32.. exceed it; the smallest block stays) -> 1 x 3 + 1.
  s = space_for(*m, p, RegionKind::Attention, Phase::Decode, decode_point(1, 20), t, "cpu");
  EXPECT_EQ(s.size(), 4u);

  // embed has only its fallback on the CPU; attn_out tunes its o_proj.
  EXPECT_EQ(space_for(*m, p, RegionKind::Embed, Phase::Decode, decode_point(1, 256), t, "cpu").size(), 1u);
  EXPECT_EQ(space_for(*m, p, RegionKind::AttnOut, Phase::Decode, decode_point(1, 256), t, "cpu").families.size(), 2u);

  // prefill of 128 tokens lets TOKENS 2 and 4 in.
  s = space_for(*m, p, RegionKind::MlpIn, Phase::Prefill, prefill_point(128), t, "cpu");
  const FamilySpace& lin = s.families[1];
  std::set<int> tokens;
  for (const auto& pt : family_points(lin)) tokens.insert(pt.at("TOKENS"));
  EXPECT_EQ(tokens, (std::set<int>{1, 2, 4}));

  test::expect_bad_input([&] { space_for(*m, p, RegionKind::Embed, Phase::Decode, decode_point(1, 1), t, "tpu"); },
                         {"--backend", "tpu"});
}

TEST(CandidateSpace, EnumerationMatchesCountsAndConstraints) {
  auto m = test::preset_shape_model("qwen3-1.7b");
  const Partition p = partition_graph(m->graph);
  for (const std::string backend : {"cpu", "cuda"}) {
    const TargetFacts t = backend == "cpu" ? test::test_cpu_target(8) : named_target("h200");
    for (size_t c = 0; c < p.classes.size(); ++c)
      for (Phase ph : {Phase::Decode, Phase::Prefill}) {
        const RegionSummary s =
            summarize_region(m->graph, p, c, ph, ph == Phase::Decode ? decode_point(4, 512) : prefill_point(64), t);
        const CandidateSpace sp = build_candidate_space(m->graph, p, s, backend);
        ASSERT_FALSE(sp.families.empty());
        EXPECT_EQ(sp.families[0].route, FamilyRoute::Fallback);
        size_t total = 0;
        for (const auto& f : sp.families) {
          const auto pts = family_points(f);
          EXPECT_EQ(pts.size(), f.valid_points) << f.id;
          EXPECT_LE(f.valid_points, f.raw_points) << f.id;
          std::set<ParamPoint> distinct(pts.begin(), pts.end());
          EXPECT_EQ(distinct.size(), pts.size()) << f.id;
          for (const auto& pt : pts) {
            if (f.constraint) {
              EXPECT_EQ(f.constraint(pt), "") << f.id;
            }
            for (const auto& d : f.params) EXPECT_NE(std::find(d.values.begin(), d.values.end(), pt.at(d.name)), d.values.end());
          }
          total += pts.size();
        }
        EXPECT_EQ(total, sp.size());
        EXPECT_EQ(sp.to_json()["size"], sp.size());
      }
  }
}

TEST(CandidateSpace, CudaFamiliesAreTheFastPathsOnDecodeRegions) {
  if (!cuda_backend_built()) GTEST_SKIP() << "no CUDA backend in this build";
  // The CUDA backend offers, per decode region, the family its executor runs there (so every
  // family listed is searched), bound to the target's architecture; a prompt step's projections
  // list cuda:gemm.lt and our own GEMMs, its other regions but the attention the fallback alone, saying why.
  auto m = test::preset_shape_model("qwen3-1.7b");
  const Partition p = partition_graph(m->graph);
  auto ids = [](const CandidateSpace& sp) {
    std::vector<std::string> v;
    for (const auto& f : sp.families) v.push_back(f.id);
    return v;
  };
  using V = std::vector<std::string>;
  const TargetFacts h200 = named_target("h200"), a100 = named_target("a100");
  EXPECT_EQ(ids(space_for(*m, p, RegionKind::Attention, Phase::Decode, decode_point(1, 256), h200, "cuda")),
            (V{"cuda:fallback", "cuda:attn_decode.cluster"}));
  EXPECT_EQ(ids(space_for(*m, p, RegionKind::Attention, Phase::Decode, decode_point(1, 1024), h200, "cuda")),
            (V{"cuda:fallback", "cuda:attn_decode.fused"}));
  EXPECT_EQ(ids(space_for(*m, p, RegionKind::Attention, Phase::Decode, decode_point(1, 256), a100, "cuda")),
            (V{"cuda:fallback", "cuda:attn_decode.fused"}));  // no thread block clusters before sm_90
  EXPECT_EQ(ids(space_for(*m, p, RegionKind::AttnIn, Phase::Decode, decode_point(1, 256), h200, "cuda")),
            (V{"cuda:fallback", "cuda:gemv.fused"}));
  EXPECT_EQ(ids(space_for(*m, p, RegionKind::MlpOut, Phase::Decode, decode_point(8, 256), h200, "cuda")),
            (V{"cuda:fallback", "cuda:gemv.mma"}));  // batches run on the tensor cores
  const CandidateSpace gemv = space_for(*m, p, RegionKind::MlpIn, Phase::Decode, decode_point(1, 256), h200, "cuda");
  ASSERT_EQ(gemv.families.size(), 2u);
  EXPECT_EQ(gemv.families[1].applies_to, gemv.families[0].applies_to);
  EXPECT_GT(gemv.families[1].valid_points, 1u);
  for (const auto& pt : family_points(gemv.families[1])) EXPECT_EQ(pt.at("SPLITK"), 1) << "split-K needs the residual epilogue";
  // A prompt step's projection: cublasGemmEx (the fallback), a rank of cuBLASLt's heuristic list, or
  // a point of our own GEMMs (gemm.wgmma on sm_90, gemm.mma on sm_80 on).
  const CandidateSpace pre = space_for(*m, p, RegionKind::AttnIn, Phase::Prefill, prefill_point(64), h200, "cuda");
  EXPECT_EQ(ids(pre), (V{"cuda:fallback", "cuda:gemm.lt", "cuda:gemm.wgmma", "cuda:gemm.mma"}));
  EXPECT_EQ(pre.families[1].valid_points, 8u);  // the list's first eight (kLtAlgorithms)
  EXPECT_EQ(ids(space_for(*m, p, RegionKind::MlpIn, Phase::Prefill, prefill_point(64), h200, "cuda")),
            (V{"cuda:fallback", "cuda:gemm.lt", "cuda:gemm.wgmma", "cuda:gemm.mma"}));  // SwiGLU fused
  EXPECT_EQ(ids(space_for(*m, p, RegionKind::AttnOut, Phase::Prefill, prefill_point(64), a100, "cuda")),
            (V{"cuda:fallback", "cuda:gemm.lt", "cuda:gemm.mma"}));
  // Its lm_head and norms run fixed kernels: the fallback alone, with a note.
  const CandidateSpace head = space_for(*m, p, RegionKind::Head, Phase::Prefill, prefill_point(64), h200, "cuda");
  EXPECT_EQ(ids(head), V{"cuda:fallback"});
  ASSERT_FALSE(head.notes.empty());
  EXPECT_NE(head.notes.front().find("prefill"), std::string::npos) << head.notes.front();
}

}  // namespace
}  // namespace ac
