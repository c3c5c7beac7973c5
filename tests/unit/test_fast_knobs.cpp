// The fast path's knob table (fast_knobs.cpp): plans written before it read and write back the
// same bytes, the declarations agree with the kernel families and FastConfig, and a new knob is
// one declaration.
#ifdef AGENTCOMPILE_HAVE_CUDA
#include <gtest/gtest.h>

#include <set>

#include "agentcompile/core/error.h"
#include "agentcompile/plan/plan.h"
#include "agentcompile/tuning/backend.h"
#include "backends/cuda/family.h"
#include "backends/cuda/fast_knobs.h"
#include "backends/cuda/plan_config.h"
#include "backends/cuda/search_eval.h"
#include "unit/model_test_util.h"
#include "unit/plan_test_util.h"

namespace ac {
namespace {

using test::expect_bad_input;
using test::plan_route;

const fs::path kPlans = fs::path(AC_TEST_FIXTURES) / "plans";

Json fixture(const std::string& file) { return parse_json_strict(read_file(kPlans / file, 1 << 20), file); }

KnobValues read(const Json& j) { return KnobValues::from_json(cuda::fast_knobs().table(), j, "cuda_fast"); }

// The FastConfigs and routes tests/fixtures/plans/cuda_fast_blocks.json was written from.
std::map<std::string, cuda::FastConfig> fixture_configs() {
  cuda::FastConfig tuned;
  tuned.o = cuda::GemvChoice{128, 4, 1, 8};
  tuned.attn_split = 128;
  tuned.attn_ilp = 4;
  tuned.attn_split_long = 128;
  tuned.attn_long_from = 0;
  tuned.attn_cluster = 4;
  tuned.down_mma = cuda::MmaChoice{128, 2, 1, 8};
  tuned.pdl = false;
  cuda::FastConfig all = tuned;
  all.persistent = 1;
  all.attn_o = 2;
  all.attn_merge_o = 1;
  all.smem_carveout = 40;
  all.region_carveout = {{"down", 30}, {"attention", 0}};
  all.cuda_graph = false;
  all.attn_cluster_long = 16;
  all.attn_tile = 16;
  all.qkv_post_block = 256;
  return {{"defaults", cuda::FastConfig{}}, {"tuned", tuned}, {"everything", all}};
}

std::map<std::string, std::vector<PlanRoute>> fixture_routes() {
  std::vector<PlanRoute> r = {
      plan_route("mlp_in", "decode", "cuda:gemv.fused", {{"BLOCK", 128}, {"ROWS", 2}, {"UNROLL", 1}, {"SPLITK", 1}}, 60),
      plan_route("attention", "decode", "cuda:attn_decode.split", {{"BLOCK", 64}, {"TILE", 16}, {"SPLIT", 256}}, 30),
      plan_route("head", "decode", "cuda:fallback", {}, 25),
      plan_route("mlp_in", "prefill", "cuda:gemv.fused", {{"BLOCK", 128}, {"ROWS", 4}, {"UNROLL", 1}, {"SPLITK", 1}}, 60),
      plan_route("attn_out", "decode", "cuda:gemv.mma", {{"BLOCK", 512}, {"MT", 2}, {"UNROLL", 1}, {"SPLITK", 4}})};
  std::map<std::string, std::vector<PlanRoute>> out = {{"split", r}};
  r[1].family = "cuda:attn_decode.fused";
  r[1].params = {{"BLOCK", 512}, {"SPLIT", 64}, {"ILP", 4}};
  out["fused"] = r;
  r[1].family = "cuda:attn_decode.cluster";
  r[1].params = {{"BLOCK", 128}, {"CLUSTER", 4}};
  out["cluster"] = r;
  return out;
}

// What the engine wrote before the table, it writes the same now, and reads back unchanged. Knobs
// declared since (the FP8 GEMVs' points, the prompt attention's point, the expert GEMVs' point)
// are written beside it; a block without them reads as their defaults.
TEST(FastKnobs, PlanBlocksWrittenBeforeTheTableAreWrittenTheSame) {
  const Json blocks = fixture("cuda_fast_blocks.json");
  auto without_later = [](Json j) {
    for (const char* later :
         {"gemv_fp8", "gemv_mma_fp8", "prefill_flash_block", "prefill_flash_bk", "moe_block", "moe_rows", "prefill_gemm"}) {
      EXPECT_TRUE(j.contains(later)) << later;
      j.erase(later);
    }
    return j;
  };
  for (const auto& [name, cfg] : fixture_configs()) {
    const Json& want = blocks.at("plan_fast_of").at(name);
    EXPECT_EQ(without_later(plan_fast_of(cfg).to_json()).dump(), want.dump()) << name;
    EXPECT_EQ(read(want).to_json().dump(), want.dump()) << name;
    EXPECT_EQ(without_later(plan_fast_of(fast_config_of(read(want))).to_json()), want) << name;
    EXPECT_EQ(fast_config_of(read(want)).down_fp8.splitk, cuda::FastConfig{}.down_fp8.splitk) << name;
    EXPECT_EQ(plan_fast_of(cfg).to_json().at("gemv_fp8").at("qkv").at("rows").get<int>(), cfg.qkv_fp8.rows) << name;
  }
  for (const auto& [name, routes] : fixture_routes()) {
    const Json& want = blocks.at("cuda_fast_from_routes").at(name);
    EXPECT_EQ(without_later(cuda_fast_from_routes(routes).to_json()).dump(), want.dump()) << name;
  }
  EXPECT_EQ(blocks.at("plan_fast_of").size(), 3u);
  EXPECT_EQ(blocks.at("cuda_fast_from_routes").size(), 3u);
}

// A plan compiled on the GPU before the table (per-region carveouts included) loads and is written
// back byte for byte.
TEST(FastKnobs, APlanCompiledBeforeTheTableRoundTrips) {
  const fs::path dir = kPlans / "cuda-qwen3-1.7b";
  const Json raw = fixture("cuda-qwen3-1.7b/plan.json");
  const Plan p = Plan::load_choices(dir, "--plan");
  ASSERT_TRUE(p.cuda_fast);
  EXPECT_EQ(p.cuda_fast->get("region_carveout.down"), 25);
  EXPECT_FALSE(p.cuda_fast->get("region_carveout.qkv"));
  EXPECT_EQ(p.to_json().dump(2), raw.dump(2));
  EXPECT_EQ(Plan::from_json(p.to_json(), "again").to_json(), raw);
}

TEST(FastKnobs, PlanRefusals) {
  Json j = fixture("cuda-qwen3-1.7b/plan.json");
  j["cuda_fast"]["gemv"]["qkv"]["block"] = 4096;
  expect_bad_input([&] { Plan::from_json(j, "plan.json"); }, {"plan.json: cuda_fast: gemv.qkv", "block", "4096"});
  j = fixture("cuda-qwen3-1.7b/plan.json");
  j["cuda_fast"]["gemv"]["mlp"] = j["cuda_fast"]["gemv"]["qkv"];
  expect_bad_input([&] { Plan::from_json(j, "plan.json"); }, {"gemv: unknown key \"mlp\"", "gate_up"});
  j = fixture("cuda-qwen3-1.7b/plan.json");
  j["environment"]["backend"] = "cpu";
  expect_bad_input([&] { Plan::from_json(j, "plan.json"); }, {"cuda_fast", "cpu plan"});
  // Values set by the compile from tuning records are checked as they are set.
  KnobValues v = plan_fast_of(cuda::FastConfig{});
  expect_bad_input([&] { v.set("smem_carveout", 101); }, {"cuda_fast", "smem_carveout", "101"});
  v.set("smem_carveout", -1);  // its none: unset
  EXPECT_FALSE(v.get("smem_carveout"));
}

// The declarations match what they describe: the families they name, FastConfig's defaults, the
// one list of GEMV regions.
TEST(FastKnobs, DeclarationsAgreeWithFamiliesAndFastConfig) {
  const KnobTable& t = cuda::fast_knobs().table();
  EXPECT_EQ(find_knob_table("cuda_fast"), &t);
  for (const Knob& k : t.knobs()) {
    EXPECT_FALSE(k.doc.empty()) << k.name;
    for (const std::string& r : k.readers) {
      const size_t dot = r.find('.');
      ASSERT_NE(dot, std::string::npos) << r;
      EXPECT_NO_THROW(cuda::find_family(r.substr(0, dot), r.substr(dot + 1))) << k.name << " reader " << r;
    }
    for (const KnobSearch& s : k.search) {
      if (s.family.empty()) continue;
      if (s.family == cuda::kLtFamily) {  // the library route: ranks of cuBLASLt's heuristic list
        EXPECT_EQ(s.param, "ALGO") << k.name;
        EXPECT_EQ(s.values.size(), size_t(cuda::kLtAlgorithms)) << k.name;
        continue;
      }
      if (s.param == kPickedFamily) {  // the region took this family: the knob's one value says which
        ASSERT_EQ(s.values.size(), 1u) << k.name;
        EXPECT_TRUE(k.domain.contains(s.values[0])) << k.name;
        const size_t dot = s.family.find('.');
        EXPECT_NO_THROW(cuda::find_family(s.family.substr(5, dot - 5), s.family.substr(dot + 1))) << k.name;
        continue;
      }
      if (s.family == "cuda:attn_prefill.pipe" && s.param == "QS") {  // the prompt attention's form: 0 pipe, else qs's MT
        std::vector<int> forms = {0};
        for (const cuda::ParamDomain& d : cuda::find_family("attn_prefill", "qs").params)
          if (d.name == "MT") forms.insert(forms.end(), d.values.begin(), d.values.end());
        EXPECT_EQ(s.values, forms) << k.name;
        continue;
      }
      const size_t dot = s.family.find('.');
      const cuda::Family& f = cuda::find_family(s.family.substr(5, dot - 5), s.family.substr(dot + 1));
      bool has = false;
      for (const cuda::ParamDomain& d : f.params) has = has || (d.name == s.param && d.values == s.values);
      EXPECT_TRUE(has) << k.name << ": " << s.family << " " << s.param;
    }
  }
  // FastConfig{} through its plan values is FastConfig{} (every default written or the default).
  const cuda::FastConfig d = fast_config_of(plan_fast_of(cuda::FastConfig{}));
  EXPECT_EQ(plan_fast_of(d).to_json(), plan_fast_of(cuda::FastConfig{}).to_json());
  // Each GEMV slot has its two points, and a carveout, and nothing else is a GEMV region.
  std::set<std::string> slots;
  for (const Knob& k : t.knobs())
    if (k.name.rfind("gemv.", 0) == 0) slots.insert(k.name.substr(5, k.name.find('.', 5) - 5));
  std::set<std::string> want;
  for (const cuda::GemvSlotField& s : cuda::kGemvSlots) {
    want.insert(s.name);
    EXPECT_TRUE(t.find("gemv_mma." + std::string(s.name) + ".rows")) << s.name;
    // An FP8 point where the slot may be FP8 (the projections), none for the 16-bit lm_head.
    EXPECT_EQ(t.find("gemv_fp8." + std::string(s.name) + ".rows") != nullptr, s.fp8 != nullptr) << s.name;
    EXPECT_TRUE(t.find("region_carveout." + std::string(s.name))) << s.name;
    EXPECT_EQ(carveout_region_of(s.region), s.name);
  }
  EXPECT_EQ(slots, want);
  EXPECT_TRUE(t.find("region_carveout.attention"));
}

// Every knob's override takes its default back (the override key and the member agree), and a
// value outside a bounded domain is a one-line error naming the key.
TEST(FastKnobs, EveryOverrideKeySetsItsKnob) {
  const auto& b = cuda::fast_knobs();
  const KnobTable& t = b.table();
  std::map<std::string, std::vector<const Knob*>> tuples;
  for (const Knob& k : t.knobs()) tuples[k.key()].push_back(&k);
  for (const auto& [key, ks] : tuples) {
    std::string val;
    for (const Knob* k : ks) val += (val.empty() ? "" : ":") + std::to_string(k->def);
    const KnobValues base = b.values(b.apply_overrides({}, "", "o"));
    EXPECT_EQ(b.values(b.apply_overrides({}, key + "=" + val, "o")), base) << key;
    // A value of the domain other than the default lands in the knob this key names.
    const Knob& k = *ks.front();
    int other = k.def;
    if (!k.domain.values.empty())
      for (int v : k.domain.values) other = v != k.def ? v : other;
    else if (k.domain.hi > k.def)
      other = k.def + 1;
    if (other == k.def || k.plan == KnobInPlan::None) continue;
    std::string spec = key + "=" + std::to_string(other);
    for (size_t i = 1; i < ks.size(); ++i) spec += ":" + std::to_string(ks[i]->def);
    EXPECT_EQ(b.values(b.apply_overrides({}, spec, "o")).get(k.name), other) << spec;
  }
  for (const char* bad : {"attn_cluster=3", "attn_o=3", "attn_ilp=2", "top_k_block=300", "attn_o_late=3", "qkv=16:1:1:1",
                          "carveout.down=101", "carveout.mlp=30"})
    expect_bad_input([&] { cuda::apply_fast_config_override({}, bad); },
                     {"fast config override", "'" + std::string(bad).substr(0, std::string(bad).find('=')) + "'"});
}

// A knob the engine does not have yet, added by one declaration (and its member): plan.json,
// the override, the searched domains and the values from routes all take it, and plans written
// without it read and write back unchanged.
TEST(FastKnobs, ANewKnobIsOneDeclaration) {
  struct Extended : cuda::FastConfig {
    int attn_new = 3;
  };
  std::vector<BoundKnob<Extended>> knobs;
  for (const BoundKnob<cuda::FastConfig>& k : cuda::fast_knobs().bound())
    knobs.push_back({k.knob, [g = k.get](const Extended& e) { return g(e); }, [s = k.set](Extended& e, int v) { s(e, v); }});
  knobs.push_back(bind(Knob("attn_new")
                           .one_of({1, 3, 5})
                           .in_plan(KnobInPlan::Optional)
                           .read_by({"attn_decode.fused"})
                           .picked_by({"cuda:attn_decode.fused", "NEW", "attention", {1, 3, 5}})
                           .described("a knob of a future attention kernel"),
                       &Extended::attn_new));
  const KnobBinding<Extended> ext("cuda_fast", std::move(knobs));
  EXPECT_EQ(ext.table().knob("attn_new").def, 3);

  // plan.json: written and read back; everything else as the engine's own table writes it.
  Extended e;
  e.attn_new = 5;
  e.o = cuda::GemvChoice{128, 4, 1, 8};
  Json j = ext.values(e).to_json();
  EXPECT_EQ(j.at("attn_new"), 5);
  EXPECT_EQ(ext.config(KnobValues::from_json(ext.table(), j, "cuda_fast")).attn_new, 5);
  EXPECT_EQ(ext.config(KnobValues::from_json(ext.table(), j, "cuda_fast")).o.rows, 4);
  j.erase("attn_new");
  EXPECT_EQ(j, plan_fast_of(e).to_json());
  Json bad = ext.values(e).to_json();
  bad["attn_new"] = 2;
  expect_bad_input([&] { KnobValues::from_json(ext.table(), bad, "cuda_fast"); }, {"attn_new", "1, 3 or 5"});
  // A plan written without it: read with the default, written back unchanged.
  const Json old = fixture("cuda-qwen3-1.7b/plan.json").at("cuda_fast");
  const KnobValues ov = KnobValues::from_json(ext.table(), old, "cuda_fast");
  EXPECT_EQ(ov.to_json(), old);
  EXPECT_EQ(ext.config(ov).attn_new, 3);
  EXPECT_EQ(static_cast<const cuda::FastConfig&>(ext.config(ov)).region_carveout, fast_config_of(read(old)).region_carveout);

  // The override.
  const Extended o = ext.apply_overrides({}, "attn_new=1,o=128:2:1:4", "fast config override");
  EXPECT_EQ(o.attn_new, 1);
  EXPECT_EQ(o.o.rows, 2);
  expect_bad_input([&] { ext.apply_overrides({}, "attn_new=2", "fast config override"); }, {"'attn_new' must be 1, 3 or 5"});

  // The searched domains, and the value the search picked, from the routes.
  const std::vector<const Knob*> searched = ext.table().searched();
  ASSERT_FALSE(searched.empty());
  EXPECT_EQ(searched.back()->name, "attn_new");
  EXPECT_EQ(searched.back()->search.at(0).values, (std::vector<int>{1, 3, 5}));
  const std::vector<PlanRoute> routes = {
      plan_route("attention", "decode", "cuda:attn_decode.fused", {{"BLOCK", 128}, {"SPLIT", 64}, {"NEW", 5}})};
  KnobValues v = ext.values(Extended{});
  v.take_routes(routes, "decode");
  EXPECT_EQ(ext.config(v).attn_new, 5);
  EXPECT_EQ(ext.config(v).attn_split, 64);
}

// The compile's whole-step settings for the CUDA backend are the knobs declared with the values
// to try (tried_per_step), and a route's own carveouts the values its carveout knob is picked from.
TEST(FastKnobs, StepSettingsAreDeclaredWithTheirKnobs) {
  const Backend* cuda = find_backend("cuda");
  ASSERT_NE(cuda, nullptr);
  const KnobTable& t = cuda::fast_knobs().table();
  std::set<std::string> declared, settings;
  for (const Knob& k : t.knobs())
    if (!k.step_values.empty()) declared.insert(k.name);
  for (const StepSetting& st : cuda->step_settings()) {
    settings.insert(st.name);
    // Built during static initialisation: a list read from another static there came out empty once.
    EXPECT_FALSE(st.values.empty()) << st.name;
    EXPECT_EQ(st.values, t.knob(st.name).step_values) << st.name;
    for (int v : st.values) EXPECT_TRUE(t.knob(st.name).domain.contains(v)) << st.name << " " << v;
  }
  EXPECT_EQ(settings, declared);
  EXPECT_EQ(cuda->route_carveouts(), (std::vector<int>{25, 40, 60, 80}));
  for (const cuda::GemvSlotField& s : cuda::kGemvSlots)
    EXPECT_EQ(cuda->route_carveouts(), t.knob("region_carveout." + std::string(s.name)).search.at(0).values) << s.name;
}

}  // namespace
// A prompt projection's own-GEMM route is searched per region: a route of gemm.wgmma or gemm.mma
// sets that projection's prefill_gemm.<slot> (the family as its route, the point as its fields),
// a cuBLASLt rank or the fallback leaves it the library's; the plan block holds it and reads it
// back; the override <slot>_gemm=route:bn:stages:pipe:load:cluster:sched sets the same fields.
TEST(FastKnobs, PromptGemmRoutesArePickedPerProjection) {
  const std::vector<PlanRoute> routes = {
      plan_route("attn_in", "prefill", "cuda:gemm.wgmma", {{"BN", 64}, {"STAGES", 5}, {"PIPE", 1}, {"LOAD", 1}, {"CLUSTER", 1}, {"SCHED", 1}}),
      plan_route("mlp_in", "prefill", "cuda:gemm.mma", {{"BN", 64}, {"STAGES", 3}}),
      plan_route("attn_out", "prefill", "cuda:gemm.lt", {{"ALGO", 2}}),
      plan_route("mlp_out", "prefill", "cuda:fallback", {}),
      plan_route("attn_in", "decode", "cuda:gemv.fused", {{"BLOCK", 128}, {"ROWS", 2}, {"UNROLL", 1}, {"SPLITK", 1}})};
  const KnobValues v = cuda_fast_from_routes(routes);
  const cuda::FastConfig f = fast_config_of(v);
  EXPECT_EQ(f.prefill_gemm_qkv.route, cuda::kGemmWgmma);
  EXPECT_EQ(f.prefill_gemm_qkv.bn, 64);
  EXPECT_EQ(f.prefill_gemm_qkv.stages, 5);
  EXPECT_EQ(f.prefill_gemm_qkv.pipe, 1);
  EXPECT_EQ(f.prefill_gemm_qkv.load, 1);
  EXPECT_EQ(f.prefill_gemm_qkv.sched, 1);
  EXPECT_EQ(f.prefill_gemm_gate_up.route, cuda::kGemmMma);
  EXPECT_EQ(f.prefill_gemm_gate_up.bn, 64);
  EXPECT_EQ(f.prefill_gemm_gate_up.stages, 3);
  EXPECT_EQ(f.prefill_gemm_gate_up.pipe, 0);  // gemm.mma has none: the default
  EXPECT_EQ(f.prefill_gemm_o.route, cuda::kGemmLibrary);
  EXPECT_EQ(f.prefill_algo_o, 2);
  EXPECT_EQ(f.prefill_gemm_down.route, cuda::kGemmLibrary);
  EXPECT_EQ(f.qkv.block, 128);  // the decode route's GEMV point, not confused with the prompt's
  const Json j = v.to_json();
  EXPECT_EQ(j.at("prefill_gemm").at("qkv").at("route"), cuda::kGemmWgmma);
  EXPECT_EQ(j.at("prefill_gemm").at("gate_up").at("stages"), 3);
  EXPECT_EQ(fast_config_of(read(j)).prefill_gemm_qkv.load, 1);
  EXPECT_EQ(fast_config_of(read(j)).prefill_gemm_qkv.sched, 1);
  Json bad = j;
  bad["prefill_gemm"]["o"]["route"] = 3;
  expect_bad_input([&] { read(bad); }, {"prefill_gemm.o: route", "3"});
  bad = j;
  bad["prefill_gemm"]["o"].erase("bn");  // the point's fields come together
  expect_bad_input([&] { read(bad); }, {"prefill_gemm.o"});
  const cuda::FastConfig o = cuda::apply_fast_config_override({}, "down_gemm=2:64:3:0:0:1:0");
  EXPECT_EQ(o.prefill_gemm_down.route, cuda::kGemmMma);
  EXPECT_EQ(o.prefill_gemm_down.bn, 64);
  EXPECT_EQ(o.prefill_gemm_down.stages, 3);
  expect_bad_input([&] { cuda::apply_fast_config_override({}, "down_gemm=2:96:3:0:0:1:0"); }, {"down_gemm"});
  expect_bad_input([&] { cuda::apply_fast_config_override({}, "down_gemm=2:64:3:0:0:1"); }, {"down_gemm"});  // a field short
  EXPECT_EQ(cuda::apply_fast_config_override({}, "qkv_gemm=1:128:4:1:1:1:1").prefill_gemm_qkv.sched, 1);
}

}  // namespace ac
#endif  // AGENTCOMPILE_HAVE_CUDA
