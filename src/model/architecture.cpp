#include "agentcompile/model/architecture.h"

#include <map>
#include <set>

#include "agentcompile/core/error.h"
#include "agentcompile/core/json.h"
#include "agentcompile/model/quantization.h"

namespace ac {

namespace {
std::string layer_prefix(int64_t i) { return "model.layers." + std::to_string(i) + "."; }

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// A stored tensor HF's loaders drop without complaint: rotary caches of old llama checkpoints.
bool is_ignorable(const std::string& name) {
  return name.starts_with("model.layers.") && name.ends_with(".self_attn.rotary_emb.inv_freq");
}
}  // namespace

std::string router_tensor_name(const ModelConfig& c, int64_t layer) {
  return layer_prefix(layer) + (c.arch == Arch::Mixtral ? "block_sparse_moe.gate.weight" : "mlp.gate.weight");
}

std::string expert_tensor_name(const ModelConfig& c, int64_t layer, int64_t expert, const char* proj) {
  const std::string proj_s(proj);
  const std::string e = std::to_string(expert);
  if (c.arch == Arch::Mixtral) {
    const char* w = proj_s == "gate" ? "w1" : proj_s == "up" ? "w3" : "w2";
    return layer_prefix(layer) + "block_sparse_moe.experts." + e + "." + w + ".weight";
  }
  return layer_prefix(layer) + "mlp.experts." + e + "." + proj_s + "_proj.weight";
}

std::vector<ExpectedTensor> expected_tensors(const ModelConfig& c) {
  std::vector<ExpectedTensor> out;
  const int64_t h = c.hidden_size, q = c.q_dim(), kv = c.kv_dim(), f = c.intermediate_size;
  out.push_back({"model.embed_tokens.weight", {c.vocab_size, h}});
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const std::string p = layer_prefix(i);
    out.push_back({p + "input_layernorm.weight", {h}});
    out.push_back({p + "self_attn.q_proj.weight", {q, h}});
    out.push_back({p + "self_attn.k_proj.weight", {kv, h}});
    out.push_back({p + "self_attn.v_proj.weight", {kv, h}});
    out.push_back({p + "self_attn.o_proj.weight", {h, q}});
    if (c.attention_bias) {
      out.push_back({p + "self_attn.q_proj.bias", {q}});
      out.push_back({p + "self_attn.k_proj.bias", {kv}});
      out.push_back({p + "self_attn.v_proj.bias", {kv}});
    }
    if (c.o_proj_bias) out.push_back({p + "self_attn.o_proj.bias", {h}});
    if (c.qk_norm) {
      out.push_back({p + "self_attn.q_norm.weight", {c.head_dim}});
      out.push_back({p + "self_attn.k_norm.weight", {c.head_dim}});
    }
    out.push_back({p + "post_attention_layernorm.weight", {h}});
    if (c.is_sparse_layer(i)) {
      const int64_t fe = c.moe.expert_intermediate;
      out.push_back({router_tensor_name(c, i), {c.moe.experts, h}});
      for (int64_t e = 0; e < c.moe.experts; ++e) {
        out.push_back({expert_tensor_name(c, i, e, "gate"), {fe, h}});
        out.push_back({expert_tensor_name(c, i, e, "up"), {fe, h}});
        out.push_back({expert_tensor_name(c, i, e, "down"), {h, fe}});
      }
      continue;
    }
    out.push_back({p + "mlp.gate_proj.weight", {f, h}});
    out.push_back({p + "mlp.up_proj.weight", {f, h}});
    out.push_back({p + "mlp.down_proj.weight", {h, f}});
    if (c.mlp_bias) {
      out.push_back({p + "mlp.gate_proj.bias", {f}});
      out.push_back({p + "mlp.up_proj.bias", {f}});
      out.push_back({p + "mlp.down_proj.bias", {h}});
    }
  }
  out.push_back({"model.norm.weight", {h}});
  if (!c.tie_word_embeddings) out.push_back({"lm_head.weight", {c.vocab_size, h}});
  return out;
}

