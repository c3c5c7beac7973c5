// The CUDA search's parts that need no GPU: FastConfig <-> plan, the plan's cuda_fast from its
// routes, and the kernel binaries a CUDA plan ships (NVRTC, sha256-checked when loaded).
#ifdef AGENTCOMPILE_HAVE_CUDA
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

#include "agentcompile/compiler/compile.h"
#include "agentcompile/model/fp8_quantize.h"
#include "agentcompile/model/model.h"
#include "agentcompile/model/synth_model.h"
#include "agentcompile/ir/graph.h"
#include "agentcompile/runtime/plan_executor.h"
#include "agentcompile/tuning/backend.h"
#include "agentcompile/tuning/regions.h"
#include "agentcompile/tuning/summary.h"
#include "agentcompile/tuning/target.h"
#include "backends/cuda/fast_executor.h"
#include "backends/cuda/fast_knobs.h"
#include "backends/cuda/kernel_loader.h"
#include "backends/cuda/nvrtc_jit.h"
#include "backends/cuda/plan_config.h"
#include "backends/cuda/search_eval.h"
#include "unit/model_test_util.h"
#include "unit/plan_test_util.h"

namespace ac {
namespace {

using test::expect_bad_input;
using test::TempDir;

KnobValues read(const Json& j) { return KnobValues::from_json(cuda::fast_knobs().table(), j, "cuda_fast"); }

TEST(CudaSearch, FastConfigThroughThePlan) {
  cuda::FastConfig c;
  c.o = cuda::GemvChoice{128, 4, 1, 8};
  c.attn_split = 128;
  c.attn_ilp = 4;
  c.attn_split_long = 128;
  c.attn_long_from = 0;
  c.attn_cluster = 4;
  c.down_mma = cuda::MmaChoice{128, 2, 1, 8};
  c.pdl = false;
  const KnobValues p = plan_fast_of(c);
  const KnobValues back = read(p.to_json());
  const cuda::FastConfig d = fast_config_of(back);
  EXPECT_EQ(d.o.block, 128);
  EXPECT_EQ(d.o.rows, 4);
  EXPECT_EQ(d.o.splitk, 8);
  EXPECT_EQ(d.attn_split, 128);
  EXPECT_EQ(d.attn_ilp, 4);
  EXPECT_EQ(d.attn_split_long, 128);
  EXPECT_EQ(d.attn_long_from, 0);
  EXPECT_EQ(d.attn_cluster, 4);
  EXPECT_EQ(d.down_mma.mt, 2);
  EXPECT_EQ(d.down_mma.splitk, 8);
  EXPECT_FALSE(d.pdl);
  // Plans written before attn_ilp existed read as ILP 1; other values are refused. Plans without
  // the long-context attention run the engine's defaults for it.
  Json old = p.to_json();
  old.erase("attn_ilp");
  old.erase("gemv_mma");
  old.erase("attn_split_long");
  old.erase("attn_long_from");
  old.erase("attn_cluster");
  EXPECT_EQ(read(old).value("attn_ilp"), 1);
  EXPECT_EQ(fast_config_of(read(old)).attn_long_from, cuda::FastConfig{}.attn_long_from);
  EXPECT_EQ(fast_config_of(read(old)).attn_split_long, cuda::FastConfig{}.attn_split_long);
  EXPECT_EQ(fast_config_of(read(old)).attn_cluster, cuda::FastConfig{}.attn_cluster);
  {
    Json bad = p.to_json();
    bad["attn_cluster"] = 3;
    expect_bad_input([&] { read(bad); }, {"attn_cluster"});
  }
  {
    Json bad = p.to_json();
    bad["attn_long_from"] = -1;
    expect_bad_input([&] { read(bad); }, {"attn_long_from"});
  }
  EXPECT_EQ(fast_config_of(read(old)).down_mma.mt, cuda::FastConfig{}.down_mma.mt);
  old["attn_ilp"] = 3;
  expect_bad_input([&] { read(old); }, {"attn_ilp"});
  EXPECT_EQ(d.qkv.rows, cuda::FastConfig{}.qkv.rows);
  // No plan: the defaults.
  EXPECT_EQ(fast_config_of(std::nullopt).down.splitk, cuda::FastConfig{}.down.splitk);
  // The persistent layers: written only when on (plans before it read as off), 0 or 1.
  EXPECT_FALSE(p.to_json().contains("persistent"));
  EXPECT_EQ(d.persistent, 0);
  c.persistent = 1;
  const Json on = plan_fast_of(c).to_json();
  EXPECT_EQ(on.at("persistent"), 1);
  EXPECT_EQ(fast_config_of(read(on)).persistent, 1);
  Json bad = on;
  bad["persistent"] = 2;
  expect_bad_input([&] { read(bad); }, {"persistent"});
  // The attention with the output projection: the same (0, 1, 2 or 4 clusters per KV head).
  EXPECT_FALSE(p.to_json().contains("attn_o"));
  EXPECT_EQ(d.attn_o, 0);
  c.attn_o = 2;
  const Json ao = plan_fast_of(c).to_json();
  EXPECT_EQ(ao.at("attn_o"), 2);
  EXPECT_EQ(fast_config_of(read(ao)).attn_o, 2);
  for (int n : {3, 5, -1}) {
    Json b = ao;
    b["attn_o"] = n;
    expect_bad_input([&] { read(b); }, {"attn_o"});
  }
  // The attention's partials merged by the output projection: the same (0 or 1).
  EXPECT_FALSE(p.to_json().contains("attn_merge_o"));
  EXPECT_EQ(d.attn_merge_o, 0);
  c.attn_merge_o = 1;
  const Json mo = plan_fast_of(c).to_json();
  EXPECT_EQ(mo.at("attn_merge_o"), 1);
  EXPECT_EQ(fast_config_of(read(mo)).attn_merge_o, 1);
  for (int n : {2, -1}) {
    Json b = mo;
    b["attn_merge_o"] = n;
    expect_bad_input([&] { read(b); }, {"attn_merge_o"});
  }
  // The shared-memory carveout: written only when set (-1, the driver's choice, reads back as
  // absent), a percentage.
  EXPECT_FALSE(p.to_json().contains("smem_carveout"));
  EXPECT_EQ(d.smem_carveout, -1);
  c.smem_carveout = 40;
  const Json sc = plan_fast_of(c).to_json();
  EXPECT_EQ(sc.at("smem_carveout"), 40);
  EXPECT_EQ(fast_config_of(read(sc)).smem_carveout, 40);
  c.smem_carveout = 0;
  EXPECT_EQ(fast_config_of(read(plan_fast_of(c).to_json())).smem_carveout, 0);
  for (int n : {-1, 101}) {
    Json b = sc;
    b["smem_carveout"] = n;
    expect_bad_input([&] { read(b); }, {"smem_carveout"});
  }
  // Per-region carveouts: written only when some region has one, read back, validated by region
  // and percentage.
  EXPECT_FALSE(sc.contains("region_carveout"));
  c.region_carveout = {{"down", 30}, {"attention", 0}};
  const Json rc = plan_fast_of(c).to_json();
  EXPECT_EQ(rc.at("region_carveout").at("down"), 30);
  const cuda::FastConfig back_rc = fast_config_of(read(rc));
  EXPECT_EQ(back_rc.region_carveout, c.region_carveout);
  for (const char* bad : {R"({"mlp": 30})", R"({"down": 101})", R"({"down": -1})", R"([30])", R"({"down": "30"})"}) {
    Json b = rc;
    b["region_carveout"] = Json::parse(bad);
    expect_bad_input([&] { read(b); }, {"region_carveout"});
  }
}

TEST(CudaSearch, CudaFastFromRoutes) {
  std::vector<PlanRoute> routes(4);
  routes[0].region = "mlp_in";
  routes[0].phase = "decode";
  routes[0].family = "cuda:gemv.fused";
  routes[0].params = {{"BLOCK", 128}, {"ROWS", 2}, {"UNROLL", 1}, {"SPLITK", 1}};
  routes[1].region = "attention";
  routes[1].phase = "decode";
  routes[1].family = "cuda:attn_decode.split";
  routes[1].params = {{"BLOCK", 64}, {"TILE", 16}, {"SPLIT", 256}};
  routes[2].region = "head";
  routes[2].phase = "decode";
  routes[2].family = "cuda:fallback";  // keeps the default
  routes[3] = routes[0];
  routes[3].phase = "prefill";  // prefill runs cuBLAS: ignored
  routes[3].params["ROWS"] = 4;
  const KnobValues f = cuda_fast_from_routes(routes);
  EXPECT_EQ(f.value("gemv.gate_up.block"), 128);
  EXPECT_EQ(f.value("gemv.gate_up.rows"), 2);
  EXPECT_EQ(f.value("attn_block"), 64);
  EXPECT_EQ(f.value("attn_tile"), 16);
  EXPECT_EQ(f.value("attn_split"), 256);
  const cuda::FastConfig def;
  EXPECT_EQ(f.value("gemv.lm_head.block"), def.lm_head.block);
  EXPECT_EQ(f.value("gemv.qkv.rows"), def.qkv.rows);
  EXPECT_TRUE(fast_config_of(f).region_carveout.empty());
  EXPECT_FALSE(f.to_json().contains("region_carveout"));
  // Routes' own carveouts, by the region's FastConfig name, a fallback route's included; the
  // prefill route's is not the decode kernels'.
  {
    std::vector<PlanRoute> carved = routes;
    carved[0].smem_carveout = 60;
    carved[1].smem_carveout = 30;
    carved[2].smem_carveout = 25;
    carved[3].smem_carveout = 99;
    const std::map<std::string, int> want = {{"gate_up", 60}, {"attention", 30}, {"lm_head", 25}};
    EXPECT_EQ(fast_config_of(cuda_fast_from_routes(carved)).region_carveout, want);
    EXPECT_EQ(carveout_region_of("attn_in"), "qkv");
    EXPECT_EQ(carveout_region_of("mlp_out"), "down");
    EXPECT_EQ(carveout_region_of("embed"), "");
  }
  // The fused decode attention (what the search now explores): BLOCK and SPLIT, TILE untouched.
  routes[1].family = "cuda:attn_decode.fused";
  routes[1].params = {{"BLOCK", 512}, {"SPLIT", 64}};
  const KnobValues g = cuda_fast_from_routes(routes);
  EXPECT_EQ(g.value("attn_block"), 512);
  EXPECT_EQ(g.value("attn_split"), 64);
  EXPECT_EQ(g.value("attn_tile"), def.attn_tile);
  EXPECT_EQ(g.value("attn_ilp"), 1);  // a record without ILP
  routes[1].params["ILP"] = 4;
  EXPECT_EQ(cuda_fast_from_routes(routes).value("attn_ilp"), 4);
  // The batch-1 short-context attention (attn_decode.cluster): BLOCK and CLUSTER.
  routes[1].family = "cuda:attn_decode.cluster";
  routes[1].params = {{"BLOCK", 128}, {"CLUSTER", 4}};
  const KnobValues k = cuda_fast_from_routes(routes);
  EXPECT_EQ(k.value("attn_block"), 128);
  ASSERT_TRUE(k.get("attn_cluster"));
  EXPECT_EQ(*k.get("attn_cluster"), 4);
  EXPECT_EQ(k.value("attn_split"), def.attn_split);
  // A region searched at a batch where gemv.mma runs (throughput objective): its tensor-core point.
  routes[0].family = "cuda:gemv.mma";
  routes[0].params = {{"BLOCK", 512}, {"MT", 2}, {"UNROLL", 1}, {"SPLITK", 1}};
  const KnobValues h = cuda_fast_from_routes(routes);
  EXPECT_EQ(h.value("gemv_mma.gate_up.block"), 512);
  EXPECT_EQ(h.value("gemv_mma.gate_up.rows"), 2);
  EXPECT_EQ(h.value("gemv.gate_up.block"), def.gate_up.block);  // the batch-1 point keeps its default
  EXPECT_EQ(fast_config_of(h).gate_up_mma.mt, 2);
  // An FP8 projection's region: gemv.fp8's point, the 16-bit points untouched.
  routes[0].family = "cuda:gemv.fp8";
  routes[0].params = {{"BLOCK", 128}, {"ROWS", 4}, {"UNROLL", 4}, {"SPLITK", 1}};
  const cuda::FastConfig f8 = fast_config_of(cuda_fast_from_routes(routes));
  EXPECT_EQ(f8.gate_up_fp8.block, 128);
  EXPECT_EQ(f8.gate_up_fp8.rows, 4);
  EXPECT_EQ(f8.gate_up_fp8.unroll, 4);
  EXPECT_EQ(f8.gate_up.block, def.gate_up.block);
  EXPECT_EQ(f8.qkv_fp8.block, def.qkv_fp8.block);
  // An FP8 lm_head's region (compile --lm-head fp8): lm_head_fp8's point.
  routes.push_back(test::plan_route("head", "decode", "cuda:gemv.fp8", {{"BLOCK", 128}, {"ROWS", 2}, {"UNROLL", 2}, {"SPLITK", 1}}));
  const cuda::FastConfig h8 = fast_config_of(cuda_fast_from_routes(routes));
  EXPECT_EQ(h8.lm_head_fp8.block, 128);
  EXPECT_EQ(h8.lm_head_fp8.rows, 2);
  EXPECT_EQ(h8.lm_head.block, def.lm_head.block);
}

// An FP8 model's decode regions: the four projections search gemv.fp8 at batch 1 (SCALE bound to
// the weights' layout; points whose K slice does not fit the shared memory left out) and
// gemv.mma_fp8 at batch 8, as the executor runs them; the 16-bit lm_head gemv.fused, the attention
// as for a 16-bit model. No GPU: the space is built from the
// graph and the target's architecture.
// A prompt step's attention region is searched over attn_prefill.pipe's BLOCK and BK and QS (pipe,
// or attn_prefill.qs at MT 1 or 2; every point fits at the tiny model's head dim), its four projections over the ranks of
// cuBLASLt's heuristic list (cuda:gemm.lt) and our own GEMMs' points (gemm.wgmma on sm_90,
// gemm.mma), its other regions not, with a note. The plan's prompt knobs come from those routes only.
TEST(CudaSearch, PromptStepSearchesPipePointsAndGemmRanks) {
  const Backend* cuda = find_backend("cuda");
  ASSERT_NE(cuda, nullptr);
  auto m = synth_model_in_memory(SynthOptions{"tiny-qwen3", {}, 5, DType::BF16, {}, true});
  const Graph g = build_decoder_graph(m->config, m->weights);
  const Partition part = partition_graph(g);
  const TargetFacts t = named_target("h100");
  int attention = 0, gemms = 0, others = 0;
  for (size_t c = 0; c < part.classes.size(); ++c) {
    const RegionSummary sum = summarize_region(g, part, c, Phase::Prefill, prefill_point(512), t);
    std::vector<std::string> notes;
    const std::vector<FamilySpace> fs = cuda->families(g, part, sum, t, &notes);
    if (sum.kind == RegionKind::Attention) {
      ++attention;
      ASSERT_EQ(fs.size(), 1u);
      EXPECT_EQ(fs[0].id, "cuda:attn_prefill.pipe");
      std::set<std::string> names;
      size_t points = 1;
      for (const SpaceParam& p : fs[0].params) {
        names.insert(p.name);
        points *= p.values.size();
      }
      EXPECT_EQ(names, (std::set<std::string>{"BLOCK", "BK", "QS", "PAIR"}));
      EXPECT_EQ(points, 54u);
      for (int block : {64, 128, 256})
        for (int bk : {16, 32, 64})
          for (int qs : {0, 1, 2})
            for (int pair : {0, 1})
              EXPECT_EQ(fs[0].constraint({{"BLOCK", block}, {"BK", bk}, {"QS", qs}, {"PAIR", pair}}), "")
                  << block << ":" << bk << ":" << qs << ":" << pair;
    } else if (sum.kind == RegionKind::AttnIn || sum.kind == RegionKind::AttnOut || sum.kind == RegionKind::MlpIn ||
               sum.kind == RegionKind::MlpOut) {
      ++gemms;
      EXPECT_EQ(fs[0].id, "cuda:gemm.lt");
      ASSERT_EQ(fs[0].params.size(), 1u);
      EXPECT_EQ(fs[0].params[0].name, "ALGO");
      EXPECT_EQ(fs[0].params[0].values, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
      // Our own GEMMs (the tiny model's K are multiples of 64), every point that fits the GPU (BLOCK
      // and EPI are the executor's, not searched): gemm.wgmma's BN 256 only at 3 and 4 stages,
      // CLUSTER 2 only at LOAD 1; mlp_in's store is the SwiGLU one, searched like the others.
      ASSERT_EQ(fs.size(), 3u);
      EXPECT_EQ(fs[1].id, "cuda:gemm.wgmma");
      std::vector<std::string> names;
      for (const SpaceParam& p : fs[1].params) names.push_back(p.name);
      EXPECT_EQ(names, (std::vector<std::string>{"BN", "STAGES", "PIPE", "LOAD", "CLUSTER", "SCHED"}));
      // BN x STAGES, PIPE, (LOAD 0) + (LOAD 1 x CLUSTER), and persistent (SCHED 1) at BN 64/128, LOAD 1, CLUSTER 1
      EXPECT_EQ(fs[1].valid_points, size_t((3 + 3 + 2) * 2 * (1 + 2) + (3 + 3) * 2));
      for (const std::string& n : notes) EXPECT_EQ(n.find("not searched"), std::string::npos) << n;
      for (const ParamPoint& pt : family_points(fs[1])) {
        if (pt.at("CLUSTER") == 2) EXPECT_EQ(pt.at("LOAD"), 1);
        if (pt.at("BN") == 256) EXPECT_LT(pt.at("STAGES"), 5);
        if (pt.at("SCHED") == 1) EXPECT_TRUE(pt.at("LOAD") == 1 && pt.at("CLUSTER") == 1 && pt.at("BN") < 256);
      }
      EXPECT_EQ(fs[2].id, "cuda:gemm.mma");
      EXPECT_EQ(fs[2].valid_points, 4u);
      // An A100 has no wgmma: the library's and gemm.mma there, with a note.
      const RegionSummary a = summarize_region(g, part, c, Phase::Prefill, prefill_point(512), named_target("a100"));
      std::vector<std::string> a_notes;
      const std::vector<FamilySpace> on_a100 = cuda->families(g, part, a, named_target("a100"), &a_notes);
      ASSERT_EQ(on_a100.size(), 2u);
      EXPECT_EQ(on_a100[1].id, "cuda:gemm.mma");
      ASSERT_FALSE(a_notes.empty());
      EXPECT_NE(a_notes[0].find("gemm.wgmma does not run on sm_80"), std::string::npos) << a_notes[0];
    } else {
      ++others;
      EXPECT_TRUE(fs.empty()) << region_kind_name(sum.kind);
      ASSERT_EQ(notes.size(), 1u);
      EXPECT_NE(notes[0].find("attention and projection GEMMs only"), std::string::npos) << notes[0];
    }
  }
  EXPECT_EQ(attention, 1);
  EXPECT_EQ(gemms, 4);
  EXPECT_GE(others, 1);  // the lm_head (and the embedding)
  const std::vector<PlanRoute> routes = {
      test::plan_route("attn_out", "prefill", "cuda:gemm.lt", {{"ALGO", 3}}),
      test::plan_route("mlp_out", "prefill", "cuda:fallback", {}),
      test::plan_route("mlp_in", "prefill", "cuda:gemm.wgmma", {{"BN", 64}, {"STAGES", 3}, {"PIPE", 1}, {"LOAD", 0}}),
      test::plan_route("attention", "prefill", "cuda:attn_prefill.pipe", {{"BLOCK", 256}, {"BK", 32}, {"QS", 2}, {"PAIR", 1}}),
      test::plan_route("attention", "prefill", "cuda:attn_decode.fused", {{"BLOCK", 64}, {"SPLIT", 16}, {"ILP", 1}}, 60),
      test::plan_route("attention", "decode", "cuda:attn_decode.fused", {{"BLOCK", 128}, {"SPLIT", 32}, {"ILP", 4}})};
  const cuda::FastConfig f = fast_config_of(cuda_fast_from_routes(routes));
  EXPECT_EQ(f.prefill_flash_block, 256);
  EXPECT_EQ(f.prefill_flash_bk, 32);
  EXPECT_EQ(f.prefill_flash_qs, 2);
  EXPECT_EQ(f.prefill_flash_pair, 1);
  EXPECT_EQ(f.prefill_algo_o, 3);
  EXPECT_EQ(f.prefill_algo_down, -1);  // the fallback: cublasGemmEx
  EXPECT_EQ(f.prefill_algo_qkv, -1);
  EXPECT_EQ(f.prefill_gemm_gate_up.route, cuda::kGemmWgmma);
  EXPECT_EQ(f.prefill_gemm_gate_up.bn, 64);
  EXPECT_EQ(f.prefill_gemm_o.route, cuda::kGemmLibrary);
  EXPECT_EQ(f.attn_block, 128);  // the decode route's, not the prefill one's
  EXPECT_EQ(f.attn_split, 32);
  EXPECT_FALSE(f.region_carveout.count("attention"));
}

// A mixture of experts runs the fast path by default: its sparse layers' MLP regions are not
// searched per region (the note says where their point is tuned), its other projections and the
// attention are, as for a dense model. The expert GEMVs' point is a whole-step setting: set in the
// plan (and its plan.json) for a mixture of experts, not applicable to a dense model.
TEST(CudaSearch, SparseMlpPointsAreWholeStepSettings) {
  const Backend* cuda = find_backend("cuda");
  ASSERT_NE(cuda, nullptr);
  auto m = synth_model_in_memory(SynthOptions{"tiny-qwen3-moe", {}, 5, DType::BF16, {}, true});
  const Graph g = build_decoder_graph(m->config, m->weights);
  EXPECT_EQ(cuda->generic_route_reason(g), "");
  const Partition part = partition_graph(g);
  const TargetFacts t = named_target("h100");
  int sparse = 0, searched = 0;
  for (size_t c = 0; c < part.classes.size(); ++c) {
    const RegionSummary sum = summarize_region(g, part, c, Phase::Decode, decode_point(1, 64), t);
    bool moe = false;
    for (const StepSummary& st : sum.steps) moe = moe || st.op == "moe_mlp";
    std::vector<std::string> notes;
    const std::vector<FamilySpace> fs = cuda->families(g, part, sum, t, &notes);
    if (moe) {
      ++sparse;
      EXPECT_TRUE(fs.empty());
      ASSERT_EQ(notes.size(), 1u);
      EXPECT_NE(notes[0].find("moe_gate_up.gemv"), std::string::npos) << notes[0];
      EXPECT_NE(notes[0].find("whole decode steps"), std::string::npos) << notes[0];
    } else if (sum.kind == RegionKind::AttnIn || sum.kind == RegionKind::Attention || sum.kind == RegionKind::Head) {
      ++searched;
      EXPECT_EQ(fs.size(), 1u) << region_kind_name(sum.kind);
    }
  }
  EXPECT_GE(sparse, 1);
  EXPECT_GE(searched, 3);

  Plan plan;
  plan.cuda_fast = plan_fast_of(cuda::FastConfig{});
  plan.environment.arch = "sm_90";
  std::set<std::string> names;
  for (const StepSetting& st : cuda->step_settings()) names.insert(st.name);
  EXPECT_TRUE(names.count("moe_block") && names.count("moe_rows"));
  std::string variant, why;
  const std::optional<Plan> wide = cuda->with_step_setting(g, plan, "moe_block", 256, &variant, &why);
  ASSERT_TRUE(wide) << why;
  EXPECT_EQ(wide->cuda_fast->value("moe_block"), 256);
  EXPECT_EQ(fast_config_of(wide->cuda_fast).moe_block, 256);
  EXPECT_NE(variant.find("moe_gate_up"), std::string::npos) << variant;
  EXPECT_EQ(wide->cuda_fast->to_json().value("moe_block", 0), 256);  // written to plan.json
  const std::optional<Plan> rows = cuda->with_step_setting(g, *wide, "moe_rows", 4, &variant, &why);
  ASSERT_TRUE(rows) << why;
  EXPECT_EQ(fast_config_of(rows->cuda_fast).moe_block, 256);
  EXPECT_EQ(fast_config_of(rows->cuda_fast).moe_rows, 4);
  auto dense = synth_model_in_memory(SynthOptions{"tiny-qwen3", {}, 5, DType::BF16, {}, true});
  const Graph gd = build_decoder_graph(dense->config, dense->weights);
  EXPECT_FALSE(cuda->with_step_setting(gd, plan, "moe_block", 256, nullptr, &why));
  EXPECT_NE(why.find("no sparse layers"), std::string::npos) << why;
}

TEST(CudaSearch, Fp8ProjectionsSearchGemvFp8) {
  const Backend* cuda = find_backend("cuda");
  ASSERT_NE(cuda, nullptr);
  SynthOptions so{"tiny-llama", {}, 5, DType::BF16, {}, true};
  so.weights = "fp8-channel";
  auto m = synth_model_in_memory(so);
  const Graph g = build_decoder_graph(m->config, m->weights);
  ASSERT_EQ(cuda::fast_fp8_scales(g), cuda::Fp8Scales::Row);
  const Partition part = partition_graph(g);
  const TargetFacts t = named_target("h100");
  std::map<RegionKind, std::string> family;
  for (size_t c = 0; c < part.classes.size(); ++c)
    for (int batch : {1, 8}) {
      const RegionSummary sum = summarize_region(g, part, c, Phase::Decode, decode_point(batch, 64), t);
      std::vector<std::string> notes;
      const std::vector<FamilySpace> fs = cuda->families(g, part, sum, t, &notes);
      if (fs.empty()) continue;
      ASSERT_EQ(fs.size(), 1u) << region_kind_name(sum.kind);
      if (sum.kind == RegionKind::Head)  // 16-bit: gemv.fused at batch 1, the tensor-core GEMV from batch 2 on
        EXPECT_EQ(fs[0].id, batch == 1 ? "cuda:gemv.fused" : "cuda:gemv.mma");
      if (batch == 1) family[sum.kind] = fs[0].id;
      else if (sum.kind != RegionKind::Head && sum.kind != RegionKind::Attention) {
        // What the executor runs at batch 8 (fp8_batched_mma): gemv.mma_fp8 at the slot's gemv.mma point.
        EXPECT_EQ(fs[0].id, "cuda:gemv.mma_fp8") << "batch " << batch;
        std::set<std::string> names;
        for (const SpaceParam& p : fs[0].params) names.insert(p.name);
        EXPECT_EQ(names, (std::set<std::string>{"BLOCK", "MT", "UNROLL", "SPLITK"}));
        const ParamPoint split = {{"BLOCK", 128}, {"MT", 1}, {"UNROLL", 1}, {"SPLITK", 2}};
        EXPECT_EQ(fs[0].constraint(split).empty(), sum.kind == RegionKind::AttnOut || sum.kind == RegionKind::MlpOut)
            << region_kind_name(sum.kind);
      }
      if (fs[0].id != "cuda:gemv.fp8") continue;
      std::set<std::string> names;
      for (const SpaceParam& p : fs[0].params) names.insert(p.name);
      EXPECT_EQ(names, (std::set<std::string>{"BLOCK", "ROWS", "UNROLL", "SPLITK"}));
      ParamPoint split;
      split = {{"BLOCK", 256}, {"ROWS", 1}, {"UNROLL", 2}, {"SPLITK", 2}};
      EXPECT_EQ(fs[0].constraint(split).empty(), sum.kind == RegionKind::AttnOut || sum.kind == RegionKind::MlpOut)
          << region_kind_name(sum.kind);
    }
  EXPECT_EQ(family[RegionKind::AttnIn], "cuda:gemv.fp8");
  EXPECT_EQ(family[RegionKind::AttnOut], "cuda:gemv.fp8");
  EXPECT_EQ(family[RegionKind::MlpIn], "cuda:gemv.fp8");
  EXPECT_EQ(family[RegionKind::MlpOut], "cuda:gemv.fp8");
  EXPECT_EQ(family[RegionKind::Head], "cuda:gemv.fused");
  EXPECT_TRUE(family.count(RegionKind::Attention));
  EXPECT_EQ(cuda->generic_route_reason(g), "");
  // A batch-8 route of gemv.mma_fp8 sets the slot's gemv.mma_fp8 point, which the executor runs
  // FP8 batches at (fp8_fast_config puts it in the slot's gemv.mma place), and leaves gemv.mma's.
  const cuda::FastConfig picked = fast_config_of(cuda_fast_from_routes(
      {test::plan_route("mlp_out", "decode", "cuda:gemv.mma_fp8", {{"BLOCK", 256}, {"MT", 4}, {"UNROLL", 1}, {"SPLITK", 4}})}));
  EXPECT_EQ(picked.down_mma_fp8.block, 256);
  EXPECT_EQ(picked.down_mma_fp8.mt, 4);
  EXPECT_EQ(picked.down_mma_fp8.splitk, 4);
  EXPECT_EQ(picked.down_mma.mt, cuda::FastConfig{}.down_mma.mt);
  const cuda::FastConfig run = cuda::fp8_fast_config(picked);
  EXPECT_EQ(run.down_mma.block, 256);
  EXPECT_EQ(run.down_mma.mt, 4);
  EXPECT_EQ(run.down_mma.splitk, 4);
  EXPECT_EQ(run.lm_head_mma.mt, cuda::FastConfig{}.lm_head_mma.mt);  // the 16-bit head keeps its point
  // The step tuning leaves out the settings whose kernels read 16-bit projections.
  Plan plan;
  plan.cuda_fast = plan_fast_of(cuda::FastConfig{});
  plan.environment.arch = "sm_90";
  for (const char* setting : {"persistent", "attn_o"}) {
    std::string why;
    EXPECT_FALSE(cuda->with_step_setting(g, plan, setting, 1, nullptr, &why)) << setting;
    EXPECT_NE(why.find("FP8"), std::string::npos) << why;
  }
  EXPECT_TRUE(cuda->with_step_setting(g, plan, "smem_carveout", 40, nullptr, nullptr));
  // With the lm_head quantized too (compile --lm-head fp8), its region searches gemv.fp8 at batch 1
  // and gemv.mma_fp8 at batch 8.
  auto mh = synth_model_in_memory(SynthOptions{"tiny-llama", {}, 5, DType::BF16, {}, true});
  quantize_model_fp8(*mh, false, true);
  const Graph gh = build_decoder_graph(mh->config, mh->weights);
  ASSERT_TRUE(cuda::fast_fp8_head(gh));
  const Partition ph = partition_graph(gh);
  int heads = 0;
  for (size_t c = 0; c < ph.classes.size(); ++c)
    for (int batch : {1, 8}) {
      const RegionSummary sum = summarize_region(gh, ph, c, Phase::Decode, decode_point(batch, 64), t);
      if (sum.kind != RegionKind::Head) continue;
      std::vector<std::string> notes;
      const std::vector<FamilySpace> fs = cuda->families(gh, ph, sum, t, &notes);
      ASSERT_EQ(fs.size(), 1u);
      EXPECT_EQ(fs[0].id, batch == 1 ? "cuda:gemv.fp8" : "cuda:gemv.mma_fp8") << "batch " << batch;
      const ParamPoint split = batch == 1 ? ParamPoint{{"BLOCK", 256}, {"ROWS", 1}, {"UNROLL", 2}, {"SPLITK", 2}}
                                          : ParamPoint{{"BLOCK", 128}, {"MT", 1}, {"UNROLL", 1}, {"SPLITK", 2}};
      EXPECT_NE(fs[0].constraint(split), "");  // argmax: no split-K
      ++heads;
    }
  EXPECT_EQ(heads, 2);
}

// A synthetic model of `preset` written under dir/model and loaded.
std::unique_ptr<Model> synth_tiny(const fs::path& dir, const std::string& preset) {
  SynthOptions so;
  so.preset = preset;
  so.out = dir / "model";
  so.quiet = true;
  synth_model(so);
  return load_model(dir / "model");
}

// A model the fast path cannot run (here sliding-window attention) gets a plan without the fast-path
// block, so it runs the library route, and the backend says why (report.json generic_route); a
// dense model keeps its block. No GPU needed: the contract calls only read the graph and plan.
TEST(CudaSearch, ModelsOutsideTheFastPathGetLibraryRoutePlans) {
  const Backend* cuda = find_backend("cuda");
  ASSERT_NE(cuda, nullptr);
  TempDir tmp;
  for (const char* preset : {"tiny-mixtral", "tiny-qwen3"}) {
    synth_model(SynthOptions{preset, tmp / preset, 3, DType::BF16, {}, true});
    auto m = load_model(tmp / preset);
    const Graph g = build_decoder_graph(m->config, m->weights);
    Plan p;
    p.cuda_fast = plan_fast_of(cuda::FastConfig{});
    cuda->bind_routes(g, p);
    if (std::string(preset) == "tiny-mixtral") {
      EXPECT_EQ(cuda->generic_route_reason(g), "sliding-window attention");
      EXPECT_FALSE(p.cuda_fast.has_value());
    } else {
      EXPECT_EQ(cuda->generic_route_reason(g), "");
      EXPECT_TRUE(p.cuda_fast.has_value());
    }
  }
}

TEST(CudaSearch, PlanKernelBinariesAreWrittenAndChecked) {
  TempDir tmp;
  auto m = synth_tiny(tmp.path(), "tiny-qwen3");
  const Graph g = build_decoder_graph(m->config, m->weights);
  const std::vector<PlanKernelBinary> ks = cuda_plan_kernels(g, plan_fast_of(cuda::FastConfig{}), "sm_90");
  ASSERT_FALSE(ks.empty());
  CompileResult r;
  r.plan.model_hash = model_hash(*m);
  r.plan.environment.backend = "cuda";
  r.plan.environment.device = "NVIDIA H200";
  r.plan.environment.arch = "sm_90";
  r.plan.objective = "latency";
  r.plan.cuda_fast = plan_fast_of(cuda::FastConfig{});
  for (const auto& k : ks) {
    EXPECT_EQ(k.kernel.file.rfind("kernels/", 0), 0u);
    EXPECT_GT(k.bytes.size(), 1000u);
    r.plan.kernels.push_back(k.kernel);
  }
  r.kernels = ks;
  r.report = Json::object();
  write_plan_folder(tmp / "plan", r);
  const Plan p = Plan::load(tmp / "plan");
  ASSERT_EQ(p.kernels.size(), ks.size());
  ASSERT_TRUE(p.cuda_fast);
  // A plan just compiled is built from this engine's sources: never reported stale.
  EXPECT_TRUE(stale_plan_kernels(p, g).empty());
  EXPECT_EQ(stale_plan_warning(p, stale_plan_kernels(p, g)), "");
  // The binaries come back with their source keys, and the loader takes one only for a variant
  // whose source still has that key (no GPU needed to check the choice).
  for (size_t i = 0; i < ks.size(); ++i) {
    EXPECT_EQ(p.kernels[i].bytes, ks[i].bytes);
    EXPECT_FALSE(p.kernels[i].source_key.empty());
    cuda::use_prebuilt_kernel(p.kernels[i].name, p.kernels[i].source_key, p.kernels[i].bytes);
  }
  const DType wt = g.ops.front().weights.at(0)->dtype;
  const std::vector<cuda::Variant> vs = cuda::fast_path_variants(g.config, wt, cuda::FastConfig{}, "sm_90");
  const std::string* bin = cuda::prebuilt_kernel_for(vs.front());
  ASSERT_NE(bin, nullptr);
  EXPECT_GT(bin->size(), 1000u);
  cuda::use_prebuilt_kernel(vs.front().name(), "another source", "stale bytes");
  EXPECT_EQ(cuda::prebuilt_kernel_for(vs.front()), nullptr);  // stale: compiled as usual
  write_file_atomic(tmp / "plan" / ks.front().kernel.file, "not a cubin");
  expect_bad_input([&] { Plan::load(tmp / "plan"); }, {"does not match its sha256"});
}

TEST(CudaSearch, RebuildKernelsRegistersNoShippedBinary) {
  TempDir tmp;
  auto m = synth_tiny(tmp.path(), "tiny-llama");
  const Graph g = build_decoder_graph(m->config, m->weights);
  cuda::FastConfig cfg;
  cfg.qkv = {128, 2, 1, 1};
  CompileResult r;
  r.plan.model_hash = model_hash(*m);
  r.plan.environment.backend = "cuda";
  r.plan.environment.arch = "sm_90";
  r.plan.objective = "latency";
  r.plan.cuda_fast = plan_fast_of(cfg);
  r.kernels = cuda_plan_kernels(g, *r.plan.cuda_fast, "sm_90");
  ASSERT_GT(r.kernels.size(), 2u);
  for (const auto& k : r.kernels) r.plan.kernels.push_back(k.kernel);
  r.report = Json::object();
  write_plan_folder(tmp / "plan", r);
  write_file_atomic(tmp / "plan" / r.kernels.front().kernel.file, "tampered");
  fs::remove(tmp / "plan" / r.kernels.back().kernel.file);
  expect_bad_input([&] { Plan::load(tmp / "plan"); }, {"does not match its sha256"});

  // Rebuilt: the binaries are not read, the choices and the kernel list are the plan's.
  const Plan p = Plan::load(tmp / "plan", PlanKernels::Rebuild);
  ASSERT_TRUE(p.cuda_fast);
  EXPECT_EQ(p.cuda_fast->to_json(), r.plan.cuda_fast->to_json());
  ASSERT_EQ(p.kernels.size(), r.kernels.size());
  for (const PlanKernel& k : p.kernels) EXPECT_TRUE(k.bytes.empty());
  // Building its executor registers no binary (without a GPU it stops after that step), so
  // every kernel is compiled from this build's templates.
  auto build = [&](const Plan& plan) {
    try {
      make_plan_executor(plan, g, ExecutorLimits{1, 16, 16, 0});
    } catch (const std::exception&) {
    }
  };
  const std::vector<cuda::Variant> vs = cuda::fast_path_variants(g.config, g.ops.front().weights.at(0)->dtype, cfg, "sm_90");
  cuda::clear_prebuilt_kernels();
  build(p);
  for (const cuda::Variant& v : vs) EXPECT_EQ(cuda::prebuilt_kernel_for(v), nullptr) << v.name();
  // The same plan whole, loaded as usual: its binaries are registered (what the check above sees).
  write_plan_folder(tmp / "plan", r);
  build(Plan::load(tmp / "plan"));
  size_t registered = 0;
  for (const cuda::Variant& v : vs) registered += cuda::prebuilt_kernel_for(v) != nullptr;
  EXPECT_GT(registered, 0u);
  cuda::clear_prebuilt_kernels();
}

TEST(CudaSearch, PlansFromOtherKernelSourcesAreReported) {
  TempDir tmp;
  auto m = synth_tiny(tmp.path(), "tiny-llama");
  const Graph g = build_decoder_graph(m->config, m->weights);
  Plan p;
  p.environment.backend = "cuda";
  p.environment.arch = "sm_90";
  cuda::FastConfig cfg;
  cfg.qkv = {128, 2, 1, 1};  // not the defaults: the check follows the plan's own points
  p.cuda_fast = plan_fast_of(cfg);
  const DType wt = g.ops.front().weights.at(0)->dtype;
  std::set<std::string> names;
  for (const cuda::Variant& v : cuda::fast_path_variants(g.config, wt, cfg, "sm_90"))
    if (names.insert(v.name()).second)
      p.kernels.push_back({v.name(), "kernels/" + v.name() + ".cubin", "", cuda::jit_key({v.name(), v.source(), v.arch, {}}), ""});
  ASSERT_GT(p.kernels.size(), 5u);
  EXPECT_TRUE(stale_plan_kernels(p, g).empty());

  // One kernel's source changed since the plan was compiled.
  const std::string current_key = p.kernels[2].source_key;
  p.kernels[2].source_key = "key of an older engine's source";
  EXPECT_EQ(stale_plan_kernels(p, g), std::vector<std::string>{p.kernels[2].name});
  const std::string w = stale_plan_warning(p, stale_plan_kernels(p, g));
  EXPECT_NE(w.find("1 of its " + std::to_string(p.kernels.size()) + " kernels"), std::string::npos) << w;
  EXPECT_NE(w.find(p.kernels[2].name), std::string::npos) << w;
  EXPECT_NE(w.find("recompile"), std::string::npos) << w;
  // A kernel this engine no longer launches for the plan's points is stale too ...
  p.kernels.push_back({"gemv__fused__w_bf16__block64__sm90", "kernels/x.cubin", "", "some key", ""});
  EXPECT_EQ(stale_plan_kernels(p, g).size(), 2u);
  // ... and so is every kernel when the plan's points are not the ones its kernels were built for.
  p.kernels.pop_back();
  p.kernels[2].source_key = current_key;
  ASSERT_TRUE(stale_plan_kernels(p, g).empty());
  cuda::FastConfig other = cfg;
  other.qkv = {256, 1, 4, 1};
  p.cuda_fast = plan_fast_of(other);
  EXPECT_FALSE(stale_plan_kernels(p, g).empty());
  // Kernels without a key (plans from before keys were recorded) are not judged; CPU plans have none.
  for (PlanKernel& k : p.kernels) k.source_key.clear();
  EXPECT_TRUE(stale_plan_kernels(p, g).empty());
  p.environment.backend = "cpu";
  EXPECT_TRUE(stale_plan_kernels(p, g).empty());
}

}  // namespace
}  // namespace ac
#endif
