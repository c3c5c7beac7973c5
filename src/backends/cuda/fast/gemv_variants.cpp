// The decode GEMVs' kernel variants (gemv.fused, gemv.mma, mlp.fused) as the fast path binds a
// region's point at a batch template, and their launch shapes.
#include <algorithm>
#include <cstdlib>

#include "agentcompile/core/error.h"
#include "backends/cuda/device.h"
#include "backends/cuda/fast/variants.h"
#include "backends/cuda/fast_executor.h"
#include "backends/cuda/kernel_loader.h"

namespace ac::cuda {

// A batch of B tokens turns the GEMV into a skinny GEMM: rows per warp, then the unroll, shrink
// until accumulators and loads in flight fit the registers without spilling (at batch 1 every
// valid point is kept as it is).
Variant fast_gemv_variant(const GemvChoice& ch, int epi, int batch, DType wt, const std::string& arch) {
  const int mats = epi == kEpiSwiglu ? 2 : 1;
  int rows = ch.rows, unroll = ch.unroll;
  while (rows > 1 && rows * batch * mats > 8) rows /= 2;
  while (unroll > 1 && rows * batch * mats * unroll > 8) unroll /= 2;
  return make_variant(find_family("gemv", "fused"),
                      {{"BLOCK", ch.block}, {"ROWS", rows}, {"UNROLL", unroll},
                       {"SPLITK", epi == kEpiResidual ? ch.splitk : 1}, {"BATCH", batch}, {"EPI", epi}},
                      {wt}, arch);
}

Variant fast_fp8_gemv_variant(const GemvChoice& ch, int epi, int batch, Fp8Scales sc, DType wt, const std::string& arch,
                              int cvt) {
  std::map<std::string, int> values = fast_gemv_variant(ch, epi, batch, wt, arch).values;
  values["SCALE"] = int(sc);
  values["CVT"] = cvt;
  return make_variant(find_family("gemv", "fp8"), values, {wt}, arch);
}

std::optional<Variant> fast_mma_fp8_variant(const MmaChoice& ch, int terms, int epi, int batch, long long K, Fp8Scales sc,
                                            DType wt, const std::string& arch, int cvt) {
  if (K % 64 != 0 || sc == Fp8Scales::None) return std::nullopt;
  const std::optional<Variant> m = fast_mma_variant(ch, terms, epi, batch, K, wt, arch);  // bf16, sm_80+
  if (!m) return std::nullopt;
  std::map<std::string, int> values = m->values;
  values["SCALE"] = int(sc);
  values["CVT"] = cvt;
  return make_variant(find_family("gemv", "mma_fp8"), values, {}, arch);
}

Variant fast_fp8_decode_gemv(const FastConfig& cfg, const GemvChoice& gemv, const MmaChoice& mma, int epi, int batch,
                             long long K, Fp8Scales sc, DType wt, const std::string& arch) {
  if (cfg.fp8_batched_mma && batch > 1 && batch >= cfg.mma_min_batch)
    if (auto v = fast_mma_fp8_variant(mma, cfg.mma_terms, epi, batch, K, sc, wt, arch, cfg.fp8_cvt)) return *v;
  return fast_fp8_gemv_variant(gemv, epi, batch, sc, wt, arch, cfg.fp8_cvt);
}

Variant fp8_dequant_variant(DType wt, const std::string& arch) {
  return make_variant(find_family("fp8_dequant", "rows"), {{"BLOCK", 256}}, {wt}, arch);
}

FastConfig fp8_fast_config(FastConfig cfg, bool fp8_head) {
  // The FP8 points take the slots' places (a 16-bit lm_head keeps its points).
  for (const GemvSlotField& s : kGemvSlots)
    if (s.fp8 && (fp8_head || s.fp8 != &FastConfig::lm_head_fp8)) {
      cfg.*s.gemv = cfg.*s.fp8;
      cfg.*s.mma = cfg.*s.mma_fp8;
    }
  cfg.mlp_fused_batch = 0;
  cfg.attn_o = 0;
  cfg.attn_merge_o = 0;
  cfg.persistent = 0;
  return cfg;
}

namespace {
// gemv.mma's dynamic shared memory: the warps' partial tiles.
size_t mma_smem(int block, int mt, int mats) { return size_t(block / 32 * mats * mt * 128) * 4; }
}  // namespace

std::optional<Variant> fast_mma_variant(const MmaChoice& ch, int terms, int epi, int batch, long long K, DType wt,
                                        const std::string& arch) {
  if (wt != DType::BF16 || K % 32 != 0 || arch.size() < 4 || std::atoi(arch.c_str() + 3) < 80) return std::nullopt;
  const int mats = epi == kEpiSwiglu ? 2 : 1;
  int mt = ch.mt, unroll = ch.unroll;
  while (mt > 1 && mt * unroll * mats > 4) mt /= 2;
  while (unroll > 1 && mt * unroll * mats > 4) unroll /= 2;
  const int splitk = epi == kEpiResidual ? ch.splitk : 1;
  return make_variant(find_family("gemv", "mma"),
                      {{"BLOCK", ch.block}, {"MT", mt}, {"UNROLL", unroll}, {"SPLITK", splitk}, {"TERMS", terms},
                       {"BATCH", batch}, {"EPI", epi}},
                      {}, arch);
}

Variant fast_decode_gemv(const FastConfig& cfg, const GemvChoice& gemv, const MmaChoice& mma, int epi, int batch,
                         long long K, DType wt, const std::string& arch) {
  if (cfg.batched_mma && batch > 1 && batch >= cfg.mma_min_batch)
    if (auto v = fast_mma_variant(mma, cfg.mma_terms, epi, batch, K, wt, arch)) return *v;
  return fast_gemv_variant(gemv, epi, batch, wt, arch);
}

LaunchShape gemv_launch_shape(const Variant& v, long long N, long long K) {
  if (v.family->name == "mma" || v.family->name == "mma_fp8") {
    const int splitk = v.param("SPLITK"), mt = v.param("MT"), block = v.param("BLOCK");
    return LaunchShape{unsigned((N + 16 * mt - 1) / (16 * mt)), unsigned(splitk), unsigned(block),
                       mma_smem(block, mt, v.param("EPI") == kEpiSwiglu ? 2 : 1)};
  }
  const int splitk = v.param("SPLITK"), block = v.param("BLOCK"), rows = v.param("ROWS");
  const bool fp8 = v.family->name == "fp8";
  const long long kchunk = gemv_kchunk(K, splitk, fp8 ? 16 : 8);
  const long long rows_per_block = block / 32 * rows;
  size_t smem = size_t(v.param("BATCH")) * size_t(kchunk) * 4;
  if (fp8 && v.param("SCALE") == 1)  // the block's 128 x 128 scales after x', per matrix
    smem += size_t(v.param("EPI") == kEpiSwiglu ? 2 : 1) * size_t((K + 127) / 128) * 4;
  return LaunchShape{unsigned((N + rows_per_block - 1) / rows_per_block), unsigned(splitk), unsigned(block), smem};
}

std::optional<Variant> fast_mlp_variant(const FastConfig& cfg, int batch, long long H, long long I, DType wt,
                                        const std::string& arch) {
  if (batch > cfg.mlp_fused_batch || batch > 2 || H % 8 || I % 8) return std::nullopt;
  const MlpChoice& m = cfg.mlp;
  if (m.bps < 1 || m.bps > 8) throw_input("mlp.fused", "blocks per SM must be 1..8");
  try {  // make_variant checks the domains and the constraint; a configured point is input
    return make_variant(find_family("mlp", "fused"),
                        {{"BLOCK", m.block}, {"KC", m.kc}, {"ROWS", m.rows}, {"UNROLL", m.unroll}, {"BATCH", batch}}, {wt}, arch);
  } catch (const Error& e) {
    throw_input("mlp.fused", e.reason());
  }
}

LaunchShape mlp_launch_shape(const LoadedKernel& k, const Variant& v, long long H, long long I, int bps) {
  const size_t smem = size_t(2 * v.param("BATCH") * H) * 4;
  int per_sm = 0;
  CU_CHECK(drv().cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k.fn, v.threads(), smem));
  if (per_sm < 1) throw_internal("mlp.fused", k.name + " cannot be resident on an SM");
  const long long units = (I + v.param("KC") - 1) / v.param("KC");
  const long long grid = std::min<long long>(units, (long long)Device::get().info().sm_count * std::min(per_sm, bps));
  return LaunchShape{unsigned(grid), 1, unsigned(v.threads()), smem};
}

}  // namespace ac::cuda
