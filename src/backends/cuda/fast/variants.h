#pragma once
// Kernel variants the fast path's files share beside those fast_executor.h declares: the decode
// attention's (attention_variants.cpp, where each is described), qkv_post's, the device top-k's
// and the prefill's FP8 dequantization.
#include <optional>
#include <string>
#include <vector>

#include "backends/cuda/fast_executor.h"

namespace ac::cuda {

Variant topk_variant(const FastConfig& cfg, const std::string& arch);
Variant qkv_post_variant(const FastConfig& cfg, DType wt, const std::string& arch);
int attn_split(const ModelConfig& c, const FastConfig& cfg, const std::string& arch, bool long_ctx = false);
Variant attn_variant(const ModelConfig& c, const FastConfig& cfg, const std::string& arch);
Variant fused_attn_variant(const ModelConfig& c, const FastConfig& cfg, DType wt, const std::string& arch,
                           bool long_ctx = false);
std::optional<Variant> cluster_attn_variant(const ModelConfig& c, const FastConfig& cfg, DType wt, const std::string& arch);
std::vector<Variant> cluster_long_attn_variants(const ModelConfig& c, const FastConfig& cfg, DType wt,
                                                const std::string& arch);
Variant combine_variant(const ModelConfig& c, const FastConfig& cfg, const std::string& arch);
// attn_prefill.pipe (or .qs, prefill_flash_qs) for prefill steps (its output in `wt`), when
// configured (prefill_flash) and the head dim and GPU allow; the dynamic shared memory its launch
// takes; the query rows of its tiles (prefill_query_tiles).
std::optional<Variant> prefill_flash_variant(const ModelConfig& c, const FastConfig& cfg, DType wt, const std::string& arch);
size_t prefill_attention_smem(const Variant& v);
int prefill_tile_rows(const Variant& v);
// qkv_post.rows for prefill steps with attn_prefill.pipe, where the head dim allows (else qkv_post.fused).
std::optional<Variant> prefill_qkv_post_variant(const ModelConfig& c, DType wt, const std::string& arch);
// A sparse layer's kernels (moe.cpp): moe_gate_up.gemv and moe_down.gemv at cfg's point, and the
// norm, router and routing reference kernels before them; why a mixture of experts cannot run
// (its dimensions), "" when it can or the model is dense.
std::vector<Variant> moe_variants(const FastConfig& cfg, DType wt, const std::string& arch);
// moe_gate_up.gemv at cfg's point (the register bound moe_gate_up_occ only where it fits: ROWS 1, ILP 0).
Variant moe_gate_up_variant(const FastConfig& cfg, DType wt, const std::string& arch);
std::string moe_unsupported(const ModelConfig& c);
// The own-GEMM route a prompt projection takes on `arch`: its slot's (prefill_gemm.<slot>, the plan's)
// where that is not the library's; else gemm.wgmma for every projection (prefill_wgmma, on sm_90),
// else gemm.mma (prefill_mma); else the library's. `slot` null: the lm_head (the switches only).
OwnGemmChoice prefill_gemm_point(const FastConfig& cfg, const GemvSlotField* slot, const std::string& arch);
// Our own GEMM at point p with store `epi` (0 16-bit, 1 f32, 2 added into f32, 3 SwiGLU of gate and
// up): gemm.wgmma (compiled for sm_90a) on sm_90 only, gemm.mma on sm_80+; none for the library's
// route or a GPU the family does not run on.
std::optional<Variant> own_gemm_variant(const OwnGemmChoice& p, int epi, DType wt, const std::string& arch);
// Both: the prompt GEMM of `slot` (null: the switches alone) at store EPI, or none (cuBLAS).
std::optional<Variant> prefill_gemm16_variant(const FastConfig& cfg, int epi, DType wt, const std::string& arch,
                                              const GemvSlotField* slot = nullptr);
// The store a projection's prompt GEMM uses: qkv f32 (1), o and down added into the residual (2),
// gate/up fused with SwiGLU (3) where prefill_swiglu_epilogue is on and the weights are 16-bit, else
// 16-bit (0).
int prefill_gemm_epi(const GemvSlotField& slot, const FastConfig& cfg, bool fp8);
// fp8_dequant.rows into `wt`: the prefill GEMMs' view of an FP8 projection.
Variant fp8_dequant_variant(DType wt, const std::string& arch);
// The prefill's passes that write the GEMMs' 16-bit inputs: rms_norm.cast and swiglu.w16.
Variant prefill_norm_variant(DType wt, const std::string& arch);
Variant prefill_swiglu_variant(DType wt, const std::string& arch);

}  // namespace ac::cuda
