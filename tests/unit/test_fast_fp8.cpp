// The CUDA fast path's reading of FP8 projections, without a GPU: which graphs it can run
// (fast_fp8_scales: the scale layouts gemv.fp8 reads, the shapes it needs, and the auto route's
// choice: fast_path_not_default), that the weights reach the graph as stored, and that every kernel the path launches for an
// FP8 model compiles with NVRTC. The GPU runs are tests/ops/test_cuda_e2e.cpp's CudaFastFp8.
#ifdef AGENTCOMPILE_HAVE_CUDA
#include <gtest/gtest.h>

#include <set>

#include "agentcompile/ir/graph.h"
#include "agentcompile/model/fp8_quantize.h"
#include "agentcompile/model/hf_config.h"
#include "agentcompile/model/model.h"
#include "agentcompile/model/quantization.h"
#include "agentcompile/model/synth_model.h"
#include "backends/cuda/family.h"
#include "backends/cuda/fast_executor.h"
#include "backends/cuda/fast/variants.h"
#include "backends/cuda/nvrtc_jit.h"

using namespace ac;
using namespace ac::cuda;

namespace {

std::unique_ptr<Model> tiny(const std::string& preset, const std::string& weights) {
  SynthOptions so{preset, {}, 5, DType::BF16, {}, true};
  so.weights = weights;
  return synth_model_in_memory(so);
}

TEST(FastFp8, TheGraphHoldsTheWeightsAsStored) {
  auto m = tiny("tiny-qwen3", "fp8-channel");
  const Graph g = build_decoder_graph(m->config, m->weights);
  // Every FP8 weight the loader kept is one of the graph's, with the same codes.
  ASSERT_EQ(g.fp8.size(), m->dequant.weights.size());
  for (const auto& [t, f] : g.fp8) {
    ASSERT_TRUE(m->dequant.weights.count(t->name)) << t->name;
    EXPECT_EQ(f.get(), m->dequant.weights.at(t->name).get()) << t->name;
    EXPECT_EQ(t->shape, (std::vector<int64_t>{f->out, f->in})) << t->name;
  }
  auto plain = tiny("tiny-qwen3", "");
  EXPECT_TRUE(build_decoder_graph(plain->config, plain->weights).fp8.empty());
}

TEST(FastFp8, ScaleLayoutsAndRefusals) {
  std::string why;
  {  // channel scales: one per output row; the auto route and the compile run it on the fast path
    auto m = tiny("tiny-qwen3", "fp8-channel");
    const Graph g = build_decoder_graph(m->config, m->weights);
    EXPECT_EQ(fast_fp8_scales(g, &why), Fp8Scales::Row);
    EXPECT_EQ(why, "");
    EXPECT_EQ(fast_path_unsupported(g), "");
    EXPECT_EQ(fast_path_not_default(g), "");
  }
  {  // 128x128 blocks, but tiny-qwen3's k/v rows (64) end inside a block: q, k, v run as one matrix
    auto m = tiny("tiny-qwen3", "fp8-block");
    const Graph g = build_decoder_graph(m->config, m->weights);
    EXPECT_EQ(fast_fp8_scales(g, &why), Fp8Scales::None);
    EXPECT_NE(why.find("multiple of 128"), std::string::npos) << why;
    EXPECT_EQ(fast_path_unsupported(g), why);
    EXPECT_EQ(fast_path_not_default(g), why);
  }
  {  // a 16-bit model: nothing to say
    auto m = tiny("tiny-qwen3", "");
    const Graph g = build_decoder_graph(m->config, m->weights);
    EXPECT_EQ(fast_fp8_scales(g, &why), Fp8Scales::None);
    EXPECT_EQ(why, "");
    EXPECT_EQ(fast_path_not_default(g), "");
  }
  {  // a checkpoint's 32x40 blocks are not a layout gemv.fp8 reads
    auto m = load_model(fs::path(AC_TEST_FIXTURES) / "hf" / "qwen3_fp8_block32x40");
    const Graph g = build_decoder_graph(m->config, m->weights);
    EXPECT_EQ(fast_fp8_scales(g, &why), Fp8Scales::None);
    EXPECT_NE(why.find("32x40"), std::string::npos) << why;
  }
  {  // per-channel compressed-tensors checkpoint (head_dim 16: 4 heads x 16 = 64 rows, K 64)
    auto m = load_model(fs::path(AC_TEST_FIXTURES) / "hf" / "llama_fp8_channel_ct");
    const Graph g = build_decoder_graph(m->config, m->weights);
    EXPECT_EQ(fast_fp8_scales(g, &why), Fp8Scales::Row) << why;
  }
}

// The kernels an FP8 model's fast path loads, for the real shapes, with fp8_batched_mma off:
// gemv.fp8 at every batch template for the four projections (no gemv.mma, mlp.fused or persistent
// kernel), the 16-bit lm_head as before, and the prefill's dequantization; each compiles for sm_90.
TEST(FastFp8, FastPathVariantsCompile) {
  const ModelConfig c = parse_model_config(find_synth_preset("qwen3-1.7b")->config, "qwen3-1.7b");
  FastConfig cfg;
  cfg.fp8_batched_mma = false;  // BatchedMmaVariantsCompile below lists the default's batches
  cfg.mlp_fused_batch = 2;  // off for FP8 whatever the configuration says
  cfg.persistent = 1;
  std::set<std::string> names, families;
  for (const Variant& v : fast_path_variants(c, DType::BF16, cfg, "sm_90", Fp8Scales::Block)) {
    families.insert(v.family->op + "." + v.family->name);
    if (v.family->name != "fp8" && v.family->op != "fp8_dequant") continue;
    if (!names.insert(v.name()).second) continue;
    const JitResult r = jit_compile(JitRequest{v.name(), v.source(), "sm_90", {}});
    ASSERT_TRUE(r.ok) << v.name() << ": " << r.error;
    EXPECT_LE(r.spill_bytes, 64) << v.name();
  }
  EXPECT_TRUE(families.count("gemv.fp8"));
  EXPECT_TRUE(families.count("fp8_dequant.rows"));
  EXPECT_FALSE(families.count("mlp.fused"));
  EXPECT_FALSE(families.count("decode_layers.persistent"));
  // Four projections at four batch templates at their FP8 points (o and down share theirs by
  // default: one variant each), and the dequantization.
  std::set<std::string> want = {fp8_dequant_variant(DType::BF16, "sm_90").name()};
  const int epis[] = {kEpiStore, kEpiResidual, kEpiSwiglu, kEpiResidual};
  for (int batch : {1, 2, 4, 8})
    for (int i = 0; i < 4; ++i)
      want.insert(fast_fp8_gemv_variant(cfg.*kGemvSlots[i].fp8, epis[i], batch, Fp8Scales::Block, DType::BF16, "sm_90").name());
  EXPECT_EQ(names, want);
  EXPECT_GE(names.size(), size_t(3 * 4 + 1));
}

// FP8 projections run their own points (qkv_fp8, ..., and o_mma_fp8, ... from mma_min_batch on),
// not gemv.fused's or gemv.mma's; the 16-bit lm_head keeps its point, and a 16-bit model never
// reads the FP8 ones.
TEST(FastFp8, ProjectionsRunTheirOwnPoints) {
  FastConfig cfg;
  cfg.qkv_fp8 = {128, 2, 1, 1};
  cfg.down_fp8 = {256, 1, 4, 2};
  cfg.lm_head = {128, 4, 1, 1};
  const FastConfig f = fp8_fast_config(cfg);
  EXPECT_EQ(f.qkv.block, 128);
  EXPECT_EQ(f.qkv.rows, 2);
  EXPECT_EQ(f.down.unroll, 4);
  EXPECT_EQ(f.down.splitk, 2);
  EXPECT_EQ(f.lm_head.block, 128);
  const ModelConfig c = parse_model_config(find_synth_preset("qwen3-1.7b")->config, "qwen3-1.7b");
  std::set<int> fp8_blocks, plain_blocks;
  for (const Variant& v : fast_path_variants(c, DType::BF16, cfg, "sm_90", Fp8Scales::Row))
    if (v.family->op == "gemv" && v.family->name == "fp8" && v.param("EPI") == kEpiStore) fp8_blocks.insert(v.param("BLOCK"));
  for (const Variant& v : fast_path_variants(c, DType::BF16, cfg, "sm_90", Fp8Scales::None))
    if (v.family->op == "gemv" && v.family->name == "fused" && v.param("EPI") == kEpiStore) plain_blocks.insert(v.param("BLOCK"));
  EXPECT_EQ(fp8_blocks, std::set<int>{128});
  EXPECT_EQ(plain_blocks, std::set<int>{cfg.qkv.block});
  // Likewise gemv.mma_fp8 at batch 8 runs the slots' FP8 tensor-core points, gemv.mma its own.
  cfg.o_mma_fp8 = {256, 4, 1, 2};
  cfg.o_mma = {512, 1, 1, 1};
  std::set<std::string> fp8_o, plain_o;
  for (const Variant& v : fast_path_variants(c, DType::BF16, cfg, "sm_90", Fp8Scales::Block))
    if (v.family->name == "mma_fp8" && v.param("EPI") == kEpiResidual && v.param("BATCH") == 8)
      fp8_o.insert(std::to_string(v.param("BLOCK")) + ":" + std::to_string(v.param("MT")) + ":" + std::to_string(v.param("SPLITK")));
  for (const Variant& v : fast_path_variants(c, DType::BF16, cfg, "sm_90", Fp8Scales::None))
    if (v.family->name == "mma" && v.param("EPI") == kEpiResidual && v.param("BATCH") == 8)
      plain_o.insert(std::to_string(v.param("BLOCK")) + ":" + std::to_string(v.param("MT")) + ":" + std::to_string(v.param("SPLITK")));
  // o's and down's (the residual epilogue's two projections), each at its own point
  EXPECT_TRUE(fp8_o.count("256:4:2")) << testing::PrintToString(fp8_o);
  EXPECT_FALSE(fp8_o.count("512:1:1")) << testing::PrintToString(fp8_o);
  EXPECT_TRUE(plain_o.count("512:1:1")) << testing::PrintToString(plain_o);
}

// With fp8_batched_mma (on by default) batches from 2 on run gemv.mma_fp8 at
// the slots' gemv.mma_fp8 points, batch 1 gemv.fp8; every such kernel of the target models compiles for
// sm_90 without spilling, in both scale layouts. K not a multiple of 64 keeps gemv.fp8.
TEST(FastFp8, BatchedMmaVariantsCompile) {
  FastConfig cfg;
  cfg.fp8_batched_mma = true;
  std::set<std::string> compiled;
  // The codes widened by cvt (fp8_cvt 0) for the three models, by bit moves (1) for one of them.
  for (const int cvt : {0, 1})
  for (const char* preset : {"qwen3-1.7b", "llama-3.2-1b", "qwen3-4b"})
    for (Fp8Scales sc : {Fp8Scales::Block, Fp8Scales::Row}) {
      if (cvt == 1 && std::string(preset) != "qwen3-1.7b") continue;
      cfg.fp8_cvt = cvt;
      const ModelConfig c = parse_model_config(find_synth_preset(preset)->config, preset);
      int mma = 0;
      for (const Variant& v : fast_path_variants(c, DType::BF16, cfg, "sm_90", sc, true)) {
        if (v.family->op != "gemv") continue;
        if (v.param("BATCH") == 1) EXPECT_EQ(v.family->name, "fp8") << v.name();
        else EXPECT_EQ(v.family->name, "mma_fp8") << v.name();
        EXPECT_EQ(v.param("CVT"), cvt) << v.name();
        if (v.family->name != "mma_fp8") continue;
        ++mma;
        EXPECT_EQ(v.param("SCALE"), int(sc)) << v.name();
        if (!compiled.insert(v.name()).second) continue;
        const JitResult r = jit_compile(JitRequest{v.name(), v.source(), "sm_90", {}});
        ASSERT_TRUE(r.ok) << v.name() << ": " << r.error;
        EXPECT_EQ(r.spill_bytes, 0) << v.name();
      }
      EXPECT_EQ(mma, 3 * 6) << preset;  // batches 2, 4, 8 x (four projections, the head's argmax and store)
    }
  cfg.fp8_cvt = 0;
  EXPECT_FALSE(fast_mma_fp8_variant(FastConfig{}.qkv_mma, 2, kEpiStore, 8, 2080, Fp8Scales::Row, DType::BF16, "sm_90"));
  EXPECT_FALSE(fast_mma_fp8_variant(FastConfig{}.qkv_mma, 2, kEpiStore, 8, 2048, Fp8Scales::Row, DType::F16, "sm_90"));
  EXPECT_EQ(fast_fp8_decode_gemv(cfg, cfg.qkv, cfg.qkv_mma, kEpiStore, 8, 2080, Fp8Scales::Row, DType::BF16, "sm_90").family->name,
            "fp8");
  FastConfig off;
  off.fp8_batched_mma = false;
  EXPECT_EQ(fast_fp8_decode_gemv(off, cfg.qkv, cfg.qkv_mma, kEpiStore, 8, 2048, Fp8Scales::Row, DType::BF16, "sm_90").family->name,
            "fp8");
}

// An FP8 lm_head (compile --lm-head fp8) runs on the fast path too: gemv.fp8 at lm_head_fp8's point
// with the argmax epilogue in decode steps and the store epilogue for a prompt step's logit rows,
// both compiling for sm_90; without it the head keeps its 16-bit gemv.fused point.
TEST(FastFp8, AnFp8LmHeadRunsGemvFp8) {
  auto m = tiny("tiny-qwen3", "");
  quantize_model_fp8(*m, false, true);
  const Graph g = build_decoder_graph(m->config, m->weights);
  std::string why;
  EXPECT_EQ(fast_fp8_scales(g, &why), Fp8Scales::Row) << why;
  EXPECT_TRUE(fast_fp8_head(g));
  EXPECT_EQ(fast_path_unsupported(g), "");
  auto body = tiny("tiny-qwen3", "fp8-channel");
  EXPECT_FALSE(fast_fp8_head(build_decoder_graph(body->config, body->weights)));
  auto plain = tiny("tiny-qwen3", "");
  EXPECT_FALSE(fast_fp8_head(build_decoder_graph(plain->config, plain->weights)));

  FastConfig cfg;
  cfg.lm_head = {128, 1, 1, 1};
  cfg.lm_head_fp8 = {256, 2, 2, 1};
  EXPECT_EQ(fp8_fast_config(cfg, true).lm_head.rows, 2);
  EXPECT_EQ(fp8_fast_config(cfg, true).lm_head.unroll, 2);
  EXPECT_EQ(fp8_fast_config(cfg, false).lm_head.rows, 1);
  const ModelConfig c = parse_model_config(find_synth_preset("qwen3-1.7b")->config, "qwen3-1.7b");
  std::set<std::string> listed;
  FastConfig gemv_only;  // batches from 2 on run gemv.mma_fp8 by default (BatchedMmaVariantsCompile)
  gemv_only.fp8_batched_mma = false;
  for (const Variant& v : fast_path_variants(c, DType::BF16, gemv_only, "sm_90", Fp8Scales::Block, true)) {
    listed.insert(v.name());
    if (v.family->op == "gemv" && v.param("EPI") == kEpiArgmax) EXPECT_EQ(v.family->name, "fp8") << v.name();
  }
  for (int batch : {1, 2, 4, 8})
    for (int epi : {kEpiArgmax, kEpiStore}) {
      const Variant v = fast_fp8_gemv_variant(FastConfig{}.lm_head_fp8, epi, batch, Fp8Scales::Block, DType::BF16, "sm_90");
      EXPECT_TRUE(listed.count(v.name())) << v.name();
      const JitResult r = jit_compile(JitRequest{v.name(), v.source(), "sm_90", {}});
      ASSERT_TRUE(r.ok) << v.name() << ": " << r.error;
      EXPECT_LE(r.spill_bytes, 64) << v.name();
    }
}

}  // namespace
#endif  // AGENTCOMPILE_HAVE_CUDA
