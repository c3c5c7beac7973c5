// What the fast path supports: the graphs it runs (fast_path_unsupported) and every kernel variant
// it launches for a model (fast_path_variants).
#include <string>

#include "agentcompile/core/error.h"
#include "agentcompile/ir/decoder_layers.h"
#include "backends/cuda/fast/variants.h"

namespace ac::cuda {

namespace {

bool is16(DType t) { return t == DType::BF16 || t == DType::F16; }

}  // namespace

std::string fast_path_unsupported(const Graph& g) {
  const ModelConfig& c = g.config;
  if (c.is_moe()) return "mixture-of-experts layers";
  if (c.attention_window > 0) return "sliding-window attention";
  if (c.mlp_bias) return "MLP biases";
  if (c.head_dim != 32 && c.head_dim != 64 && c.head_dim != 128 && c.head_dim != 256)
    return "head_dim " + std::to_string(c.head_dim) + " (the fused attention handles 32, 64, 128, 256)";
  const int64_t group = c.num_heads / c.num_kv_heads;
  if (group > 8 || group == 7) return "GQA group of " + std::to_string(group);
  if (c.hidden_size % 8 || c.q_dim() % 8 || c.intermediate_size % 8) return "dimensions not multiples of 8";
  if ((group * c.head_dim) % 64 != 0) return "GQA group x head_dim not a multiple of 64";
  for (const Op& op : g.ops)
    for (const TensorInfo* w : op.weights)
      if (!is16(w->dtype)) return "weight " + w->name + " is " + std::string(dtype_user_name(w->dtype));
  DType first = g.ops.front().weights.at(0)->dtype;
  for (const Op& op : g.ops)
    for (const TensorInfo* w : op.weights)
      if (w->dtype != first) return "mixed weight dtypes";
  try {
    match_decoder_ops(g);
  } catch (const Error& e) {
    return e.reason();
  }
  return "";
}

std::vector<Variant> fast_path_variants(const ModelConfig& c, DType wt, const FastConfig& cfg, const std::string& arch) {
  std::vector<Variant> v;
  for (int batch : {1, 2, 4, 8}) {
    v.push_back(fast_decode_gemv(cfg, cfg.qkv, cfg.qkv_mma, kEpiStore, batch, c.hidden_size, wt, arch));
    v.push_back(fast_decode_gemv(cfg, cfg.o, cfg.o_mma, kEpiResidual, batch, c.q_dim(), wt, arch));
    v.push_back(fast_decode_gemv(cfg, cfg.gate_up, cfg.gate_up_mma, kEpiSwiglu, batch, c.hidden_size, wt, arch));
    v.push_back(fast_decode_gemv(cfg, cfg.down, cfg.down_mma, kEpiResidual, batch, c.intermediate_size, wt, arch));
    v.push_back(fast_decode_gemv(cfg, cfg.lm_head, cfg.lm_head_mma, kEpiArgmax, batch, c.hidden_size, wt, arch));
    if (auto m = fast_mlp_variant(cfg, batch, c.hidden_size, c.intermediate_size, wt, arch)) v.push_back(*m);
  }
  v.push_back(qkv_post_variant(cfg, wt, arch));
  if (cfg.gpu_top_k) v.push_back(topk_variant(cfg, arch));
  v.push_back(fused_attn_variant(c, cfg, wt, arch));
  if (cfg.attn_long_from > 0) v.push_back(fused_attn_variant(c, cfg, wt, arch, true));
  if (auto cv = cluster_attn_variant(c, cfg, wt, arch)) v.push_back(*cv);
  for (Variant& cv : cluster_long_attn_variants(c, cfg, wt, arch)) v.push_back(std::move(cv));
  // Biases are a property of the weights, not the config: listed as if none (the executor asks again).
  if (auto ao = attn_o_plan(c, cfg, wt, arch, 1, 0, false)) v.push_back(ao->v);
  v.push_back(attn_variant(c, cfg, arch));
  v.push_back(combine_variant(c, cfg, arch));
  if (auto pf = prefill_flash_variant(c, cfg, arch)) v.push_back(*pf);
  if (auto pl = persistent_plan(c, cfg, wt, arch, false)) v.push_back(pl->v);
  if (auto mo = merge_o_plan(c, cfg, wt, arch, 1, 0, false)) {
    v.push_back(mo->attn);
    v.push_back(mo->o);
  }
  return v;
}

}  // namespace ac::cuda
