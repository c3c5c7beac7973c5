// What the fast path supports: the graphs it runs (fast_path_unsupported) and every kernel variant
// it launches for a model (fast_path_variants).
#include <optional>
#include <string>

#include "agentcompile/core/error.h"
#include "agentcompile/ir/decoder_layers.h"
#include "agentcompile/model/quantization.h"
#include "backends/cuda/fast/variants.h"

namespace ac::cuda {

namespace {

bool is16(DType t) { return t == DType::BF16 || t == DType::F16; }

}  // namespace

Fp8Scales fast_fp8_scales(const Graph& g, std::string* why) {
  std::string local;
  std::string& w = why ? *why : local;
  w.clear();
  if (g.fp8.empty()) return Fp8Scales::None;
  if (g.config.is_moe()) {
    w = "FP8 mixture-of-experts weights (the fast path's expert GEMVs read 16-bit weights)";
    return Fp8Scales::None;
  }
  DecoderOps ops;
  try {
    ops = match_decoder_ops(g);
  } catch (const Error& e) {
    w = e.reason();
    return Fp8Scales::None;
  }
  const ModelConfig& c = g.config;
  // The layout gemv.fp8 reads a weight's scales in, if any: channel (bo 1) and tensor (one block)
  // scales become one scale per output row at upload; 128 x 128 blocks stay.
  auto layout = [](const Fp8Weight& f) -> std::optional<Fp8Scales> {
    if (f.bi == f.in && (f.bo == 1 || f.bo == f.out)) return Fp8Scales::Row;
    if (f.bo == 128 && f.bi == 128) return Fp8Scales::Block;
    return std::nullopt;
  };
  std::optional<Fp8Scales> kind;
  size_t projections = 0;
  for (const LayerOps& L : ops.layers)
    for (const Op* op : {L.q, L.k, L.v, L.o, L.gate, L.up, L.down}) {
      if (!op) continue;
      const auto it = g.fp8.find(op->weights.at(0));
      if (it == g.fp8.end()) {
        w = "FP8 weights beside 16-bit ones in the projections (" + op->weights.at(0)->name + ")";
        return Fp8Scales::None;
      }
      ++projections;
      const Fp8Weight& f = *it->second;
      const std::optional<Fp8Scales> k = layout(f);
      if (!k) {
        w = "FP8 scale blocks of " + std::to_string(f.bo) + "x" + std::to_string(f.bi) +
            " (the fast path reads 128x128 blocks, channel or tensor scales)";
        return Fp8Scales::None;
      }
      if (kind && *kind != k) {
        w = "FP8 projections with different scale layouts";
        return Fp8Scales::None;
      }
      kind = k;
    }
  // The lm_head may be FP8 too (compile --lm-head fp8), in the projections' layout.
  if (const auto head = g.fp8.find(ops.logits->weights.at(0)); head != g.fp8.end()) {
    if (layout(*head->second) != kind) {
      w = "an FP8 lm_head whose scales are not laid out as the projections' are";
      return Fp8Scales::None;
    }
    ++projections;
  }
  if (projections != g.fp8.size()) {
    w = "FP8 weights outside the layers' projections and the lm_head (an FP8 embedding or router)";
    return Fp8Scales::None;
  }
  // gemv.fp8 reads 16 weights per 16-byte load; q, k and v run as one matrix, so with block
  // scales each one's rows must end on a block.
  if (c.hidden_size % 16 || c.q_dim() % 16 || c.intermediate_size % 16) {
    w = "FP8 projections with an input width not a multiple of 16";
    return Fp8Scales::None;
  }
  if (*kind == Fp8Scales::Block && (c.q_dim() % 128 || c.kv_dim() % 128)) {
    w = "FP8 block scales with q or k/v rows not a multiple of 128 (q, k and v run as one matrix)";
    return Fp8Scales::None;
  }
  return *kind;
}

bool fast_fp8_head(const Graph& g) {
  if (g.fp8.empty() || fast_fp8_scales(g) == Fp8Scales::None) return false;
  return g.fp8.count(match_decoder_ops(g).logits->weights.at(0)) > 0;
}

std::string fast_path_not_default(const Graph& g) { return fast_path_unsupported(g); }

std::string fast_path_unsupported(const Graph& g) {
  const ModelConfig& c = g.config;
  if (std::string why = moe_unsupported(c); !why.empty()) return why;
  if (c.attention_window > 0) return "sliding-window attention";
  if (c.mlp_bias) return "MLP biases";
  if (c.head_dim != 32 && c.head_dim != 64 && c.head_dim != 128 && c.head_dim != 256)
    return "head_dim " + std::to_string(c.head_dim) + " (the fused attention handles 32, 64, 128, 256)";
  const int64_t group = c.num_heads / c.num_kv_heads;
  if (group > 8 || group == 7) return "GQA group of " + std::to_string(group);
  if (c.hidden_size % 8 || c.q_dim() % 8 || c.intermediate_size % 8) return "dimensions not multiples of 8";
  if ((group * c.head_dim) % 64 != 0) return "GQA group x head_dim not a multiple of 64";
  // FP8 projections (Graph::fp8) are read as stored; every other weight is 16-bit, one dtype.
  if (std::string why; fast_fp8_scales(g, &why), !why.empty()) return why;
  for (const Op& op : g.ops)
    for (const TensorInfo* w : op.weights)
      if (!g.fp8.count(w) && !is16(w->dtype)) return "weight " + w->name + " is " + std::string(dtype_user_name(w->dtype));
  DType first = g.ops.front().weights.at(0)->dtype;
  for (const Op& op : g.ops)
    for (const TensorInfo* w : op.weights)
      if (!g.fp8.count(w) && w->dtype != first) return "mixed weight dtypes";
  try {
    match_decoder_ops(g);
  } catch (const Error& e) {
    return e.reason();
  }
  return "";
}

std::vector<Variant> fast_path_variants(const ModelConfig& c, DType wt, const FastConfig& given, const std::string& arch,
                                        Fp8Scales fp8, bool fp8_head) {
  std::vector<Variant> v;
  const FastConfig cfg = fp8 == Fp8Scales::None ? given : fp8_fast_config(given, fp8_head);
  for (int batch : {1, 2, 4, 8}) {
    if (fp8 != Fp8Scales::None) {
      v.push_back(fast_fp8_decode_gemv(cfg, cfg.qkv, cfg.qkv_mma, kEpiStore, batch, c.hidden_size, fp8, wt, arch));
      v.push_back(fast_fp8_decode_gemv(cfg, cfg.o, cfg.o_mma, kEpiResidual, batch, c.q_dim(), fp8, wt, arch));
      v.push_back(fast_fp8_decode_gemv(cfg, cfg.gate_up, cfg.gate_up_mma, kEpiSwiglu, batch, c.hidden_size, fp8, wt, arch));
      v.push_back(fast_fp8_decode_gemv(cfg, cfg.down, cfg.down_mma, kEpiResidual, batch, c.intermediate_size, fp8, wt, arch));
    } else {
      v.push_back(fast_decode_gemv(cfg, cfg.qkv, cfg.qkv_mma, kEpiStore, batch, c.hidden_size, wt, arch));
      v.push_back(fast_decode_gemv(cfg, cfg.o, cfg.o_mma, kEpiResidual, batch, c.q_dim(), wt, arch));
      v.push_back(fast_decode_gemv(cfg, cfg.gate_up, cfg.gate_up_mma, kEpiSwiglu, batch, c.hidden_size, wt, arch));
      v.push_back(fast_decode_gemv(cfg, cfg.down, cfg.down_mma, kEpiResidual, batch, c.intermediate_size, wt, arch));
    }
    if (fp8_head) {  // the argmax epilogue, and the prompt step's logit rows (store) in chunks of 8
      v.push_back(fast_fp8_decode_gemv(cfg, cfg.lm_head, cfg.lm_head_mma, kEpiArgmax, batch, c.hidden_size, fp8, wt, arch));
      v.push_back(fast_fp8_decode_gemv(cfg, cfg.lm_head, cfg.lm_head_mma, kEpiStore, batch, c.hidden_size, fp8, wt, arch));
    } else {
      v.push_back(fast_decode_gemv(cfg, cfg.lm_head, cfg.lm_head_mma, kEpiArgmax, batch, c.hidden_size, wt, arch));
    }
    if (auto m = fast_mlp_variant(cfg, batch, c.hidden_size, c.intermediate_size, wt, arch)) v.push_back(*m);
  }
  // The prefill GEMMs read FP8 projections dequantized into a 16-bit scratch.
  if (fp8 != Fp8Scales::None) v.push_back(fp8_dequant_variant(wt, arch));
  v.push_back(prefill_norm_variant(wt, arch));
  v.push_back(prefill_swiglu_variant(wt, arch));
  for (int epi : {0, 1, 2, 3})
    if (epi < 3 || cfg.prefill_swiglu_epilogue)
      if (auto wg = prefill_gemm16_variant(cfg, epi, wt, arch)) v.push_back(*wg);
  for (const GemvSlotField& s : kGemvSlots)  // the projections the plan routes to our own GEMM, at their store
    if (s.prefill_gemm)
      if (auto own = own_gemm_variant(cfg.*s.prefill_gemm, prefill_gemm_epi(s, cfg, fp8 != Fp8Scales::None), wt, arch))
        v.push_back(*own);
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
  if (auto pf = prefill_flash_variant(c, cfg, wt, arch)) {
    v.push_back(*pf);
    if (auto qp = prefill_qkv_post_variant(c, wt, arch)) v.push_back(*qp);
  }
  if (auto pl = persistent_plan(c, cfg, wt, arch, false)) v.push_back(pl->v);
  if (c.is_moe())
    for (Variant& m : moe_variants(cfg, wt, arch)) v.push_back(std::move(m));
  if (auto mo = merge_o_plan(c, cfg, wt, arch, 1, 0, false)) {
    v.push_back(mo->attn);
    v.push_back(mo->o);
  }
  return v;
}

}  // namespace ac::cuda
