// The CUDA fast path's mixture-of-experts support, without a GPU: which graphs it runs (16-bit
// experts whose widths the expert GEMVs read; FP8 experts and sliding windows keep the library
// route), the kernels it lists for them, and that every point of the expert GEMVs compiles with
// NVRTC without spilling. The GPU runs are CudaMoeGemv.* and CudaFastMoe.*.
#ifdef AGENTCOMPILE_HAVE_CUDA
#include <gtest/gtest.h>

#include <set>

#include "agentcompile/core/error.h"
#include "agentcompile/ir/graph.h"
#include "agentcompile/model/hf_config.h"
#include "agentcompile/model/model.h"
#include "agentcompile/model/synth_model.h"
#include "backends/cuda/family.h"
#include "backends/cuda/fast/moe_groups.h"
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
  EXPECT_EQ(fast_path_not_default(g), "");  // the auto route takes it
  auto families = [&](const std::string& override_spec) {
    std::set<std::string> out;
    for (const Variant& v : fast_path_variants(m->config, DType::BF16, apply_fast_config_override({}, override_spec), "sm_90",
                                               Fp8Scales::None))
      out.insert(v.family->op + "." + v.family->name);
    return out;
  };
  // By default the split router whose last block per token picks (no routing kernel), and the
  // decode down projection per pick (the prompt's keeps moe_down.gemv).
  std::set<std::string> names = families("");
  for (const char* k : {"moe_gate_up.gemv", "moe_down.gemv", "moe_down.split", "moe_router.logits"}) EXPECT_TRUE(names.count(k)) << k;
  EXPECT_FALSE(names.count("moe_router.fused"));
  EXPECT_FALSE(names.count("moe_route.warp"));
  // The split router with the routing kernel.
  names = families("moe_router_split=1");
  EXPECT_TRUE(names.count("moe_route.warp"));
  // The fused router: one block per token for the norm, the logits and the picks.
  names = families("moe_router_split=0");
  EXPECT_TRUE(names.count("moe_router.fused"));
  EXPECT_FALSE(names.count("moe_route.warp"));
  EXPECT_FALSE(names.count("moe_router.logits"));
  // moe_down.gemv alone.
  names = families("moe_down_split=0");
  EXPECT_FALSE(names.count("moe_down.split"));
  EXPECT_TRUE(names.count("moe_down.gemv"));
  // The grouped prompt path (the default): the gather and combine passes around cuBLAS's grouped
  // GEMMs; without it the prompt runs the expert GEMVs alone.
  names = families("");
  EXPECT_TRUE(names.count("moe_gather.rows"));
  EXPECT_TRUE(names.count("moe_combine.rows"));
  names = families("moe_prefill_grouped=0");
  EXPECT_FALSE(names.count("moe_gather.rows"));
  EXPECT_FALSE(names.count("moe_combine.rows"));
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
  odd = big;
  odd.moe.experts_per_token = 33;  // a warp's lanes hold the picks
  EXPECT_EQ(moe_unsupported(odd), "more than 32 experts per token or 1024 experts");
}

// A prompt's picks grouped by expert (the grouped expert GEMMs' rows): each expert's run holds
// exactly its picks in token order, the runs in expert order, pos inverts rows; an expert nobody
// picked has an empty run; an index outside the experts is a bug.
TEST(FastMoe, PicksGroupByExpert) {
  const long long n = 4, k = 2, E = 5;
  const std::vector<int32_t> ids = {1, 3, 0, 3, 3, 4, 1, 3};  // token t's picks at 2t, 2t + 1
  const ExpertGroups g = group_by_expert(ids.data(), n, k, E);
  EXPECT_EQ(g.count, (std::vector<int32_t>{1, 2, 0, 4, 1}));
  EXPECT_EQ(g.start, (std::vector<int32_t>{0, 1, 3, 3, 7}));
  EXPECT_EQ(g.rows, (std::vector<int32_t>{2, 0, 6, 1, 3, 4, 7, 5}));
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(g.rows[size_t(g.pos[i])], int32_t(i));
    const int32_t e = ids[i];
    EXPECT_GE(g.pos[i], g.start[size_t(e)]);
    EXPECT_LT(g.pos[i], g.start[size_t(e)] + g.count[size_t(e)]);
  }
  const std::vector<int32_t> bad = {0, 5};
  EXPECT_THROW(group_by_expert(bad.data(), 1, 2, E), Error);
}

TEST(FastMoe, FP8ExpertsAndSlidingWindowsKeepTheLibraryRoute) {
  auto q = tiny("tiny-qwen3-moe", "fp8-block");
  const Graph g = build_decoder_graph(q->config, q->weights);
  EXPECT_NE(fast_path_unsupported(g).find("FP8 mixture-of-experts"), std::string::npos) << fast_path_unsupported(g);
  auto x = tiny("tiny-mixtral");
  EXPECT_EQ(fast_path_unsupported(build_decoder_graph(x->config, x->weights)), "sliding-window attention");
}

// Every kernel a sparse layer loads compiles for sm_90 without spilling: the expert GEMVs at each
// point, the decode down projection per pick, every router form, the picks, the expert count and
// the grouped prompt's passes.
TEST(FastMoe, ExpertGemvPointsCompile) {
  std::set<std::string> done;
  for (DType wt : {DType::BF16, DType::F16})
    for (int block : {128, 256})
      for (int rows : {1, 2, 4}) {
        FastConfig cfg;
        cfg.moe_block = block;
        cfg.moe_rows = rows;
        cfg.moe_router_split = rows == 2 ? 0 : rows == 4 ? 2 : 1;
        cfg.moe_router_ilp = block == 128 ? rows / 2 : 2;  // every ILP of the split router (0, 2 at rows 1, 4; 2)
        cfg.moe_ilp = block == 256 ? 1 : 0;                 // and of the expert GEMVs and the split down projection
        cfg.moe_pick_redux = cfg.moe_router_norm = block == 256 ? 1 : 0;  // PICK 2 and NORM 1 at rows 4
        cfg.moe_gate_up_occ = 1;  // the gate/up GEMV's register bound (at ILP 0: block 128)
        cfg.moe_down_split = 1;
        cfg.moe_prefill_grouped = 1;
        for (const Variant& v : moe_variants(cfg, wt, "sm_90")) {
          if (!done.insert(v.name()).second) continue;
          const JitResult r = jit_compile(JitRequest{v.name(), v.source(), "sm_90", {}});
          ASSERT_TRUE(r.ok) << v.name() << ": " << r.error;
          EXPECT_EQ(r.spill_bytes, 0) << v.name() << "\n" << r.log;
        }
      }
}

}  // namespace
#endif
