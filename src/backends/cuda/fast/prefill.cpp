// A prefill step (any other step): cuBLAS GEMMs over the step's tokens, the passes that write
// their 16-bit inputs, and the prompt attention (attn_prefill.pipe after qkv_post.rows).
#include "backends/cuda/fast/executor.h"

#include <cmath>

#include "agentcompile/core/error.h"
#include "backends/cuda/fast/prefill_tiles.h"
#include "backends/cuda/fast/variants.h"
#include "backends/cuda/gemm16.h"

namespace ac::cuda {

void FastExecutor::run_prefill(long long n, long long r) {
  const ModelConfig& c = g_.config;
  if (profile_) {  // the prompt step launch by launch, its kernels timed apart from the decode steps'
    mark("start", 0);
    prefill_tokens_ += n;
  }
  EmbedParams ep{wptr(ops_.embed, 0), in_.tokens(), resid_.as<float>(), n, c.hidden_size, c.vocab_size};
  launch(ref("embed", {}, {wt_}), Dim3{unsigned(n)}, kRefBlock, 0, &ep);
  mark("embed", double(n * c.hidden_size) * double(dtype_size(wt_) + 4));
  const std::optional<Variant> flash = prefill_flash_variant(c, cfg_, wt_, arch_);
  if (flash) {  // the step's query tiles, for every layer
    const std::vector<int32_t> tiles =
        prefill_tile_list(last_slots_, last_positions_, prefill_tile_rows(*flash), flash->param("PAIR") != 0, c.num_heads,
                          Device::get().info().sm_count);
    prefill_tiles_.upload(tiles.data(), tiles.size() * 4, s_);
    prefill_tile_count_ = prefill_tile_blocks(tiles, flash->param("PAIR") != 0);
  }
  if (cfg_.prefill_w16) prefill_layers_w16(n, flash);
  else prefill_layers_f32(n, flash);
  GatherRowsParams gp{resid_.as<float>(), in_.rows(), gathered_.as<float>(), r, c.hidden_size};
  launch(ref("gather_rows", {}), Dim3{unsigned(r)}, kRefBlock, 0, &gp);
  if (fp8_head_) {
    // An FP8 lm_head: gemv.fp8 (its RMSNorm prologue, f32 rows) over the logit rows, 8 at a time;
    // dequantizing the whole head for a GEMM would take a vocabulary x hidden 16-bit scratch.
    for (long long i = 0; i < r; i += kMaxBatch) {
      const long long rows = std::min<long long>(kMaxBatch, r - i);
      gemv("lm_head", cfg_.lm_head, cfg_.lm_head_mma, kEpiStore, rows, gathered_.as<float>() + i * c.hidden_size,
           wptr(ops_.final_norm, 0), wptr(ops_.logits, 0), nullptr, nullptr, logits_.as<float>() + i * c.vocab_size,
           c.vocab_size, c.hidden_size, sptr(ops_.logits));
    }
    mark("gemm_lm_head", 0, 2.0 * double(r) * double(c.hidden_size) * double(c.vocab_size));
  } else {
    norm16(ops_.final_norm, gathered_.as<float>(), r, c.hidden_size, cast_.as<void>());
    gemm(wptr(ops_.logits, 0), nullptr, cast_.as<void>(), r, c.hidden_size, c.vocab_size, logits_.as<void>(), DType::F32, 0.0f,
         "gemm_lm_head");
  }
  if (profile_) flush_profile(true);
  prompt_ran_ = true;
}

// The residual stream stays f32; each GEMM reads a 16-bit input written by the pass before it
// (RMSNorm, the attention's cast, SwiGLU) from cast_, and the output and down projections add
// their products into the stream themselves (beta 1).
void FastExecutor::prefill_layers_w16(long long n, const std::optional<Variant>& flash) {
  const ModelConfig& c = g_.config;
  const long long qkvd = c.q_dim() + 2 * c.kv_dim();
  void* x16 = cast_.as<void>();
  float* resid = resid_.as<float>();
  for (size_t l = 0; l < ops_.layers.size(); ++l) {
    const LayerOps& L = ops_.layers[l];
    norm16(L.input_norm, resid, n, c.hidden_size, x16);
    gemm(reinterpret_cast<const void*>(fw_->wqkv[l].ptr()), sqkv(l), x16, n, c.hidden_size, qkvd, qkv_.as<void>(), DType::F32,
         0.0f, "gemm_qkv", &gemv_slot("qkv"));
    if (fw_->bqkv[l].ptr()) bias_add(qkv_.as<float>(), reinterpret_cast<const void*>(fw_->bqkv[l].ptr()), n, qkvd);
    if (flash) {
      prefill_attention(L, l, n, *flash, x16);  // writes the output projection's input itself
    } else {
      attention(L, l, n, false);
      CastParams cp{attn_.as<float>(), x16, n * c.q_dim()};
      launch(ref("cast", {}, {wt_}), Dim3{elementwise_blocks(n * c.q_dim(), kRefBlock)}, kRefBlock, 0, &cp);
      mark("cast", double(n * c.q_dim()) * double(4 + dtype_size(wt_)));
    }
    gemm(wptr(L.o, 0), sptr(L.o), x16, n, c.q_dim(), c.hidden_size, resid, DType::F32, 1.0f, "gemm_o", &gemv_slot("o"));
    if (const void* ob = wptr(L.o, 1)) bias_add(resid, ob, n, c.hidden_size);
    if (L.moe) {
      moe_mlp(L, l, n);
      continue;
    }
    norm16(L.post_norm, resid, n, c.hidden_size, x16);
    const void* down_in = gemm_swiglu(L, x16, n);  // the fused form's output, or null
    if (!down_in) {
      down_in = x16;
      gemm(wptr(L.gate, 0), sptr(L.gate), x16, n, c.hidden_size, c.intermediate_size, gate_.as<void>(), wt_, 0.0f,
           "gemm_gate_up", &gemv_slot("gate_up"));
      gemm(wptr(L.up, 0), sptr(L.up), x16, n, c.hidden_size, c.intermediate_size, up_.as<void>(), wt_, 0.0f, "gemm_gate_up",
           &gemv_slot("gate_up"));
      Swiglu16Params sp{gate_.as<void>(), up_.as<void>(), x16, n * c.intermediate_size};
      launch(load_kernel(prefill_swiglu_variant(wt_, arch_)),
             Dim3{elementwise_blocks((n * c.intermediate_size + 7) / 8, kRefBlock)}, kRefBlock, 0, &sp);  // eight values per thread
      mark("swiglu", double(n * c.intermediate_size) * double(3 * dtype_size(wt_)));
    }
    gemm(wptr(L.down, 0), sptr(L.down), down_in, n, c.intermediate_size, c.hidden_size, resid, DType::F32, 1.0f, "gemm_down",
         &gemv_slot("down"));
  }
}

// prefill_w16=0, the earlier form: f32 passes, a cast before every GEMM into f32 outputs, an f32
// SwiGLU and separate residual adds (kept to measure against).
void FastExecutor::prefill_layers_f32(long long n, const std::optional<Variant>& flash) {
  const ModelConfig& c = g_.config;
  const long long qkvd = c.q_dim() + 2 * c.kv_dim();
  float *resid = resid_.as<float>(), *h = h_.as<float>(), *tmp = tmp_.as<float>();
  void* x16 = cast_.as<void>();
  auto norm = [&](const Op* op) {  // the reference kernel
    RmsNormParams p{resid, wptr(op, 0), h, n, c.hidden_size, float(c.rms_norm_eps)};
    launch(ref("rms_norm", {}, {wt_}), Dim3{unsigned(n)}, kRefBlock, 0, &p);
    mark("rms_norm", double(n * c.hidden_size) * 8);
  };
  auto cast = [&](const float* x, long long count) {
    CastParams cp{x, x16, count};
    launch(ref("cast", {}, {wt_}), Dim3{elementwise_blocks(count, kRefBlock)}, kRefBlock, 0, &cp);
    mark("cast", double(count) * double(4 + dtype_size(wt_)));
  };
  auto add = [&](long long count) {
    ElementwiseParams p{resid, tmp, resid, count};
    launch(ref("add", {}), Dim3{elementwise_blocks(count, kRefBlock)}, kRefBlock, 0, &p);
    mark("add", double(count) * 12);
  };
  for (size_t l = 0; l < ops_.layers.size(); ++l) {
    const LayerOps& L = ops_.layers[l];
    norm(L.input_norm);
    cast(h, n * c.hidden_size);
    gemm(reinterpret_cast<const void*>(fw_->wqkv[l].ptr()), sqkv(l), x16, n, c.hidden_size, qkvd, qkv_.as<void>(), DType::F32,
         0.0f, "gemm_qkv", &gemv_slot("qkv"));
    if (fw_->bqkv[l].ptr()) bias_add(qkv_.as<float>(), reinterpret_cast<const void*>(fw_->bqkv[l].ptr()), n, qkvd);
    if (flash) prefill_attention(L, l, n, *flash, nullptr);
    else attention(L, l, n, false);
    cast(attn_.as<float>(), n * c.q_dim());
    gemm(wptr(L.o, 0), sptr(L.o), x16, n, c.q_dim(), c.hidden_size, tmp, DType::F32, 0.0f, "gemm_o", &gemv_slot("o"));
    if (const void* ob = wptr(L.o, 1)) bias_add(tmp, ob, n, c.hidden_size);
    add(n * c.hidden_size);
    if (L.moe) {
      moe_mlp(L, l, n);
      continue;
    }
    norm(L.post_norm);
    cast(h, n * c.hidden_size);
    gemm(wptr(L.gate, 0), sptr(L.gate), x16, n, c.hidden_size, c.intermediate_size, gate_.as<void>(), DType::F32, 0.0f,
         "gemm_gate_up", &gemv_slot("gate_up"));
    gemm(wptr(L.up, 0), sptr(L.up), x16, n, c.hidden_size, c.intermediate_size, up_.as<void>(), DType::F32, 0.0f, "gemm_gate_up",
         &gemv_slot("gate_up"));
    ElementwiseParams sp{gate_.as<float>(), up_.as<float>(), gate_.as<float>(), n * c.intermediate_size};
    launch(ref("swiglu", {}), Dim3{elementwise_blocks(n * c.intermediate_size, kRefBlock)}, kRefBlock, 0, &sp);
    mark("swiglu", double(n * c.intermediate_size) * 12);
    cast(gate_.as<float>(), n * c.intermediate_size);
    gemm(wptr(L.down, 0), sptr(L.down), x16, n, c.intermediate_size, c.hidden_size, tmp, DType::F32, 0.0f, "gemm_down",
         &gemv_slot("down"));
    add(n * c.hidden_size);
  }
}

void FastExecutor::attention(const LayerOps& L, size_t layer, long long n, bool pdl) {
  const ModelConfig& c = g_.config;
  const int hd = int(c.head_dim);
  QkvPostParams qp{qkv_.as<float>(), q_.as<float>(), L.q_norm ? wptr(L.q_norm, 0) : nullptr,
                   L.k_norm ? wptr(L.k_norm, 0) : nullptr, float(c.rms_norm_eps), in_.positions(),
                   in_.slots(), inv_freq_.as<float>(), kcache_[layer].as<unsigned short>(),
                   vcache_[layer].as<unsigned short>(), n, c.num_heads, c.num_kv_heads, c.head_dim, lim_.max_seq,
                   rope_cos_.as<float>(), rope_sin_.as<float>()};
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

// The prefill attention as attn_prefill.pipe: qkv_post.rows (q/k norm, rope, KV-cache write; one
// warp per row), then one block per (query tile, head), writing f32 rows to attn_ or, given out16,
// the output projection's 16-bit input.
void FastExecutor::prefill_attention(const LayerOps& L, size_t layer, long long n, const Variant& v, void* out16) {
  const ModelConfig& c = g_.config;
  QkvPostParams qp{qkv_.as<float>(), q_.as<float>(), L.q_norm ? wptr(L.q_norm, 0) : nullptr,
                   L.k_norm ? wptr(L.k_norm, 0) : nullptr, float(c.rms_norm_eps), in_.positions(),
                   in_.slots(), inv_freq_.as<float>(), kcache_[layer].as<unsigned short>(),
                   vcache_[layer].as<unsigned short>(), n, c.num_heads, c.num_kv_heads, c.head_dim, lim_.max_seq,
                   rope_cos_.as<float>(), rope_sin_.as<float>()};
  const long long heads = c.num_heads + 2 * c.num_kv_heads;
  const float scale = 1.0f / std::sqrt(float(c.head_dim));
  unsigned short* q16 = nullptr;  // Q as the attention's bf16 fragments, in q_'s memory (half of it)
  if (const std::optional<Variant> rows = prefill_qkv_post_variant(c, wt_, arch_)) {
    if (cfg_.prefill_q16) {
      q16 = reinterpret_cast<unsigned short*>(q_.as<float>());
      qp.q16 = q16;
      qp.q16_scale = scale * 1.4426950408889634f;  // as attn_prefill.pipe computes its qscale
    }
    const long long per_block = rows->threads() / 32;
    launch(load_kernel(*rows), Dim3{unsigned((n * heads + per_block - 1) / per_block)}, unsigned(rows->threads()), 0, &qp);
  } else {
    launch(load_kernel(qkv_post_variant(cfg_, wt_, arch_)), Dim3{unsigned(heads), unsigned(n)}, unsigned(cfg_.qkv_post_block),
           0, &qp);
  }
  // bytes: the f32 qkv rows read, q written f32 (or bf16), k and v written bf16
  mark("qkv_post", double(n) * double(c.q_dim() + 2 * c.kv_dim()) * 4 + double(n) * double(c.q_dim()) * (q16 ? 2 : 4) +
                       double(n) * double(2 * c.kv_dim()) * 2);
  PrefillAttnParams ap{q_.as<float>(), kcache_[layer].as<unsigned short>(), vcache_[layer].as<unsigned short>(),
                       attn_.as<float>(), in_.positions(), in_.slots(), prefill_tiles_.as<int>(), n, c.num_heads,
                       c.num_kv_heads, lim_.max_seq, scale, out16,
                       cfg_.prefill_flash_in_order, q16};
  launch(load_kernel(v), Dim3{unsigned(prefill_tile_count_), unsigned(c.num_heads)}, unsigned(v.threads()),
         prefill_attention_smem(v), &ap, false, "attention");
  if (profile_) {  // causal: each row's query against its positions so far, QK^T and PV
    double pairs = 0;
    for (long long t = 0; t < n; ++t) pairs += double(last_positions_[size_t(t)] + 1);
    mark("attention", 0, 4.0 * pairs * double(c.num_heads * c.head_dim));
  }
}

void FastExecutor::gemm(const void* w, const float* ws, const void* x16, long long n, long long in, long long out_dim, void* out,
                        DType out_t, float beta, const char* kind, const GemvSlotField* slot) {
  const int algo = slot && slot->prefill_algo ? cfg_.*slot->prefill_algo : -1;
  if (ws) {  // an FP8 weight: dequantized to wt_ (rounded, as the activations are for the GEMM)
    const bool block = fp8_ == Fp8Scales::Block;
    Fp8DequantParams dp{static_cast<const unsigned char*>(w), ws, wdq_.as<void>(), out_dim, in, block ? 128 : 1,
                        block ? 128 : in, block ? (in + 127) / 128 : 1};
    const Variant v = fp8_dequant_variant(wt_, arch_);  // K % 16 == 0 (fast_fp8_scales)
    const unsigned groups = unsigned(in / 16), per_row = (groups + unsigned(v.threads()) - 1) / unsigned(v.threads());
    launch(load_kernel(v), Dim3{per_row, unsigned(out_dim)}, unsigned(v.threads()), 0, &dp);
    w = wdq_.as<void>();
    mark("fp8_dequant", double(out_dim * in) * double(1 + dtype_size(wt_)));
  }
  // Our own GEMMs' stores: 16-bit (beta 0), f32, or added into f32 (beta 1).
  const int epi = out_t == wt_ && beta == 0.0f ? 0 : out_t == DType::F32 ? (beta == 0.0f ? 1 : beta == 1.0f ? 2 : -1) : -1;
  if (const std::optional<Variant> own = own_gemm(slot, epi, n, in, out_dim)) {
    launch_own_gemm(*own, gemm16_params(*own, wt_, x16, w, out, n, out_dim, in, in, in, out_dim));
  } else if (algo >= 0 && n >= kLtFromTokens) {
    if (!lt_) lt_ = std::make_unique<LtGemm>(s_, kLtAlgorithms);
    lt_->run(LtShape{wt_, out_t, n, in, out_dim, beta != 0.0f}, algo, x16, w, out);
  } else {
    cublas_gemm(cublas_, wt_, x16, w, out, out_t, n, in, out_dim, beta);
  }
  mark(kind, 0, 2.0 * double(n) * double(in) * double(out_dim));
}

std::optional<Variant> FastExecutor::own_gemm(const GemvSlotField* slot, int epi, long long n, long long in,
                                              long long out_dim) const {
  if (epi < 0 || n < kWgmmaFromTokens || !gemm16_shape_reason(in, out_dim).empty()) return std::nullopt;
  return prefill_gemm16_variant(cfg_, epi, wt_, arch_, slot);
}

void FastExecutor::launch_own_gemm(const Variant& v, const GemmW16Params& p) {
  launch(load_kernel(v), gemm16_grid(v, p.m, p.n, Device::get().info().sm_count), unsigned(v.threads()), size_t(gemm16_smem(v)), &p);
}

const void* FastExecutor::gemm_swiglu(const LayerOps& L, const void* x16, long long n) {
  const ModelConfig& c = g_.config;
  const long long in = c.hidden_size, out_dim = c.intermediate_size;
  if (!cfg_.prefill_swiglu_epilogue || sptr(L.gate) || sptr(L.up)) return nullptr;
  const std::optional<Variant> own = own_gemm(&gemv_slot("gate_up"), 3, n, in, out_dim);
  if (!own) return nullptr;
  // The output goes to gate_ (no gate GEMM writes it here): x16 still holds this GEMM's input.
  launch_own_gemm(*own, gemm16_params(*own, wt_, x16, wptr(L.gate, 0), gate_.as<void>(), n, out_dim, in, in, in, out_dim,
                                      wptr(L.up, 0)));
  mark("gemm_gate_up", 0, 4.0 * double(n) * double(in) * double(out_dim));
  return gate_.as<void>();
}

void FastExecutor::bias_add(float* out, const void* bias, long long n, long long cols) {
  BiasParams bp{out, bias, n, cols};
  launch(ref("bias", {}, {wt_}), Dim3{elementwise_blocks(n * cols, kRefBlock)}, kRefBlock, 0, &bp);
  mark("bias", double(n * cols) * 8);
}

void FastExecutor::norm16(const Op* norm, const float* x, long long rows, long long dim, void* out) {
  NormCastParams p{x, wptr(norm, 0), out, rows, dim, float(g_.config.rms_norm_eps)};
  launch(load_kernel(prefill_norm_variant(wt_, arch_)), Dim3{unsigned(rows)}, kRefBlock, 0, &p);
  mark("rms_norm", double(rows * dim) * double(4 + dtype_size(wt_)));
}

Variant prefill_norm_variant(DType wt, const std::string& arch) {
  return make_variant(find_family("rms_norm", "cast"), {{"BLOCK", int(kRefBlock)}}, {wt}, arch);
}

OwnGemmChoice prefill_gemm_point(const FastConfig& cfg, const GemvSlotField* slot, const std::string& arch) {
  if (slot && slot->prefill_gemm && (cfg.*slot->prefill_gemm).route != kGemmLibrary) return cfg.*slot->prefill_gemm;
  if (cfg.prefill_wgmma && arch == "sm_90")
    return {kGemmWgmma,         cfg.prefill_wgmma_bn,   cfg.prefill_wgmma_stages,
            cfg.prefill_wgmma_pipe, cfg.prefill_wgmma_load, cfg.prefill_wgmma_cluster, cfg.prefill_wgmma_sched};
  if (cfg.prefill_mma) return {kGemmMma, cfg.prefill_mma_bn, cfg.prefill_mma_stages, 0, 0, 1, 0};
  return {};
}

std::optional<Variant> own_gemm_variant(const OwnGemmChoice& p, int epi, DType wt, const std::string& arch) {
  if (p.route == kGemmWgmma) {
    if (arch != "sm_90") return std::nullopt;
    const Family& f = find_family("gemm", "wgmma");
    const std::map<std::string, int> point = {{"BLOCK", 384},    {"BN", p.bn},     {"STAGES", p.stages},
                                              {"EPI", epi},      {"PIPE", p.pipe}, {"LOAD", p.load},
                                              {"CLUSTER", p.cluster}, {"SCHED", p.sched}};
    // A plan or an override can name a combination the family has no kernel for (e.g. SCHED 1 or
    // CLUSTER 2 without LOAD 1): the user's input, said as such.
    if (std::string why = f.constraint(point); !why.empty())
      throw_input("prompt GEMM gemm.wgmma (bn " + std::to_string(p.bn) + ", stages " + std::to_string(p.stages) + ", load " +
                      std::to_string(p.load) + ", cluster " + std::to_string(p.cluster) + ", sched " + std::to_string(p.sched) + ")",
                  why);
    return make_variant(f, point, {wt}, "sm_90a");
  }
  const Family& f = find_family("gemm", "mma");
  if (p.route != kGemmMma || !arch_constraint(f, arch).empty()) return std::nullopt;
  return make_variant(f, {{"BLOCK", 256}, {"BN", p.bn}, {"STAGES", p.stages}, {"EPI", epi}}, {wt}, arch);
}

std::optional<Variant> prefill_gemm16_variant(const FastConfig& cfg, int epi, DType wt, const std::string& arch,
                                              const GemvSlotField* slot) {
  return own_gemm_variant(prefill_gemm_point(cfg, slot, arch), epi, wt, arch);
}

int prefill_gemm_epi(const GemvSlotField& slot, const FastConfig& cfg, bool fp8) {
  const std::string name = slot.name;
  if (name == "qkv") return 1;
  if (name == "gate_up") return cfg.prefill_swiglu_epilogue && !fp8 ? 3 : 0;
  return 2;  // o and down add into the residual stream
}

Variant prefill_swiglu_variant(DType wt, const std::string& arch) {
  return make_variant(find_family("swiglu", "w16"), {{"BLOCK", int(kRefBlock)}}, {wt}, arch);
}

}  // namespace ac::cuda
