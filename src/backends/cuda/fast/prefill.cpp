// A prefill step (any other step): cuBLAS GEMMs over the step's tokens with the reference kernels
// around them, and the split attention.
#include "backends/cuda/fast/executor.h"

#include <cmath>

#include "backends/cuda/fast/prefill_tiles.h"
#include "backends/cuda/fast/variants.h"

namespace ac::cuda {

void FastExecutor::run_prefill(long long n, long long r) {
  const ModelConfig& c = g_.config;
  EmbedParams ep{wptr(ops_.embed, 0), in_.tokens(), resid_.as<float>(), n, c.hidden_size, c.vocab_size};
  launch(ref("embed", {}, {wt_}), Dim3{unsigned(n)}, kRefBlock, 0, &ep);
  const long long qkvd = c.q_dim() + 2 * c.kv_dim();
  const std::optional<Variant> flash = prefill_flash_variant(c, cfg_, arch_);
  if (flash) {  // the step's query tiles, for every layer
    const std::vector<int32_t> tiles = prefill_query_tiles(last_slots_, flash->threads() / 32 * 16);
    prefill_tiles_.upload(tiles.data(), tiles.size() * 4, s_);
    prefill_tile_count_ = (long long)tiles.size() / 2;
  }
  for (size_t l = 0; l < ops_.layers.size(); ++l) {
    const LayerOps& L = ops_.layers[l];
    rms_norm(L.input_norm, resid_.as<float>(), n, c.hidden_size, h_.as<float>());
    linear(reinterpret_cast<const void*>(fw_->wqkv[l].ptr()),
           fw_->bqkv[l].ptr() ? reinterpret_cast<const void*>(fw_->bqkv[l].ptr()) : nullptr, h_.as<float>(), n, c.hidden_size,
           qkvd, qkv_.as<float>(), sqkv(l));
    if (flash) prefill_attention(L, l, n, *flash);
    else attention(L, l, n, false);
    linear(wptr(L.o, 0), wptr(L.o, 1), attn_.as<float>(), n, c.q_dim(), c.hidden_size, tmp_.as<float>(), sptr(L.o));
    add(resid_.as<float>(), tmp_.as<float>(), n * c.hidden_size);
    rms_norm(L.post_norm, resid_.as<float>(), n, c.hidden_size, h_.as<float>());
    linear(wptr(L.gate, 0), nullptr, h_.as<float>(), n, c.hidden_size, c.intermediate_size, gate_.as<float>(), sptr(L.gate));
    linear(wptr(L.up, 0), nullptr, h_.as<float>(), n, c.hidden_size, c.intermediate_size, up_.as<float>(), sptr(L.up));
    ElementwiseParams sp{gate_.as<float>(), up_.as<float>(), gate_.as<float>(), n * c.intermediate_size};
    launch(ref("swiglu", {}), Dim3{elementwise_blocks(n * c.intermediate_size, kRefBlock)}, kRefBlock, 0, &sp);
    linear(wptr(L.down, 0), nullptr, gate_.as<float>(), n, c.intermediate_size, c.hidden_size, tmp_.as<float>(), sptr(L.down));
    add(resid_.as<float>(), tmp_.as<float>(), n * c.hidden_size);
  }
  GatherRowsParams gp{resid_.as<float>(), in_.rows(), gathered_.as<float>(), r, c.hidden_size};
  launch(ref("gather_rows", {}), Dim3{unsigned(r)}, kRefBlock, 0, &gp);
  rms_norm(ops_.final_norm, gathered_.as<float>(), r, c.hidden_size, h_.as<float>());
  linear(wptr(ops_.logits, 0), nullptr, h_.as<float>(), r, c.hidden_size, c.vocab_size, logits_.as<float>());
}

void FastExecutor::attention(const LayerOps& L, size_t layer, long long n, bool pdl) {
  const ModelConfig& c = g_.config;
  const int hd = int(c.head_dim);
  QkvPostParams qp{qkv_.as<float>(), q_.as<float>(), L.q_norm ? wptr(L.q_norm, 0) : nullptr,
                   L.k_norm ? wptr(L.k_norm, 0) : nullptr, float(c.rms_norm_eps), in_.positions(),
                   in_.slots(), inv_freq_.as<float>(), kcache_[layer].as<unsigned short>(),
                   vcache_[layer].as<unsigned short>(), n, c.num_heads, c.num_kv_heads, c.head_dim, lim_.max_seq};
  const LoadedKernel& kp = load_kernel(qkv_post_variant(cfg_, wt_, arch_));
  launch(kp, Dim3{unsigned(c.num_heads + 2 * c.num_kv_heads), unsigned(n)}, unsigned(cfg_.qkv_post_block), 0, &qp, pdl);
  if (pdl) mark("qkv_post", 0);
  DecodeAttnParams ap{q_.as<float>(), kcache_[layer].as<unsigned short>(), vcache_[layer].as<unsigned short>(),
                      part_o_.as<float>(), part_ml_.as<float>(), attn_.as<float>(), in_.positions(),
                      in_.slots(), n, c.num_heads, c.num_kv_heads, lim_.max_seq, max_splits_,
                      1.0f / std::sqrt(float(hd))};
  const Variant va = attn_variant(c, cfg_, arch_);
  launch(load_kernel(va), Dim3{unsigned(c.num_kv_heads), unsigned(max_splits_), unsigned(n)},
         unsigned(va.threads()), 0, &ap, pdl, "attention");
  if (pdl && profile_) {  // bytes: the K and V rows every token reads (positions come from the host copy)
    double kv = 0;
    for (long long t = 0; t < n; ++t) kv += double(last_positions_[size_t(t)] + 1) * double(c.kv_dim()) * 2 * 2;
    mark("attn_decode", kv);
  }
  const LoadedKernel& kc = load_kernel(combine_variant(c, cfg_, arch_));
  launch(kc, Dim3{unsigned(c.num_heads), unsigned(n)}, unsigned(hd), 0, &ap, pdl);
  if (pdl) mark("attn_combine", 0);
}

// The prefill attention as attn_prefill.flash: qkv_post (q/k norm, rope, KV-cache write) as for
// the decode attention, then one block per (query tile, head).
void FastExecutor::prefill_attention(const LayerOps& L, size_t layer, long long n, const Variant& v) {
  const ModelConfig& c = g_.config;
  QkvPostParams qp{qkv_.as<float>(), q_.as<float>(), L.q_norm ? wptr(L.q_norm, 0) : nullptr,
                   L.k_norm ? wptr(L.k_norm, 0) : nullptr, float(c.rms_norm_eps), in_.positions(),
                   in_.slots(), inv_freq_.as<float>(), kcache_[layer].as<unsigned short>(),
                   vcache_[layer].as<unsigned short>(), n, c.num_heads, c.num_kv_heads, c.head_dim, lim_.max_seq};
  launch(load_kernel(qkv_post_variant(cfg_, wt_, arch_)), Dim3{unsigned(c.num_heads + 2 * c.num_kv_heads), unsigned(n)},
         unsigned(cfg_.qkv_post_block), 0, &qp);
  PrefillAttnParams ap{q_.as<float>(), kcache_[layer].as<unsigned short>(), vcache_[layer].as<unsigned short>(),
                       attn_.as<float>(), in_.positions(), in_.slots(), prefill_tiles_.as<int>(), n, c.num_heads,
                       c.num_kv_heads, lim_.max_seq, 1.0f / std::sqrt(float(c.head_dim))};
  launch(load_kernel(v), Dim3{unsigned(prefill_tile_count_), unsigned(c.num_heads)}, unsigned(v.threads()), 0, &ap, false,
         "attention");
}

void FastExecutor::linear(const void* w, const void* bias, const float* x, long long n, long long in, long long out_dim, float* out,
                          const float* ws) {
  if (ws) {  // an FP8 weight: dequantized to wt_ (rounded, as the activations are for the GEMM)
    const bool block = fp8_ == Fp8Scales::Block;
    Fp8DequantParams dp{static_cast<const unsigned char*>(w), ws, wdq_.as<void>(), out_dim, in, block ? 128 : 1,
                        block ? 128 : in, block ? (in + 127) / 128 : 1};
    launch(ref("fp8_dequant", {}, {wt_}), Dim3{elementwise_blocks(out_dim * in, kRefBlock)}, kRefBlock, 0, &dp);
    w = wdq_.as<void>();
  }
  CastParams cp{x, cast_.as<void>(), n * in};
  launch(ref("cast", {}, {wt_}), Dim3{elementwise_blocks(n * in, kRefBlock)}, kRefBlock, 0, &cp);
  cublas_linear(cublas_, wt_, cast_.as<void>(), w, out, n, in, out_dim);
  if (bias) {
    BiasParams bp{out, bias, n, out_dim};
    launch(ref("bias", {}, {wt_}), Dim3{elementwise_blocks(n * out_dim, kRefBlock)}, kRefBlock, 0, &bp);
  }
}

void FastExecutor::rms_norm(const Op* norm, const float* x, long long rows, long long dim, float* out) {
  RmsNormParams p{x, wptr(norm, 0), out, rows, dim, float(g_.config.rms_norm_eps)};
  launch(ref("rms_norm", {}, {wt_}), Dim3{unsigned(rows)}, kRefBlock, 0, &p);
}

void FastExecutor::add(float* acc, const float* x, long long count) {
  ElementwiseParams p{acc, x, acc, count};
  launch(ref("add", {}), Dim3{elementwise_blocks(count, kRefBlock)}, kRefBlock, 0, &p);
}

}  // namespace ac::cuda
