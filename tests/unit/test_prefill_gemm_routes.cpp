// Which GEMM each prompt projection runs, without a GPU: a plan's route per projection
// (prefill_gemm.<slot>) picks our own family and point for that projection alone, at the store the
// executor gives it; the switches for every projection (prefill_wgmma, prefill_mma) apply where the
// projection's route is the library's; gemm.wgmma only on sm_90; and the plan's kernel list holds
// exactly the variants those routes launch.
#include <gtest/gtest.h>

#include <set>

#include "agentcompile/core/error.h"
#include "agentcompile/model/hf_config.h"
#include "agentcompile/model/synth_model.h"
#include "backends/cuda/fast/variants.h"
#include "backends/cuda/fast_executor.h"
#include "backends/cuda/gemm16.h"

using namespace ac;
using namespace ac::cuda;

namespace {

std::string name_of(const std::optional<Variant>& v) { return v ? v->name() : "library"; }

TEST(PrefillGemmRoutes, EachProjectionTakesItsOwnRoute) {
  FastConfig cfg;
  cfg.prefill_gemm_qkv = {kGemmMma, 64, 3, 0, 0};
  cfg.prefill_gemm_gate_up = {kGemmWgmma, 64, 5, 1, 1};
  const GemvSlotField &qkv = gemv_slot("qkv"), &o = gemv_slot("o"), &gate_up = gemv_slot("gate_up");
  const std::optional<Variant> q = prefill_gemm16_variant(cfg, 1, DType::BF16, "sm_90", &qkv);
  ASSERT_TRUE(q);
  EXPECT_EQ(q->family->name, "mma");
  EXPECT_EQ(q->param("BN"), 64);
  EXPECT_EQ(q->param("STAGES"), 3);
  EXPECT_EQ(q->param("EPI"), 1);
  const std::optional<Variant> gu = prefill_gemm16_variant(cfg, 3, DType::BF16, "sm_90", &gate_up);
  ASSERT_TRUE(gu);
  EXPECT_EQ(gu->family->name, "wgmma");
  EXPECT_EQ(gu->arch, "sm_90a");
  EXPECT_EQ(gu->param("BN"), 64);
  EXPECT_EQ(gu->param("STAGES"), 5);
  EXPECT_EQ(gu->param("PIPE"), 1);
  EXPECT_EQ(gu->param("LOAD"), 1);
  EXPECT_EQ(name_of(prefill_gemm16_variant(cfg, 3, DType::BF16, "sm_80", &gate_up)), "library");  // no wgmma there
  EXPECT_EQ(name_of(prefill_gemm16_variant(cfg, 2, DType::BF16, "sm_90", &o)), "library");
  EXPECT_EQ(name_of(prefill_gemm16_variant(cfg, 1, DType::BF16, "sm_90", nullptr)), "library");  // the lm_head
  // The switch for every projection: where a projection's own route is the library's, and the lm_head.
  cfg.prefill_mma = 1;
  cfg.prefill_mma_bn = 128;
  const std::optional<Variant> og = prefill_gemm16_variant(cfg, 2, DType::BF16, "sm_90", &o);
  ASSERT_TRUE(og);
  EXPECT_EQ(og->family->name, "mma");
  EXPECT_EQ(og->param("BN"), 128);
  EXPECT_EQ(prefill_gemm16_variant(cfg, 1, DType::BF16, "sm_90", &qkv)->param("BN"), 64);  // the plan's own point wins
  EXPECT_TRUE(prefill_gemm16_variant(cfg, 1, DType::BF16, "sm_90", nullptr));
  // A point the family has no kernel for (persistent blocks or pairs need TMA) is the user's error.
  for (const char* bad : {"qkv_gemm=1:128:4:0:0:1:1", "qkv_gemm=1:128:4:0:0:2:0", "qkv_gemm=1:256:4:0:1:1:1"}) {
    const FastConfig b = apply_fast_config_override({}, bad);
    try {
      prefill_gemm16_variant(b, 1, DType::BF16, "sm_90", &qkv);
      ADD_FAILURE() << bad << " gave a kernel";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::BadInput) << bad << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find("LOAD 1"), std::string::npos) << e.what();
    }
  }
  // The stores: qkv f32, o and down added into the residual, gate/up SwiGLU unless unfused or FP8.
  FastConfig d;
  EXPECT_EQ(prefill_gemm_epi(qkv, d, false), 1);
  EXPECT_EQ(prefill_gemm_epi(o, d, false), 2);
  EXPECT_EQ(prefill_gemm_epi(gemv_slot("down"), d, false), 2);
  EXPECT_EQ(prefill_gemm_epi(gate_up, d, false), 3);
  EXPECT_EQ(prefill_gemm_epi(gate_up, d, true), 0);
  d.prefill_swiglu_epilogue = 0;
  EXPECT_EQ(prefill_gemm_epi(gate_up, d, false), 0);
  // Shapes our GEMMs take: K whole 64-wide steps, N a multiple of 8.
  EXPECT_EQ(gemm16_shape_reason(2048, 6144), "");
  EXPECT_NE(gemm16_shape_reason(2080, 6144), "");
  EXPECT_NE(gemm16_shape_reason(2048, 6148), "");
}

TEST(PrefillGemmRoutes, ThePlanKernelsAreTheRoutesVariants) {
  const ModelConfig c = parse_model_config(find_synth_preset("qwen3-1.7b")->config, "qwen3-1.7b");
  FastConfig cfg;
  cfg.prefill_gemm_qkv = {kGemmMma, 64, 3, 0, 0};
  cfg.prefill_gemm_gate_up = {kGemmWgmma, 64, 5, 1, 1};
  auto own = [&](const std::string& arch, Fp8Scales fp8) {
    std::set<std::string> names;
    for (const Variant& v : fast_path_variants(c, DType::BF16, cfg, arch, fp8))
      if (v.family->op == "gemm") names.insert(v.family->name + " EPI " + std::to_string(v.param("EPI")));
    return names;
  };
  EXPECT_EQ(own("sm_90", Fp8Scales::None), (std::set<std::string>{"mma EPI 1", "wgmma EPI 3"}));
  EXPECT_EQ(own("sm_90", Fp8Scales::Block), (std::set<std::string>{"mma EPI 1", "wgmma EPI 0"}));  // FP8: gate, up apart
  EXPECT_EQ(own("sm_80", Fp8Scales::None), (std::set<std::string>{"mma EPI 1"}));
  cfg = FastConfig{};
  EXPECT_EQ(own("sm_90", Fp8Scales::None), std::set<std::string>{});  // the defaults: the library's
}

}  // namespace