ModelWeights bind_weights(const ModelConfig& cfg, const WeightStore& store, const DequantStats* dequant) {
  ModelWeights w;
  std::map<std::string, const TensorInfo*> bound;
  for (const auto& e : expected_tensors(cfg)) {
    const TensorInfo* t = store.find(e.name);
    if (t == nullptr) throw_input(store.source().string(), "missing tensor " + json_quote(e.name));
    if (t->shape != e.shape)
      throw_input(t->file, "tensor " + json_quote(e.name) + " has shape " + t->shape_str() + ", expected " + shape_str(e.shape));
    if (!dtype_is_compute(t->dtype))
      throw_input(t->file, "tensor " + json_quote(e.name) + " has dtype " + std::string(dtype_safetensors_name(t->dtype)) +
                               " (supported: BF16, F16, F32)");
    bound[e.name] = t;
    w.parameters += t->numel();
    w.bytes += t->nbytes();
  }
  for (const auto& [name, t] : store.all()) {
    if (bound.count(name)) continue;
    if (is_ignorable(name) || (cfg.tie_word_embeddings && name == "lm_head.weight" &&
                               t->shape == std::vector<int64_t>{cfg.vocab_size, cfg.hidden_size})) {
      w.ignored.push_back(name);
      continue;
    }
    throw_input(t->file, "unexpected tensor " + json_quote(name) + " (not part of a " + std::string(arch_name(cfg.arch)) +
                             " model with this config)");
  }

  auto get = [&](const std::string& n) -> const TensorInfo* {
    auto it = bound.find(n);
    return it == bound.end() ? nullptr : it->second;
  };
  w.embed = get("model.embed_tokens.weight");
  w.final_norm = get("model.norm.weight");
  w.lm_head = cfg.tie_word_embeddings ? w.embed : get("lm_head.weight");
  for (int64_t i = 0; i < cfg.num_layers; ++i) {
    const std::string p = layer_prefix(i);
    LayerWeights l;
    l.input_norm = get(p + "input_layernorm.weight");
    l.q = get(p + "self_attn.q_proj.weight");
    l.k = get(p + "self_attn.k_proj.weight");
    l.v = get(p + "self_attn.v_proj.weight");
    l.o = get(p + "self_attn.o_proj.weight");
    l.q_bias = get(p + "self_attn.q_proj.bias");
    l.k_bias = get(p + "self_attn.k_proj.bias");
    l.v_bias = get(p + "self_attn.v_proj.bias");
    l.o_bias = get(p + "self_attn.o_proj.bias");
    l.q_norm = get(p + "self_attn.q_norm.weight");
    l.k_norm = get(p + "self_attn.k_norm.weight");
    l.post_norm = get(p + "post_attention_layernorm.weight");
    l.gate = get(p + "mlp.gate_proj.weight");
    l.up = get(p + "mlp.up_proj.weight");
    l.down = get(p + "mlp.down_proj.weight");
    l.gate_bias = get(p + "mlp.gate_proj.bias");
    l.up_bias = get(p + "mlp.up_proj.bias");
    l.down_bias = get(p + "mlp.down_proj.bias");
    if (cfg.is_sparse_layer(i)) {
      l.router = get(router_tensor_name(cfg, i));
      for (int64_t e = 0; e < cfg.moe.experts; ++e)
        l.experts.push_back({get(expert_tensor_name(cfg, i, e, "gate")), get(expert_tensor_name(cfg, i, e, "up")),
                             get(expert_tensor_name(cfg, i, e, "down"))});
    }
    w.layers.push_back(l);
  }
  if (dequant)
    for (const auto& [name, stored] : dequant->weights)
      if (auto it = bound.find(name); it != bound.end()) w.fp8.emplace(it->second, stored);
  return w;
}

ParameterCounts parameter_counts(const ModelConfig& c, DType dtype) {
  ParameterCounts pc;
  const uint64_t es = dtype_size(dtype);
  for (const auto& t : expected_tensors(c)) {
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    pc.total += n;
    if (t.name.find(".experts.") != std::string::npos) continue;  // counted per token below
    pc.active_per_token += n;
    // The embedding gathers one row per token (the lm_head, tied or not, reads the whole table).
    pc.decode_bytes += uint64_t(t.name == "model.embed_tokens.weight" ? c.hidden_size : n) * es;
  }
  if (c.tie_word_embeddings) pc.decode_bytes += uint64_t(c.vocab_size * c.hidden_size) * es;
  const int64_t per_expert = 3 * c.moe.expert_intermediate * c.hidden_size;
  const int64_t picked = c.sparse_layers() * c.moe.experts_per_token * per_expert;
  pc.active_per_token += picked;
  pc.decode_bytes += uint64_t(picked) * es;
  return pc;
}

}  // namespace ac
