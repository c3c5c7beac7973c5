// config + bound weights -> the decoder graph (HF's LlamaDecoderLayer / Qwen2 / Qwen3 order; a
// sparse layer of qwen3_moe / mixtral has one MoeMlp op where a dense one has gate/up/SwiGLU/down).
#include "agentcompile/ir/graph.h"

namespace ac {

namespace {

class Builder {
 public:
  explicit Builder(Graph& g) : g_(g) {}

  int value(const std::string& name, int64_t width) {
    int id = static_cast<int>(g_.values.size());
    g_.values.push_back({id, name, width});
    return id;
  }

  int op(OpKind kind, const std::string& name, int layer, std::vector<int> inputs, int64_t out_width,
         std::vector<const TensorInfo*> weights, const std::string& out_name) {
    Op o{kind, name, layer, std::move(inputs), value(out_name, out_width), {}, 1, 0.0f, 0, 0, 0};
    for (const TensorInfo* w : weights)
      if (w != nullptr) o.weights.push_back(w);
    g_.ops.push_back(std::move(o));
    return g_.ops.back().output;
  }
  Op& last() { return g_.ops.back(); }

 private:
  Graph& g_;
};

}  // namespace

Graph build_decoder_graph(const ModelConfig& c, const ModelWeights& w) {
  Graph g;
  g.config = c;
  Builder b(g);
  const float eps = static_cast<float>(c.rms_norm_eps);
  int x = b.op(OpKind::Embed, "embed_tokens", -1, {}, c.hidden_size, {w.embed}, "hidden.0");
  for (int64_t li = 0; li < c.num_layers; ++li) {
    const LayerWeights& L = w.layers[static_cast<size_t>(li)];
    const int l = static_cast<int>(li);
    const std::string p = "layers." + std::to_string(li) + ".";
    int h = b.op(OpKind::RmsNorm, p + "input_layernorm", l, {x}, c.hidden_size, {L.input_norm}, p + "attn_in");
    b.last().eps = eps;
    int q = b.op(OpKind::Linear, p + "q_proj", l, {h}, c.q_dim(), {L.q, L.q_bias}, p + "q");
    int k = b.op(OpKind::Linear, p + "k_proj", l, {h}, c.kv_dim(), {L.k, L.k_bias}, p + "k");
    int v = b.op(OpKind::Linear, p + "v_proj", l, {h}, c.kv_dim(), {L.v, L.v_bias}, p + "v");
    if (c.qk_norm) {  // qwen3: RMSNorm over each head before rope
      q = b.op(OpKind::RmsNorm, p + "q_norm", l, {q}, c.q_dim(), {L.q_norm}, p + "q_normed");
      b.last().eps = eps;
      b.last().groups = c.num_heads;
      k = b.op(OpKind::RmsNorm, p + "k_norm", l, {k}, c.kv_dim(), {L.k_norm}, p + "k_normed");
      b.last().eps = eps;
      b.last().groups = c.num_kv_heads;
    }
    q = b.op(OpKind::Rope, p + "rope_q", l, {q}, c.q_dim(), {}, p + "q_rot");
    b.last().heads = c.num_heads;
    b.last().head_dim = c.head_dim;
    k = b.op(OpKind::Rope, p + "rope_k", l, {k}, c.kv_dim(), {}, p + "k_rot");
    b.last().heads = c.num_kv_heads;
    b.last().head_dim = c.head_dim;
    int a = b.op(OpKind::Attention, p + "attention", l, {q, k, v}, c.q_dim(), {}, p + "attn");
    b.last().heads = c.num_heads;
    b.last().kv_heads = c.num_kv_heads;
    b.last().head_dim = c.head_dim;
    b.last().window = c.attention_window;
    int o = b.op(OpKind::Linear, p + "o_proj", l, {a}, c.hidden_size, {L.o, L.o_bias}, p + "attn_out");
    x = b.op(OpKind::Add, p + "attn_residual", l, {x, o}, c.hidden_size, {}, "hidden." + std::to_string(2 * li + 1));
    h = b.op(OpKind::RmsNorm, p + "post_attention_layernorm", l, {x}, c.hidden_size, {L.post_norm}, p + "mlp_in");
    b.last().eps = eps;
    if (c.is_sparse_layer(li)) {
      std::vector<const TensorInfo*> ws{L.router};
      for (const ExpertWeights& e : L.experts) ws.insert(ws.end(), {e.gate, e.up, e.down});
      int moe = b.op(OpKind::MoeMlp, p + "moe", l, {h}, c.hidden_size, ws, p + "mlp_out");
      b.last().experts = c.moe.experts;
      b.last().top_k = c.moe.experts_per_token;
      b.last().expert_inter = c.moe.expert_intermediate;
      b.last().norm_topk = c.moe.norm_topk_prob;
      x = b.op(OpKind::Add, p + "mlp_residual", l, {x, moe}, c.hidden_size, {}, "hidden." + std::to_string(2 * li + 2));
      continue;
    }
    int gt = b.op(OpKind::Linear, p + "gate_proj", l, {h}, c.intermediate_size, {L.gate, L.gate_bias}, p + "gate");
    int up = b.op(OpKind::Linear, p + "up_proj", l, {h}, c.intermediate_size, {L.up, L.up_bias}, p + "up");
    int act = b.op(OpKind::SwiGlu, p + "swiglu", l, {gt, up}, c.intermediate_size, {}, p + "act");
    int d = b.op(OpKind::Linear, p + "down_proj", l, {act}, c.hidden_size, {L.down, L.down_bias}, p + "mlp_out");
    x = b.op(OpKind::Add, p + "mlp_residual", l, {x, d}, c.hidden_size, {}, "hidden." + std::to_string(2 * li + 2));
  }
  int n = b.op(OpKind::RmsNorm, "norm", -1, {x}, c.hidden_size, {w.final_norm}, "final");
  b.last().eps = eps;
  g.logits = b.op(OpKind::Logits, "lm_head", -1, {n}, c.vocab_size, {w.lm_head}, "logits");
  for (const Op& op : g.ops)
    for (const TensorInfo* t : op.weights)
      if (auto it = w.fp8.find(t); it != w.fp8.end()) g.fp8.emplace(t, it->second);
  return g;
}

}  // namespace ac
