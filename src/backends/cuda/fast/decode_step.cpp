// A decode step (at most kMaxBatch tokens, one per sequence): the chain of fused GEMVs, attention and
// MLP kernels over every layer, recorded once per CUDA graph (graphs.cpp).
#include "backends/cuda/fast/executor.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "backends/cuda/timeline.h"

namespace ac::cuda {

// A decode step: at most 8 tokens, each of a different sequence, every row's logits wanted.
bool FastExecutor::is_decode_step(const StepBatch& b) {
  const size_t n = b.tokens.size();
  if (n > size_t(kMaxBatch) || b.logit_rows.size() != n) return false;
  for (size_t i = 0; i < n; ++i) {
    if (b.logit_rows[i] != int32_t(i)) return false;
    for (size_t j = 0; j < i; ++j)
      if (b.slots[j] == b.slots[i]) return false;
  }
  return true;
}

void FastExecutor::run_decode(long long n) {
  long long longest = 0;
  for (int32_t p : last_positions_) longest = std::max<long long>(longest, p + 1);
  longest_ = longest;
  // The developer timeline records the kernels of one step or a few (backends/cuda/timeline.h).
  const long long step = ++decode_steps_;
  if (timeline_enabled() && step == timeline_step()) timeline_reset(s_);
  run_decode_step(n);
  if (cfg_.device_chain) in_.advanced_on_device();  // the step's argmax_finish adds one to every position
  if (timeline_enabled() && step == timeline_step() + timeline_steps() - 1) timeline_write(s_);
}

void FastExecutor::record_decode(long long n) {
  const ModelConfig& c = g_.config;
  const double es = double(dtype_size(wt_));
  const double pes = fp8_ != Fp8Scales::None ? 1.0 : es;  // a projection weight's bytes (scales not counted)
  mark("start", 0);
  EmbedParams ep{wptr(ops_.embed, 0), in_.tokens(), resid_.as<float>(), n, c.hidden_size, c.vocab_size};
  launch(ref("embed", {}, {wt_}), Dim3{unsigned(n)}, kRefBlock, 0, &ep, cfg_.pdl);
  mark("embed", double(n * c.hidden_size) * es);
  const long long qkvd = c.q_dim() + 2 * c.kv_dim();
  const bool persistent = pl_ && n == 1;  // decode_layers.persistent runs every layer
  if (persistent) {
    persistent_layers();
    mark("decode_layers", double(ops_.layers.size()) *
                              double(qkvd * c.hidden_size + c.hidden_size * c.q_dim() + 3 * c.intermediate_size * c.hidden_size) * es);
  }
  // The same for every layer but one with an o_proj bias (attn_o_plan: then the two kernels).
  std::optional<AttnOPlan> ao;
  if (!persistent) ao = attn_o_plan(c, cfg_, wt_, arch_, batch_template(n), longest_, false);
  std::optional<MergeOPlan> mo;  // attn_merge_o (never beside attn_o): partials merged by the output GEMV
  if (!persistent) mo = merge_o_plan(c, cfg_, wt_, arch_, batch_template(n), longest_, false);
  for (size_t l = 0; !persistent && l < ops_.layers.size(); ++l) {
    const LayerOps& L = ops_.layers[l];
    gemv("qkv", cfg_.qkv, cfg_.qkv_mma, kEpiStore, n, resid_.as<float>(), wptr(L.input_norm, 0), reinterpret_cast<const void*>(fw_->wqkv[l].ptr()),
         nullptr, fw_->bqkv[l].ptr() ? reinterpret_cast<const void*>(fw_->bqkv[l].ptr()) : nullptr, qkv_.as<float>(), qkvd,
         c.hidden_size, sqkv(l));
    mark("qkv_gemv", double(qkvd * c.hidden_size) * pes);
    if (ao && L.o->weights.size() == 1) {
      attention_and_output(*ao, L, l, n);
    } else if (mo) {
      fused_attention(L, l, n, &mo->attn);
      GemvParams p{part_o_.as<float>(), nullptr, float(c.rms_norm_eps), wptr(L.o, 0), nullptr, wptr(L.o, 1),
                   resid_.as<float>(), best_.as<unsigned long long>(), n, c.hidden_size, c.q_dim(),
                   part_ml_.as<float>(), c.num_heads / c.num_kv_heads, c.head_dim};
      const LaunchShape ls = gemv_launch_shape(mo->o, c.hidden_size, c.q_dim());
      launch(load_kernel(mo->o), Dim3{ls.grid_x, ls.grid_y}, ls.threads, ls.smem, &p, cfg_.pdl, "o");
      mark("o_gemv", double(c.hidden_size * c.q_dim()) * es);
    } else {
      fused_attention(L, l, n);
      gemv("o", cfg_.o, cfg_.o_mma, kEpiResidual, n, attn_.as<float>(), nullptr, wptr(L.o, 0), nullptr, wptr(L.o, 1), resid_.as<float>(),
           c.hidden_size, c.q_dim(), sptr(L.o));
      mark("o_gemv", double(c.hidden_size * c.q_dim()) * pes);
    }
    if (L.moe) {
      moe_mlp(L, l, n, true);
      continue;
    }
    if (auto mv = fast_mlp_variant(cfg_, batch_template(n), c.hidden_size, c.intermediate_size, wt_, arch_)) {
      mlp(*mv, L, l, n);
      mark("mlp_fused", double(3 * c.intermediate_size * c.hidden_size) * es);
      continue;
    }
    gemv("gate_up", cfg_.gate_up, cfg_.gate_up_mma, kEpiSwiglu, n, resid_.as<float>(), wptr(L.post_norm, 0), wptr(L.gate, 0), wptr(L.up, 0), nullptr,
         gate_.as<float>(), c.intermediate_size, c.hidden_size, sptr(L.gate), sptr(L.up));
    mark("gate_up_gemv", double(2 * c.intermediate_size * c.hidden_size) * pes);
    gemv("down", cfg_.down, cfg_.down_mma, kEpiResidual, n, gate_.as<float>(), nullptr, wptr(L.down, 0), nullptr, nullptr, resid_.as<float>(),
         c.hidden_size, c.intermediate_size, sptr(L.down));
    mark("down_gemv", double(c.hidden_size * c.intermediate_size) * pes);
  }
  gemv("lm_head", cfg_.lm_head, cfg_.lm_head_mma, kEpiArgmax, n, resid_.as<float>(), wptr(ops_.final_norm, 0), wptr(ops_.logits, 0), nullptr,
       nullptr, logits_.as<float>(), c.vocab_size, c.hidden_size, sptr(ops_.logits));
  mark("lm_head_gemv", double(c.vocab_size * c.hidden_size) * (fp8_head_ ? 1.0 : es));
}

// `region`: the slot's name (qkv, o, ...), for its carveout.
void FastExecutor::gemv(const char* region, const GemvChoice& ch, const MmaChoice& mma, int epi, long long n,
                        const float* x, const void* gamma, const void* w, const void* w2, const void* bias, float* out,
                        long long N, long long K, const float* ws, const float* ws2) {
  const int batch = batch_template(n);
  const Variant v = ws ? fast_fp8_decode_gemv(cfg_, ch, mma, epi, batch, K, fp8_, wt_, arch_)
                       : fast_decode_gemv(cfg_, ch, mma, epi, batch, K, wt_, arch_);
  GemvParams p{x, gamma, float(g_.config.rms_norm_eps), w, w2, bias, out, best_.as<unsigned long long>(), n, N, K};
  p.w_scale = ws;
  p.w2_scale = ws2;
  const LaunchShape ls = gemv_launch_shape(v, N, K);
  launch(load_kernel(v), Dim3{ls.grid_x, ls.grid_y}, ls.threads, ls.smem, &p, cfg_.pdl, region);
  // The tokens, over the next step's input ids, from the blocks' keys.
  if (epi == kEpiArgmax) {
    int* positions = cfg_.device_chain ? in_.positions() : nullptr;  // every decode step's lm_head is ARGMAX
    launch_argmax_finish(best_.as<unsigned long long>(), in_.tokens(), n, s_, cfg_.pdl, arch_, cfg_.smem_carveout, positions,
                         host_ahead_.as<int32_t>(), kMaxBatch);
  }
}

void FastExecutor::mlp(const Variant& v, const LayerOps& L, size_t layer, long long n) {
  const ModelConfig& c = g_.config;
  const LoadedKernel& k = load_kernel(v);
  const LaunchShape ls = mlp_launch_shape(k, v, c.hidden_size, c.intermediate_size, cfg_.mlp.bps);
  MlpParams p{resid_.as<float>(), wptr(L.post_norm, 0), float(c.rms_norm_eps), wptr(L.gate, 0), wptr(L.up, 0),
              reinterpret_cast<const void*>(fw_->wdown_tiled.at(layer).ptr()), mlp_counters_.as<unsigned>(), n, c.hidden_size,
              c.intermediate_size};
  launch(k, Dim3{ls.grid_x}, ls.threads, ls.smem, &p, cfg_.pdl);
}

// The decode attention of the step's range (`parts`: attn_decode.parts instead, attn_merge_o).
void FastExecutor::fused_attention(const LayerOps& L, size_t layer, long long n, const Variant* parts) {
  const ModelConfig& c = g_.config;
  FusedAttnParams ap = attn_params(layer, L, n);
  const Variant va = parts ? *parts : decode_attention_variant(c, cfg_, wt_, arch_, batch_template(n), longest_);
  const size_t smem = size_t(attn_fused_smem_bytes(va.param("SPLIT"), va.param("HD"), va.param("GROUP")));
  launch(load_kernel(va), Dim3{unsigned(c.num_kv_heads), unsigned(decode_attention_blocks(va, lim_.max_seq)), unsigned(n)},
         unsigned(va.threads()), smem, &ap, cfg_.pdl, "attention");
  if (profile_) {
    double kv = 0;
    for (long long t = 0; t < n; ++t) kv += double(last_positions_[size_t(t)] + 1) * double(c.kv_dim()) * 2 * 2;
    mark("attention", kv);
  }
}

FusedAttnParams FastExecutor::attn_params(size_t layer, const LayerOps& L, long long n) const {
  const ModelConfig& c = g_.config;
  return FusedAttnParams{qkv_.as<float>(), L.q_norm ? wptr(L.q_norm, 0) : nullptr, L.k_norm ? wptr(L.k_norm, 0) : nullptr,
                         float(c.rms_norm_eps), rope_cos_.as<float>(), rope_sin_.as<float>(),
                         kcache_[layer].as<unsigned short>(), vcache_[layer].as<unsigned short>(), part_o_.as<float>(),
                         part_ml_.as<float>(), attn_counters_.as<unsigned>(), attn_.as<float>(), in_.positions(),
                         in_.slots(), n, c.num_heads, c.num_kv_heads, lim_.max_seq, max_splits_,
                         1.0f / std::sqrt(float(c.head_dim))};
}

// attn_o.cluster: the attention and the output projection with its residual add, one kernel.
void FastExecutor::attention_and_output(const AttnOPlan& ao, const LayerOps& L, size_t layer, long long n) {
  const ModelConfig& c = g_.config;
  AttnOParams p{attn_params(layer, L, n), wptr(L.o, 0), resid_.as<float>(), c.hidden_size};
  launch(load_kernel(ao.v),
         Dim3{unsigned(c.num_kv_heads), unsigned(ao.v.param("CLUSTER")), unsigned(n * ao.v.param("COPIES"))},
         unsigned(ao.v.threads()), ao.smem, &p, cfg_.pdl, "attention");
  mark("attention_o", double(c.hidden_size * c.q_dim() * dtype_size(wt_)));
}

}  // namespace ac::cuda
