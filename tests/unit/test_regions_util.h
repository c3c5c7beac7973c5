#pragma once
// Graphs for the compiler-front tests without weight files: a config (a tiny one, or a synth
// preset's real shapes) and tensor descriptions (name, shape, dtype, no data) bound by their HF
// names here, so a 4B-parameter graph costs nothing to build.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "agentcompile/tuning/target.h"
#include "agentcompile/ir/graph.h"
#include "agentcompile/model/architecture.h"
#include "agentcompile/model/hf_config.h"
#include "agentcompile/model/synth_model.h"
#include "unit/model_test_util.h"

namespace ac::test {

struct ShapeModel {
  ModelConfig config;
  std::vector<TensorInfo> tensors;  // stable storage for the pointers below
  ModelWeights weights;
  Graph graph;
};

inline std::unique_ptr<ShapeModel> shape_model(const Json& config_json, DType dtype = DType::BF16) {
  auto m = std::make_unique<ShapeModel>();
  m->config = parse_model_config(config_json, "config.json");
  const ModelConfig& c = m->config;
  auto add = [&](const std::string& name, std::vector<int64_t> shape) {
    TensorInfo t;
    t.name = name;
    t.dtype = dtype;
    t.shape = std::move(shape);
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    t.end = uint64_t(n) * dtype_size(dtype);
    m->tensors.push_back(std::move(t));
  };
  const int64_t h = c.hidden_size, q = c.q_dim(), kv = c.kv_dim(), f = c.intermediate_size;
  add("embed", {c.vocab_size, h});
  add("norm", {h});
  if (!c.tie_word_embeddings) add("lm_head", {c.vocab_size, h});
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const std::string p = "l" + std::to_string(i) + ".";
    add(p + "in_norm", {h});
    add(p + "q", {q, h});
    add(p + "k", {kv, h});
    add(p + "v", {kv, h});
    add(p + "o", {h, q});
    if (c.attention_bias) {
      add(p + "q_bias", {q});
      add(p + "k_bias", {kv});
      add(p + "v_bias", {kv});
    }
    if (c.o_proj_bias) add(p + "o_bias", {h});
    if (c.qk_norm) {
      add(p + "q_norm", {c.head_dim});
      add(p + "k_norm", {c.head_dim});
    }
    add(p + "post_norm", {h});
    add(p + "gate", {f, h});
    add(p + "up", {f, h});
    add(p + "down", {h, f});
  }
  std::map<std::string, const TensorInfo*> by;
  for (const auto& t : m->tensors) by[t.name] = &t;
  auto get = [&](const std::string& n) -> const TensorInfo* {
    auto it = by.find(n);
    return it == by.end() ? nullptr : it->second;
  };
  ModelWeights& w = m->weights;
  w.embed = get("embed");
  w.final_norm = get("norm");
  w.lm_head = c.tie_word_embeddings ? w.embed : get("lm_head");
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const std::string p = "l" + std::to_string(i) + ".";
    LayerWeights L;
    L.input_norm = get(p + "in_norm");
    L.q = get(p + "q");
    L.k = get(p + "k");
    L.v = get(p + "v");
    L.o = get(p + "o");
    L.q_bias = get(p + "q_bias");
    L.k_bias = get(p + "k_bias");
    L.v_bias = get(p + "v_bias");
    L.o_bias = get(p + "o_bias");
    L.q_norm = get(p + "q_norm");
    L.k_norm = get(p + "k_norm");
    L.post_norm = get(p + "post_norm");
    L.gate = get(p + "gate");
    L.up = get(p + "up");
    L.down = get(p + "down");
    w.layers.push_back(L);
  }
  m->graph = build_decoder_graph(m->config, m->weights);
  return m;
}

inline std::unique_ptr<ShapeModel> tiny_shape_model(const TinyShape& s, DType dtype = DType::BF16) {
  return shape_model(tiny_config(s), dtype);
}

inline std::unique_ptr<ShapeModel> preset_shape_model(const std::string& preset, DType dtype = DType::BF16) {
  const SynthPreset* p = find_synth_preset(preset);
  if (p == nullptr) throw std::runtime_error("no preset " + preset);
  return shape_model(p->config, dtype);
}

// A CPU target with fixed facts, so spaces do not depend on the machine running the tests.
inline TargetFacts test_cpu_target(int cores = 4) {
  TargetFacts t;
  t.name = "cpu";
  t.kind = "cpu";
  t.device = "test host";
  t.arch = "x86_64";
  t.origin = "host";
  t.cores = cores;
  t.simd_floats = 4;
  t.simd_registers = 16;
  t.bandwidth_gbs = 20;
  t.matmul_tflops = 0.1;
  return t;
}

}  // namespace ac::test
