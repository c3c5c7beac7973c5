#include "agentcompile/ir/decoder_layers.h"

#include "agentcompile/core/error.h"

namespace ac {

namespace {

// Walks the op list in the builder's order, checking each op's kind as it is taken.
class Cursor {
 public:
  explicit Cursor(const Graph& g) : g_(g) {}
  const Op* take(OpKind kind) {
    if (i_ >= g_.ops.size() || g_.ops[i_].kind != kind)
      throw_internal("graph", "not a decoder graph: expected " + std::string(op_kind_name(kind)) + " at op " +
                                  std::to_string(i_));
    return &g_.ops[i_++];
  }
  bool next_is(OpKind kind) const { return i_ < g_.ops.size() && g_.ops[i_].kind == kind; }
  bool done() const { return i_ == g_.ops.size(); }

 private:
  const Graph& g_;
  size_t i_ = 0;
};

}  // namespace

DecoderOps match_decoder_ops(const Graph& g) {
  DecoderOps d;
  Cursor c(g);
  d.embed = c.take(OpKind::Embed);
  for (int64_t l = 0; l < g.config.num_layers; ++l) {
    LayerOps L;
    L.input_norm = c.take(OpKind::RmsNorm);
    L.q = c.take(OpKind::Linear);
    L.k = c.take(OpKind::Linear);
    L.v = c.take(OpKind::Linear);
    if (c.next_is(OpKind::RmsNorm)) {
      L.q_norm = c.take(OpKind::RmsNorm);
      L.k_norm = c.take(OpKind::RmsNorm);
    }
    L.rope_q = c.take(OpKind::Rope);
    L.rope_k = c.take(OpKind::Rope);
    L.attention = c.take(OpKind::Attention);
    L.o = c.take(OpKind::Linear);
    L.attn_add = c.take(OpKind::Add);
    L.post_norm = c.take(OpKind::RmsNorm);
    if (c.next_is(OpKind::MoeMlp)) {
      L.moe = c.take(OpKind::MoeMlp);
    } else {
      L.gate = c.take(OpKind::Linear);
      L.up = c.take(OpKind::Linear);
      L.swiglu = c.take(OpKind::SwiGlu);
      L.down = c.take(OpKind::Linear);
    }
    L.mlp_add = c.take(OpKind::Add);
    if (L.attention->layer != int(l)) throw_internal("graph", "layer order");
    d.layers.push_back(L);
  }
  d.final_norm = c.take(OpKind::RmsNorm);
  d.logits = c.take(OpKind::Logits);
  if (!c.done()) throw_internal("graph", "ops after the logits");
  return d;
}

}  // namespace ac
