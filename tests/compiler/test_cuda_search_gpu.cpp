// The CUDA search on the GPU (skipped without one): the attention region's evaluator checks the
// fused decode attention kernel and times what it adds between its neighbours in a decode step
// (QKV GEMV -> attention -> output GEMV), and a CUDA compile counts its regions.
#ifdef AGENTCOMPILE_HAVE_CUDA
#include <gtest/gtest.h>

#include "agentcompile/compiler/compile.h"
#include "agentcompile/tuning/target.h"
#include "agentcompile/model/model.h"
#include "agentcompile/model/synth_model.h"
#include "agentcompile/tuning/backend.h"
#include "backends/cuda/search_eval.h"
#include "ops/cuda_test_util.h"
#include "unit/model_test_util.h"

namespace ac {
namespace {

using test::TempDir;

class CudaAttentionEval : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaAttentionEval, KernelCheckedAgainstTheReferenceAndTimed) {
  AC_REQUIRE_GPU();
  TempDir tmp;
  synth_model(SynthOptions{GetParam(), tmp / "m", 5, DType::BF16, {}, true});
  auto m = load_model(tmp / "m");
  const Graph g = build_decoder_graph(m->config, m->weights);
  const std::vector<Candidate> cs = {Candidate{"cuda:fallback", {}},
                                     Candidate{"cuda:attn_decode.fused", {{"BLOCK", 256}, {"SPLIT", 16}}},
                                     Candidate{"cuda:attn_decode.fused", {{"BLOCK", 64}, {"SPLIT", 256}}},
                                     Candidate{"cuda:attn_decode.cluster", {{"BLOCK", 128}, {"CLUSTER", 8}}},
                                     Candidate{"cuda:attn_decode.cluster", {{"BLOCK", 64}, {"CLUSTER", 2}}}};
  for (const auto& [batch, context] : std::vector<std::pair<int, int>>{{1, 100}, {3, 70}}) {
    auto ev = make_cuda_attention_evaluator(g, batch, context);
    ev->begin(RegionWork{});
    ev->prepare(cs, Clock::now() + std::chrono::seconds(120));
    for (const Candidate& c : cs) {
      if (batch > 1 && c.family == "cuda:attn_decode.cluster") continue;  // batch 1 only (the executor's rule)
      SCOPED_TRACE(c.name() + " batch " + std::to_string(batch) + " context " + std::to_string(context));
      ASSERT_EQ(ev->compile(c), "");
      const CorrectnessResult r = ev->check(c);
      EXPECT_TRUE(r.ok) << r.reason;
      EXPECT_EQ(r.checks, 3);
      EXPECT_LE(r.rel_err, 1e-5);
      const TimingResult t = ev->time(c, 2, 5);
      ASSERT_TRUE(t.ok) << t.reason;
      EXPECT_EQ(t.samples_us.size(), 5u);
      // One kernel's share of a chain at a tiny shape: microseconds, not a decode step's
      // milliseconds, and more than nothing (the chain without it is subtracted).
      EXPECT_GT(t.median_us, 0.1);
      EXPECT_LT(t.median_us, 100.0);
      std::printf("[ attn ] %s %s batch %d context %d: %.2f us, rel err %.2e\n", GetParam().c_str(), c.name().c_str(),
                  batch, context, t.median_us, r.rel_err);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Presets, CudaAttentionEval, ::testing::Values("tiny-qwen3", "tiny-llama"));

TEST(CudaCompile, CeilingsMeasuredOrTheTableKept) {
  AC_REQUIRE_GPU();
  TargetFacts t;
  std::string why;
  ASSERT_TRUE(detect_gpu_target(&t, &why)) << why;
  const Json before = t.to_json();
  // No GPU holds 1 TiB: the allocation fails, the facts stay as detected, the reason is given.
  EXPECT_FALSE(measure_gpu_ceilings(&t, &why, size_t(1) << 40));
  EXPECT_FALSE(why.empty());
  EXPECT_EQ(t.to_json(), before);
  std::printf("[ compile ] 1 TiB not measured: %s\n", why.c_str());
  // And the device still works after it: 256 MiB measured.
  ASSERT_TRUE(measure_gpu_ceilings(&t, &why, size_t(256) << 20)) << why;
  EXPECT_TRUE(t.bandwidth_measured);
  EXPECT_GT(t.bandwidth_gbs, 0.0);
  EXPECT_GT(t.read_gbs, 0.0);
  EXPECT_NE(t.bandwidth_source.find("256 MiB"), std::string::npos) << t.bandwidth_source;
  EXPECT_NE(t.read_source.find("256 MiB"), std::string::npos) << t.read_source;
}

TEST(CudaCompile, RegionsCountedAndAttentionTimedAsAKernel) {
  AC_REQUIRE_GPU();
  TempDir tmp;
  synth_model(SynthOptions{"tiny-llama", tmp / "m", 5, DType::BF16, {}, true});
  auto m = load_model(tmp / "m");
  CompileOptions o;
  o.backend = "cuda";
  o.db_path = tmp / "t.db";
  o.budget_s = 40;
  o.e2e_tokens = 8;
  std::vector<CompileProgress> seen;
  o.progress = [&](const CompileProgress& p) { seen.push_back(p); };
  const CompileResult r = compile_model(*m, o);
  size_t last = 0, total = 0;
  for (const auto& p : seen) {
    EXPECT_GE(p.regions_done, last) << p.stage;
    last = p.regions_done;
    if (p.stage.rfind("search", 0) == 0) total = p.regions_total;
  }
  // Every searched region and span counted: the decode step's six (attn_in, attention, attn_out,
  // mlp_in, mlp_out, head) and the prompt's regions, searched on their own 2048-token shapes.
  const Json& totals = r.report["totals"];
  EXPECT_EQ(total, totals["regions"].get<size_t>() + totals["spans"].get<size_t>()) << totals.dump();
  EXPECT_EQ(last, total);
  size_t decode = 0, prefill = 0;
  for (const auto& reg : r.report["regions"]) (reg["phase"] == "decode" ? decode : prefill)++;
  EXPECT_EQ(decode, 6u);
  EXPECT_GT(prefill, 0u);
  bool attention = false;
  for (const auto& reg : r.report["regions"])
    if (reg["region"] == "attention") {
      attention = true;
      EXPECT_LT(reg["chosen_us"].get<double>(), 100.0) << "the kernel, not a whole decode step";
      EXPECT_EQ(reg["search"]["not_explored"].get<size_t>(), 0u);
      // Batch 1 at a short context runs attn_decode.cluster on sm_90 (its space is searched), or
      // the fallback if the search kept it.
      const std::string chosen = reg["chosen"].get<std::string>();
      std::printf("[ compile ] attention: %s\n", chosen.c_str());
      if (cuda::Device::get().info().arch().rfind("sm_90", 0) == 0) {
        EXPECT_TRUE(chosen.rfind("cuda:attn_decode.cluster", 0) == 0 || chosen.rfind("cuda:fallback", 0) == 0) << chosen;
      }
    }
  EXPECT_TRUE(attention);
  // The percentages are against the ceilings measured in this process (the copy and reads
  // alone), not the target table's: both in the target, each region against both.
  const Json& tg = r.report["target"];
  ASSERT_TRUE(tg.contains("read_gbs")) << tg.dump();
  EXPECT_NE(tg["bandwidth_source"].get<std::string>().find("measured now"), std::string::npos) << tg.dump();
  EXPECT_GT(tg["bandwidth_gbs"].get<double>(), 0.0);
  EXPECT_GT(tg["read_gbs"].get<double>(), 0.0);
  std::printf("[ compile ] ceilings measured now: copy %.0f GB/s, reads %.0f GB/s\n", tg["bandwidth_gbs"].get<double>(),
              tg["read_gbs"].get<double>());
  for (const auto& reg : r.report["regions"]) {
    const Json& a = reg["achieved"];
    EXPECT_DOUBLE_EQ(a["bandwidth_GBps"].get<double>(), tg["bandwidth_gbs"].get<double>());
    if (a.contains("TFLOPs")) {  // a prompt region, timed on 2048 tokens: its FLOP rate against the GEMM rate
      EXPECT_EQ(reg["phase"], "prefill") << a.dump();
      ASSERT_TRUE(a["pct_of_matmul"].is_number()) << a.dump();
      EXPECT_GT(a["TFLOPs"].get<double>(), 0.0) << a.dump();
      continue;
    }
    ASSERT_TRUE(a["pct_of_read"].is_number()) << a.dump();
    EXPECT_NEAR(a["pct_of_read"].get<double>(), 100.0 * a["GBps"].get<double>() / tg["read_gbs"].get<double>(),
                1e-9 * a["pct_of_read"].get<double>() + 1e-12);
  }
  EXPECT_NE(r.report_md.find("the second percentage is of what reads alone streamed: "), std::string::npos) << r.report_md;
  EXPECT_NE(r.report_md.find("| GB/s (% of bandwidth / % of reads) |"), std::string::npos) << r.report_md;
  // The plan against the all-fallback plan (the fast path's defaults), side by side: the decision
  // follows the figures, and keeping the fallbacks lists repairs.
  const Json& fg = r.report["fallback_guard"];
  const std::string status = fg["status"].get<std::string>();
  if (status != "every region on its fallback") {
    ASSERT_TRUE(fg.contains("plan_us")) << fg.dump();
    EXPECT_GT(fg["fallback_us"].get<double>(), 0);
    const bool slower = fg["plan_us"].get<double>() > fg["fallback_us"].get<double>() * (1 + fg["margin"].get<double>());
    EXPECT_EQ(status, slower ? "fallbacks kept" : "searched routes kept") << fg.dump();
    if (slower) {
      EXPECT_FALSE(r.report["repairs"].empty());
    }
  }
  std::printf("[ compile ] fallback guard %s\n", fg.dump().c_str());
  // The decode-step tuning: the start timed in whole decode steps, then the alternatives; a tuned
  // plan was confirmed faster and its cuda_fast block is its routes'.
  const Json& st = r.report["step_tuning"];
  std::printf("[ compile ] step tuning %s\n", st.dump().c_str());
  ASSERT_TRUE(r.plan.cuda_fast.has_value());
  ASSERT_TRUE(st.contains("trials")) << st.dump();
  ASSERT_FALSE(st["trials"].empty());
  EXPECT_EQ(st["trials"][0]["candidate"], "start");
  EXPECT_GT(st["trials"][0]["decode_ms"].get<double>(), 0.0);
  EXPECT_NE(r.report_md.find("## Decode-step tuning"), std::string::npos);
  Json routes_part = r.plan.cuda_fast->to_json();
  routes_part.erase("persistent");  // set after the routes' tuning (below), not by a route
  routes_part.erase("attn_o");
  routes_part.erase("smem_carveout");
  EXPECT_EQ(routes_part, cuda_fast_from_routes(r.plan.routes).to_json());
  // Every layer as one persistent kernel (tiny-llama: head dim 32, so it applies): timed against
  // the chain, and in the plan exactly when kept.
  const Json& pl = r.report["persistent_layers"];
  std::printf("[ compile ] persistent layers %s\n", pl.dump().c_str());
  ASSERT_TRUE(pl.contains("chain_ms")) << pl.dump();
  const bool kept = pl["status"] == "kept";
  EXPECT_EQ(r.plan.cuda_fast->get("persistent").value_or(0), kept ? 1 : 0);
  if (kept) {
    EXPECT_LT(pl["persistent_ms"].get<double>(), pl["chain_ms"].get<double>());
  } else {
    EXPECT_EQ(pl["status"], "not kept (not faster by the margin)") << pl.dump();
  }
  EXPECT_NE(r.report_md.find("every layer in one persistent kernel: "), std::string::npos);
  // The attention with the output projection in one kernel (tiny-llama's tiles fit): timed
  // against the chain, in the plan exactly when kept.
  const Json& ao = r.report["attention_output"];
  std::printf("[ compile ] attention and output projection %s\n", ao.dump().c_str());
  ASSERT_TRUE(ao.contains("chain_ms")) << ao.dump();
  EXPECT_NE(ao["variant"].get<std::string>().find("attn_o__cluster"), std::string::npos) << ao.dump();
  if (ao["status"] == "kept") {
    EXPECT_LT(ao["fused_ms"].get<double>(), ao["chain_ms"].get<double>());
    EXPECT_EQ(r.plan.cuda_fast->get("attn_o").value_or(0), ao["attn_o"].get<int>());
  } else {
    EXPECT_EQ(ao["status"], "not kept (not faster by the margin)") << ao.dump();
    EXPECT_EQ(r.plan.cuda_fast->get("attn_o").value_or(0), 0);
  }
  EXPECT_NE(r.report_md.find("attention and output projection in one kernel: "), std::string::npos);
  // One shared-memory carveout for every kernel: the backend's values timed in turn against the
  // searched plan as it then is, before the step tuning; the plan carries the last kept one, or none.
  size_t carveouts = 0;
  for (const StepSetting& set : usable_backend("cuda").step_settings())
    if (set.name == "smem_carveout") carveouts = set.values.size();
  const Json& sc = r.report["smem_carveout"];
  std::printf("[ compile ] shared-memory carveout %s\n", sc.dump().c_str());
  ASSERT_TRUE(sc.contains("chain_ms")) << sc.dump();
  ASSERT_EQ(sc["trials"].size(), carveouts) << sc.dump();
  EXPECT_GE(carveouts, 3u);
  if (sc["status"] == "kept") {
    EXPECT_LT(sc["carveout_ms"].get<double>(), sc["chain_ms"].get<double>());
    EXPECT_EQ(r.plan.cuda_fast->get("smem_carveout").value_or(-1), sc["smem_carveout"].get<int>());
  } else {
    EXPECT_EQ(sc["status"], "not kept (not faster by the margin)") << sc.dump();
    EXPECT_FALSE(r.plan.cuda_fast->get("smem_carveout").has_value());
  }
  EXPECT_NE(r.report_md.find("one shared-memory carveout for every kernel (timed before the tuning): "), std::string::npos);
  if (st["status"] == "tuned") {
    EXPECT_LT(st["tuned_ms"].get<double>(), st["start_ms"].get<double>());
    EXPECT_FALSE(st["changes"].empty());
  } else {
    EXPECT_EQ(st["status"], "kept the searched plan");
  }
  EXPECT_EQ(st["source"], "measured now");
  // A warm compile with the same DB: the region searches decide as before, so the step tuning
  // starts from the same plan and takes its recorded outcome, ending on the same routes.
  const CompileResult r2 = compile_model(*m, o);
  const Json& st2 = r2.report["step_tuning"];
  std::printf("[ compile ] warm step tuning: %s\n", st2["source"].dump().c_str());
  EXPECT_EQ(st2["source"].get<std::string>().rfind("tuning DB", 0), 0u) << st2.dump();
  EXPECT_EQ(st2["final"], st["final"]);
  EXPECT_EQ(r2.plan.cuda_fast->to_json(), r.plan.cuda_fast->to_json());
  EXPECT_EQ(r2.report["persistent_layers"]["status"], pl["status"]);
  EXPECT_EQ(r2.report["attention_output"]["status"], ao["status"]);
  EXPECT_EQ(r2.report["attention_output"]["source"].get<std::string>().rfind("tuning DB", 0), 0u);
  EXPECT_EQ(r2.report["persistent_layers"]["source"].get<std::string>().rfind("tuning DB", 0), 0u);
  EXPECT_EQ(r2.report["smem_carveout"]["status"], sc["status"]);
  EXPECT_EQ(r2.report["smem_carveout"]["source"].get<std::string>().rfind("tuning DB", 0), 0u);
  EXPECT_LE(r.report["budget"]["overrun_s"].get<double>(), 10.0);
  std::printf("[ compile ] %s\n", r.report["budget"].dump().c_str());
  EXPECT_EQ(r.report["seed_plan"]["status"], "none given");
  // Seeded with the first compile's plan (its tuned routes and carveout): the searched plan (the
  // same as before, from the DB) against the seed's choices as one plan, timed or found equal;
  // the plan still passes the end-to-end check.
  CompileOptions seeded = o;
  seeded.seed_plan = r.plan;
  seeded.seed_from = "the first compile";
  const CompileResult r3 = compile_model(*m, seeded);
  const Json& sp = r3.report["seed_plan"];
  std::printf("[ compile ] seed plan %s\n", sp.dump().c_str());
  EXPECT_EQ(sp["from"], "the first compile");
  const std::string seed_status = sp["status"].get<std::string>();
  if (seed_status == "same as the searched plan") {
    EXPECT_TRUE(sp["taken"].empty()) << sp.dump();
  } else {
    EXPECT_FALSE(sp["taken"].empty()) << sp.dump();
    EXPECT_GT(sp["seed_ms"].get<double>(), 0.0) << sp.dump();
    EXPECT_GT(sp["chain_ms"].get<double>(), 0.0) << sp.dump();
    EXPECT_TRUE(seed_status == "kept" || seed_status.rfind("not kept", 0) == 0) << seed_status;
  }
  EXPECT_TRUE(sp["missing"].empty()) << sp.dump();  // every choice of a plan of this compile was validated here
  EXPECT_TRUE(r3.report["e2e"]["ok"].get<bool>());
  EXPECT_NE(r3.report_md.find("- the seed plan's choices as one plan (timed first): "), std::string::npos);
}

}  // namespace
}  // namespace ac
#endif
