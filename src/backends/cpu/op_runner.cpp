#include "agentcompile/backends/cpu/op_runner.h"

#include <algorithm>

#include "agentcompile/tuning/reference_ops.h"
#include "agentcompile/core/error.h"
#include "agentcompile/ir/decoder_layers.h"

namespace ac::cpu {

namespace {

void linear_any(const OpBinding& b, const float* x, int64_t n, int64_t in, const float* w, const float* bias,
                int64_t out_dim, float* out) {
  if (b.kind == OpBinding::Kind::LinearBlocked) linear_blocked(x, n, in, w, bias, out_dim, out, b.linear);
  else if (b.kind == OpBinding::Kind::Reference) ref::linear(x, n, in, w, bias, out_dim, out);
  else throw_internal("cpu op", "attention.blocked bound to a linear op");
}

void attention_op(const Op& op, const OpBinding& b, const OpArgs& a, AttentionPart part) {
  const int64_t kv_dim = op.kv_heads * op.head_dim;
  const bool blocked = b.kind == OpBinding::Kind::AttentionBlocked;
  if (b.kind == OpBinding::Kind::LinearBlocked) throw_internal("cpu op", "linear.blocked bound to an attention op");
  if (part == AttentionPart::Write) {
    kv_write(a.in[1], a.in[2], a.n, a.positions, a.slots, a.kv);
    return;
  }
  if (part == AttentionPart::Whole && !blocked) {
    ref::attention(a.in[0], a.in[1], a.in[2], a.n, a.positions, a.slots, op.heads, op.kv_heads, op.head_dim, a.kv, a.out,
                   op.window);
    return;
  }
  if (part == AttentionPart::Whole) kv_write(a.in[1], a.in[2], a.n, a.positions, a.slots, a.kv);
  if (blocked) {
    attention_blocked(a.in[0], a.n, a.positions, a.slots, op.heads, op.kv_heads, op.head_dim, a.kv, a.out, b.attention,
                      op.window);
    return;
  }
  // Reference attend over rows already cached: hand the reference op the cached rows as "new"
  // rows (it writes them back unchanged).
  std::vector<float> k(size_t(a.n * kv_dim)), v(k.size());
  for (int64_t t = 0; t < a.n; ++t) {
    const int64_t row = (int64_t(a.slots[t]) * a.kv.max_seq + a.positions[t]) * kv_dim;
    std::copy_n(a.kv.k + row, kv_dim, k.data() + t * kv_dim);
    std::copy_n(a.kv.v + row, kv_dim, v.data() + t * kv_dim);
  }
  ref::attention(a.in[0], k.data(), v.data(), a.n, a.positions, a.slots, op.heads, op.kv_heads, op.head_dim, a.kv, a.out,
                 op.window);
}

// The router and experts of a MoeMlp op (weights: router, then gate, up, down per expert).
void moe_op(const Graph& g, const Op& op, const OpArgs& a) {
  const std::vector<const float*>* w = a.all_w;
  if (w == nullptr || int64_t(w->size()) != 1 + 3 * op.experts)
    throw_internal("cpu op " + op.name, "expert weights not given");
  std::vector<ref::ExpertView> experts(size_t(op.experts));
  for (int64_t e = 0; e < op.experts; ++e)
    experts[size_t(e)] = {(*w)[size_t(1 + 3 * e)], (*w)[size_t(2 + 3 * e)], (*w)[size_t(3 + 3 * e)]};
  if (a.picks) a.picks->assign(size_t(a.n * op.top_k), 0);
  ref::moe_mlp(a.in[0], a.n, g.value(op.output).width, (*w)[0], experts, op.expert_inter, op.top_k, op.norm_topk, a.out,
               a.picks ? a.picks->data() : nullptr);
}

}  // namespace

void run_op(const Graph& g, const Op& op, const OpBinding& b, const OpArgs& a, AttentionPart part) {
  const int64_t width = g.value(op.output).width;
  if (b.kind != OpBinding::Kind::Reference && op.kind != OpKind::Linear && op.kind != OpKind::Logits &&
      op.kind != OpKind::Attention)
    throw_internal("cpu op " + op.name, "a family is bound to an op it does not implement");
  switch (op.kind) {
    case OpKind::Embed:
      ref::embed(a.tokens, a.n, a.w[0], width, a.out);
      break;
    case OpKind::RmsNorm:
      ref::rms_norm(a.in[0], a.n * op.groups, width / op.groups, a.w[0], op.eps, a.out);
      break;
    case OpKind::Linear:
      linear_any(b, a.in[0], a.n, g.value(op.inputs[0]).width, a.w[0], a.w[1], width, a.out);
      break;
    case OpKind::Rope:
      ref::rope(a.in[0], a.n, op.heads, op.head_dim, a.positions, *a.inv_freq, a.out);
      break;
    case OpKind::Attention:
      attention_op(op, b, a, part);
      break;
    case OpKind::SwiGlu:
      ref::swiglu(a.in[0], a.in[1], a.n * width, a.out);
      break;
    case OpKind::Add:
      ref::add(a.in[0], a.in[1], a.n * width, a.out);
      break;
    case OpKind::MoeMlp:
      moe_op(g, op, a);
      break;
    case OpKind::Logits: {
      const int64_t hidden = g.value(op.inputs[0]).width;
      std::vector<float> rows(size_t(a.rows * hidden));
      for (int64_t j = 0; j < a.rows; ++j)
        std::copy_n(a.in[0] + int64_t(a.logit_rows[j]) * hidden, hidden, rows.data() + j * hidden);
      linear_any(b, rows.data(), a.rows, hidden, a.w[0], nullptr, width, a.out);
      break;
    }
  }
}

std::vector<MlpSpan> mlp_spans(const Graph& g) {
  const DecoderOps d = match_decoder_ops(g);
  const std::vector<int> last = g.last_uses();
  std::vector<MlpSpan> out;
  for (const LayerOps& L : d.layers) {
    if (L.moe != nullptr) continue;  // a sparse layer's MLP is one op, no span to fuse
    MlpSpan s;
    s.layer = L.post_norm->layer;
    for (const Op* op : {L.post_norm, L.gate, L.up, L.swiglu, L.down, L.mlp_add}) s.ops.push_back(int(op - g.ops.data()));
    const std::string where = "layer " + std::to_string(s.layer) + " MLP";
    for (size_t i = 1; i < s.ops.size(); ++i)
      if (s.ops[i] != s.ops[i - 1] + 1) throw_internal(where, "its ops are not consecutive");
    const int h = L.post_norm->output;
    if (L.gate->inputs.at(0) != h || L.up->inputs.at(0) != h || L.swiglu->inputs != std::vector<int>{L.gate->output, L.up->output} ||
        L.down->inputs.at(0) != L.swiglu->output)
      throw_internal(where, "not RMSNorm -> gate/up -> SwiGLU -> down");
    const auto& add_in = L.mlp_add->inputs;
    if (add_in.size() != 2 || (add_in[0] != L.down->output && add_in[1] != L.down->output))
      throw_internal(where, "the residual add does not read the down projection");
    for (const Op* op : {L.post_norm, L.gate, L.up, L.swiglu, L.down})
      if (last.at(size_t(op->output)) > s.ops.back()) throw_internal(where, "value " + g.value(op->output).name + " is read after the span");
    s.x = L.post_norm->inputs.at(0);
    s.residual = add_in[0] == L.down->output ? add_in[1] : add_in[0];
    s.out = L.mlp_add->output;
    s.hidden = g.value(s.out).width;
    s.inter = g.value(L.swiglu->output).width;
    out.push_back(std::move(s));
  }
  return out;
}

MlpWeights mlp_span_weights(const Graph& g, const MlpSpan& s, const std::function<const float*(const TensorInfo*)>& f32_of) {
  auto w = [&](int op, size_t k) -> const float* {
    const Op& o = g.ops.at(size_t(s.ops.at(size_t(op))));
    return k < o.weights.size() && o.weights[k] ? f32_of(o.weights[k]) : nullptr;
  };
  MlpWeights m;
  m.norm = w(0, 0);
  m.eps = g.ops.at(size_t(s.ops[0])).eps;
  m.gate = w(1, 0);
  m.gate_bias = w(1, 1);
  m.up = w(2, 0);
  m.up_bias = w(2, 1);
  m.down = w(4, 0);
  m.down_bias = w(4, 1);
  if (!m.norm || !m.gate || !m.up || !m.down) throw_internal("layer " + std::to_string(s.layer) + " MLP", "a weight is missing");
  return m;
}

}  // namespace ac::cpu
