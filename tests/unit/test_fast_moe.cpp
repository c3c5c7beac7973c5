// The CUDA fast path's mixture-of-experts support, without a GPU: which graphs it runs (16-bit
// experts whose widths the expert GEMVs read; FP8 experts and sliding windows keep the library
// route), the kernels it lists for them, and that every point of the expert GEMVs compiles with
// NVRTC without spilling. The GPU runs are CudaMoeGemv.* and CudaFastMoe.*.
#ifdef AGENTCOMPILE_HAVE_CUDA
#include <gtest/gtest.h>

#include <set>

#include "agentcompile/ir/graph.h"
#include "agentcompile/model/hf_config.h"
#include "agentcompile/model/model.h"
#include "agentcompile/model/synth_model.h"
#include "backends/cuda/family.h"
#include "backends/cuda/fast/variants.h"
#include "backends/cuda/fast_executor.h"
#include "backends/cuda/nvrtc_jit.h"

using namespace ac;
using namespace ac::cuda;

namespace {

std::unique_ptr<Model> tiny(const std::string& preset, const std::string& weights = "") {
  SynthOptions so{preset, {}, 5, DType::BF16, {}, true};
  so.weights = weights;
  return synth_model_in_memory(so);
}

TEST(FastMoe, SixteenBitExpertsTakeTheFastPath) {
  auto m = tiny("tiny-qwen3-moe");
  const Graph g = build_decoder_graph(m->config, m->weights);
  EXPECT_EQ(fast_path_unsupported(g), "");
  // The auto route keeps the library route until the expert GEMVs have run on a GPU.
  EXPECT_NE(fast_path_not_default(g).find("not run on a GPU yet"), std::string::npos) << fast_path_not_default(g);
  std::set<std::string> names;
  for (const Variant& v : fast_path_variants(m->config, DType::BF16, FastConfig{}, "sm_90", Fp8Scales::None))
    names.insert(v.family->op + "." + v.family->name);
  for (const char* k : {"moe_gate_up.gemv", "moe_down.gemv", "moe_route.ref", "linear.ref", "rms_norm.ref"})
    EXPECT_TRUE(names.count(k)) << k;
  // The persistent kernel runs dense MLPs only.
  EXPECT_FALSE(persistent_plan(m->config, apply_fast_config_override({}, "persistent=1"), DType::BF16, "sm_90", false));
  // A dense model lists no expert kernels.
  auto d = tiny("tiny-qwen3");
  for (const Variant& v : fast_path_variants(d->config, DType::BF16, FastConfig{}, "sm_90", Fp8Scales::None))
    EXPECT_NE(v.family->op.rfind("moe_", 0), 0u) << v.name();
  // Qwen3-30B-A3B's shapes fit: hidden 2048, 8 x 768 activations per token in shared memory.
  const ModelConfig big = parse_model_config(find_synth_preset("qwen3-30b-a3b")->config, "qwen3-30b-a3b");
  EXPECT_EQ(moe_unsupported(big), "");
  ModelConfig odd = big;
  odd.moe.expert_intermediate = 764;
  EXPECT_EQ(moe_unsupported(odd), "expert dimensions not multiples of 8");
  odd.moe.expert_intermediate = 8192;  // 8 x 8192 floats: 256 KiB
  EXPECT_EQ(moe_unsupported(odd), "a token's experts' activations do not fit the shared memory");
}

TEST(FastMoe, FP8ExpertsAndSlidingWindowsKeepTheLibraryRoute) {
  auto q = tiny("tiny-qwen3-moe", "fp8-block");
  const Graph g = build_decoder_graph(q->config, q->weights);
  EXPECT_NE(fast_path_unsupported(g).find("FP8 mixture-of-experts"), std::string::npos) << fast_path_unsupported(g);
  auto x = tiny("tiny-mixtral");
  EXPECT_EQ(fast_path_unsupported(build_decoder_graph(x->config, x->weights)), "sliding-window attention");
}

TEST(FastMoe, ExpertGemvPointsCompile) {
  for (DType wt : {DType::BF16, DType::F16})
    for (int block : {128, 256})
      for (int rows : {1, 2, 4}) {
        FastConfig cfg;
        cfg.moe_block = block;
        cfg.moe_rows = rows;
        for (const Variant& v : moe_variants(cfg, wt, "sm_90")) {
          if (v.family->name != "gemv") continue;
          const JitResult r = jit_compile(JitRequest{v.name(), v.source(), "sm_90", {}});
          ASSERT_TRUE(r.ok) << v.name() << ": " << r.error;
          EXPECT_EQ(r.spill_bytes, 0) << v.name() << "\n" << r.log;
        }
      }
}

}  // namespace
#endif
