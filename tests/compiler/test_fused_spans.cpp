// Fused spans on the CPU backend (issue 7): the layer-MLP span classes, their staged search and
// tuning-DB records, the compile report's span comparison, and plans with a fused route run by
// `generate --plan` (the same greedy tokens as without a plan) or refused when the route's ops
// do not form whole layer-MLP spans.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>

#include "agentcompile/backends/cpu/cpu_evaluator.h"
#include "agentcompile/backends/cpu/cpu_executor.h"
#include "agentcompile/compiler/compile.h"
#include "agentcompile/compiler/spans.h"
#include "agentcompile/model/model.h"
#include "agentcompile/runtime/engine.h"
#include "agentcompile/runtime/plan_executor.h"
#include "agentcompile/tuning/backend.h"
#include "unit/compile_test_util.h"
#include "unit/model_test_util.h"

namespace ac {
namespace {

using test::expect_bad_input;
using test::TempDir;

const fs::path kQwen3 = fs::path(AC_TEST_FIXTURES) / "hf" / "qwen3_mha_untied_5x";
const fs::path kLlama = fs::path(AC_TEST_FIXTURES) / "hf" / "llama_gqa2_tied_llama3";

struct Ran {
  int rc = -1;
  std::string out, err;
};

// Runs the built binary with `args` (shell-quoted by the caller).
Ran run_binary(const TempDir& tmp, const std::string& args) {
  const fs::path out = tmp / "stdout", err = tmp / "stderr";
  const std::string cmd = std::string(AC_BINARY) + " " + args + " >" + out.string() + " 2>" + err.string();
  Ran r;
  const int status = std::system(cmd.c_str());
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  auto slurp = [](const fs::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

std::vector<int> greedy_tokens(const TempDir& tmp, const fs::path& model, const std::string& how) {
  const Ran r = run_binary(tmp, "generate " + model.string() + " --prompt-tokens 1,2,3,4,5 --max-tokens 12 --ignore-eos --json " + how);
  EXPECT_EQ(r.rc, 0) << r.err;
  if (r.rc != 0) return {};
  return Json::parse(r.out).at("tokens").get<std::vector<int>>();
}

// The fused route of a span entry of the report (its best fused candidate), over every layer.
PlanRoute fused_route(const Json& span, int layers) {
  PlanRoute r;
  r.region = span["span"].get<std::string>();
  r.phase = span["phase"].get<std::string>();
  r.signature = span["signature"].get<std::string>();
  r.family = "cpu:mlp.fused";
  r.route = "fused";
  for (const auto& c : span["search"]["candidates"])
    if (c["candidate"] == span["best_fused"]) r.params = c["params"].get<std::map<std::string, int>>();
  for (int l = 0; l < layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    r.instances.push_back(p + "mlp_in");
    r.instances.push_back(p + "mlp_out");
    for (const char* op : {"post_attention_layernorm", "gate_proj", "up_proj", "swiglu", "down_proj", "mlp_residual"})
      r.ops.push_back(p + op);
  }
  return r;
}

// `plan` with every layer's MLP fused in both phases (replacing the mlp_in and mlp_out routes).
Plan with_fused_mlps(Plan plan, const Json& report, int layers) {
  std::vector<PlanRoute> kept;
  for (const auto& r : plan.routes)
    if (r.region != "mlp_in" && r.region != "mlp_out" && r.route != "fused") kept.push_back(r);
  for (const auto& sp : report["spans"]) kept.push_back(fused_route(sp, layers));
  plan.routes = kept;
  return plan;
}

void write_plan(const fs::path& dir, const Plan& p) {
  fs::create_directories(dir);
  std::ofstream(dir / "plan.json") << p.to_json().dump(2);
}

TEST(FusedSpans, SpanClassesSearchAndDbRecords) {
  TempDir tmp;
  auto m = load_model(kLlama);
  const Graph g = build_decoder_graph(m->config, m->weights);
  FrontOptions fo;
  fo.target = host_cpu_target(false);
  fo.decode = decode_point(1, 40);
  fo.prefill = prefill_point(16);
  auto adv = make_advisor(advisor_config("none", "", ""));
  const FrontResult front = run_front(g, fo, *adv);
  std::vector<SpanWork> spans = layer_mlp_spans(g, front, "cpu");
  ASSERT_EQ(spans.size(), 2u);  // one class per phase: the two layers' MLPs are identical
  EXPECT_TRUE(layer_mlp_spans(g, front, "cuda").empty());
  for (const SpanWork& sp : spans) {
    const RegionWork& w = sp.work;
    ASSERT_EQ(sp.parts.size(), 2u);
    EXPECT_EQ(front.work[sp.parts[0]].summary.kind, RegionKind::MlpIn);
    EXPECT_EQ(front.work[sp.parts[1]].summary.kind, RegionKind::MlpOut);
    EXPECT_EQ(w.summary.phase, front.work[sp.parts[0]].summary.phase);
    ASSERT_EQ(w.span_instances.size(), 2u);
    for (const auto& inst : w.span_instances) {
      ASSERT_EQ(inst.size(), 2u);
      EXPECT_EQ(front.partition.regions[size_t(inst[0])].kind, RegionKind::MlpIn);
      EXPECT_EQ(inst[1], inst[0] + 1);
    }
    EXPECT_EQ(w.summary.instances.size(), 4u);
    EXPECT_NE(w.summary.signature, front.work[sp.parts[0]].summary.signature);
    EXPECT_EQ(w.summary.signature, region_signature(w.summary.shape_key, w.summary.phase));
    ASSERT_EQ(w.space.families.size(), 2u);
    EXPECT_EQ(w.space.families[1].id, "cpu:mlp.fused");
    EXPECT_EQ(w.space.families[1].route, FamilyRoute::Fused);
    EXPECT_GT(w.space.size(), 2u);
  }
  EXPECT_NE(spans[0].work.summary.signature, spans[1].work.summary.signature);

  // Seeded by a region search's winning tile: those bindings come first.
  std::vector<RegionSearch> searches(front.work.size());
  for (size_t i = 0; i < front.work.size(); ++i) searches[i].work = &front.work[i];
  SpanWork& sp = spans[0];
  searches[sp.parts[0]].winner = Candidate{"cpu:linear.blocked", {{"ROWS", 2}, {"TOKENS", 1}, {"KUNROLL", 4}, {"THREADS", 1}}};
  order_span_candidates(sp, searches);
  ASSERT_EQ(sp.work.ordered.size(), sp.work.space.size());
  EXPECT_EQ(sp.work.ordered[0].family, "cpu:fallback");
  EXPECT_EQ(sp.work.ordered[1].params.at("ROWS"), 2);
  EXPECT_EQ(sp.work.ordered[1].params.at("KUNROLL"), 4);
  EXPECT_EQ(sp.work.ordered[1].params.at("THREADS"), 1);

  // The staged search: a binding outside the constraints fails first; the others are correct
  // against the reference composition and timed; the DB keeps them under the span signature.
  RegionWork w = sp.work;
  w.ordered.resize(std::min<size_t>(w.ordered.size(), 6));
  w.ordered.insert(w.ordered.begin() + 1,
                   Candidate{"cpu:mlp.fused", {{"CHUNK", 16}, {"ROWS", 8}, {"TOKENS", 4}, {"KUNROLL", 16}, {"THREADS", 1}}});
  auto ev = make_cpu_evaluator(g, front.partition);
  TuningDb db(tmp / "t.db");
  const Environment env = current_environment("cpu");
  SearchOptions so;
  so.repeats = 3;
  so.model_name = "llama";
  const RegionSearch s = search_region(w, *ev, &db, env, so, Clock::now() + std::chrono::seconds(60));
  ASSERT_EQ(s.outcomes.size(), w.ordered.size());
  EXPECT_EQ(s.outcomes[0].status, "ok");
  EXPECT_EQ(s.outcomes[1].stage, "constraints");
  for (size_t i = 2; i < s.outcomes.size(); ++i) {
    EXPECT_EQ(s.outcomes[i].status, "ok") << s.outcomes[i].reason;
    EXPECT_EQ(s.outcomes[i].stage, "timing");
    EXPECT_LE(s.outcomes[i].rel_err, 1e-5);
  }
  const auto rec = db.find(env, w.summary.signature, s.bucket, s.outcomes[2].candidate.name());
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->family, "cpu:mlp.fused");
  EXPECT_GE(rec->samples_us.size(), 3u);
  const RegionSearch warm = search_region(w, *ev, &db, env, so, Clock::now() + std::chrono::seconds(60));
  EXPECT_EQ(warm.measured, 0u);
  EXPECT_EQ(warm.winner.name(), s.winner.name());
}

TEST(FusedSpans, CompileReportsTheSpansAndPlansRunThem) {
  TempDir tmp;
  auto m = load_model(kQwen3);
  const int layers = int(m->config.num_layers);
  const CompileResult r = compile_model(*m, test::small_compile_options(tmp / "t.db", 16, 32, 6));
  ASSERT_TRUE(r.report["e2e"]["ok"].get<bool>());
  const Json& spans = r.report["spans"];
  ASSERT_EQ(spans.size(), 2u);  // the MLP span class in decode and in prefill
  EXPECT_EQ(r.report["totals"]["spans"], 2);
  size_t taken = 0, span_edges = 0;
  for (const auto& sp : spans) {
    EXPECT_EQ(sp["span"], "mlp_in+mlp_out");
    EXPECT_EQ(sp["span_instances"], layers);
    const Json& cands = sp["search"]["candidates"];
    ASSERT_GE(cands.size(), 2u);
    EXPECT_EQ(cands[0]["family"], "cpu:fallback");
    size_t fused_ok = 0;
    for (const auto& c : cands)
      if (c["family"] == "cpu:mlp.fused" && c["status"] == "ok") {
        ++fused_ok;
        EXPECT_LE(c["rel_err"].get<double>(), 1e-5);
      }
    EXPECT_GT(fused_ok, 0u) << sp.dump();
    // The comparison: the best fused time against the separate regions' chosen routes.
    ASSERT_EQ(sp["separate"].size(), 2u);
    EXPECT_EQ(sp["separate"][0]["region"], "mlp_in");
    EXPECT_EQ(sp["separate"][1]["region"], "mlp_out");
    const double sep = sp["separate"][0]["time_us"].get<double>() + sp["separate"][1]["time_us"].get<double>();
    EXPECT_NEAR(sp["separate_us"].get<double>(), sep, 1e-9 * sep);
    EXPECT_GT(sp["fused_us"].get<double>(), 0);
    const bool t = sp["taken"].get<bool>();
    EXPECT_EQ(sp["path_decision"].get<std::string>().rfind(t ? "taken" : "not taken", 0), 0u) << sp["path_decision"];
    if (t) {
      EXPECT_LT(sp["fused_us"].get<double>(), sep);
      EXPECT_EQ(sp["taken_instances"], layers);
    } else if (sp["span_edges"].get<size_t>() > 0 && sp["path_decision"].get<std::string>().find("cheaper") != std::string::npos) {
      EXPECT_GE(sp["fused_us"].get<double>(), sep);
    }
    taken += t;
    span_edges += sp["span_edges"].get<size_t>();
  }
  EXPECT_EQ(r.report["route_graph"]["span_edges"].get<size_t>(), span_edges);
  EXPECT_NE(r.report_md.find("## Fused spans"), std::string::npos);
  // The plan has a fused route exactly for the spans the path took, and no mlp route of those phases then.
  size_t fused_routes = 0;
  for (const auto& route : r.plan.routes) {
    if (route.route != "fused") continue;
    ++fused_routes;
    EXPECT_EQ(route.family, "cpu:mlp.fused");
    EXPECT_EQ(route.ops.size(), size_t(6 * layers));
    for (const auto& other : r.plan.routes) {
      if (other.phase == route.phase) {
        EXPECT_NE(other.region, "mlp_in");
      }
    }
  }
  EXPECT_EQ(fused_routes, taken);
  write_plan_folder(tmp / "plan", r);

  // generate --plan: the compiled plan, and the same plan with every MLP fused in both phases
  // (the spans' best fused candidates, whether or not the path took them here), give the
  // reference backend's greedy tokens.
  const std::vector<int> ref = greedy_tokens(tmp, kQwen3, "--backend cpu");
  ASSERT_EQ(ref.size(), 12u);
  EXPECT_EQ(greedy_tokens(tmp, kQwen3, "--plan " + (tmp / "plan").string()), ref);
  const Plan fused = with_fused_mlps(Plan::load(tmp / "plan"), r.report, layers);
  write_plan(tmp / "fused", fused);
  EXPECT_EQ(greedy_tokens(tmp, kQwen3, "--plan " + (tmp / "fused").string()), ref);
  // Its logits match the reference backend's too.
  const Graph g = build_decoder_graph(m->config, m->weights);
  ExecutorLimits lim{1, 16, 16, 0};
  auto ex = make_plan_executor(load_plan_for(tmp / "fused", *m, "cpu"), g, lim);
  auto refx = make_cpu_executor(g, lim);
  const std::vector<int32_t> toks = {3, 1, 4, 1, 5, 9, 2, 6};
  const auto a = teacher_forced_logits(*ex, toks), b = teacher_forced_logits(*refx, toks);
  for (size_t i = 0; i < a.size(); ++i)
    for (size_t j = 0; j < a[i].size(); ++j) ASSERT_NEAR(a[i][j], b[i][j], 1e-3 + 1e-4 * std::abs(b[i][j]));

  // Corrupted fused routes are refused with one line (exit 2), naming what is wrong.
  struct Corruption {
    const char* what;
    std::function<void(PlanRoute&)> edit;
    const char* needle;
  };
  const std::vector<Corruption> bad = {
      {"an op missing", [](PlanRoute& x) { x.ops.erase(x.ops.begin() + 4); }, "whole MLP span"},
      {"an attention op", [](PlanRoute& x) { x.ops.push_back("layers.0.rope_q"); }, "not in a layer's MLP"},
      {"an op twice", [](PlanRoute& x) { x.ops.push_back(x.ops.front()); }, "twice"},
      {"an unknown op", [](PlanRoute& x) { x.ops.back() = "layers.9.down_proj"; }, "does not have"},
      {"wrong instances", [](PlanRoute& x) { x.instances.back() = "layers.0.attn_out"; }, "instances"},
      {"another family", [](PlanRoute& x) { x.family = "cpu:linear.blocked"; }, "fused family"},
      {"a parameter outside its domain", [](PlanRoute& x) { x.params["CHUNK"] = 48; }, "CHUNK"},
  };
  for (const auto& c : bad) {
    Plan p = fused;
    for (auto& x : p.routes)
      if (x.route == "fused" && x.phase == "decode") c.edit(x);
    write_plan(tmp / "bad", p);
    const Ran run = run_binary(tmp, "generate " + kQwen3.string() + " --prompt-tokens 1,2 --max-tokens 2 --plan " + (tmp / "bad").string());
    EXPECT_EQ(run.rc, 2) << c.what << ": " << run.err;
    EXPECT_EQ(run.err.find('\n'), run.err.size() - 1) << c.what << ": not one line: " << run.err;
    EXPECT_EQ(run.err.rfind("error: ", 0), 0u) << c.what << ": " << run.err;
    EXPECT_NE(run.err.find(c.needle), std::string::npos) << c.what << ": " << run.err;
    EXPECT_TRUE(run.out.empty()) << c.what;
  }
  // A fused route is also checked as it is read: it must name the regions it spans.
  Json j = fused.to_json();
  for (auto& x : j["routes"])
    if (x["route"] == "fused") x["instances"] = Json::array({"layers.0.mlp_in"});
  expect_bad_input([&] { Plan::from_json(j, "plan.json"); }, {"plan.json", "route fused"});
  // And an op fused in a phase cannot be bound by an op route too.
  Plan twice = fused;
  twice.routes.push_back(PlanRoute{.region = "mlp_out",
                                   .phase = "decode",
                                   .signature = "",
                                   .instances = {},
                                   .family = "cpu:linear.blocked",
                                   .route = "op",
                                   .params = {{"ROWS", 1}, {"TOKENS", 1}, {"KUNROLL", 4}, {"THREADS", 1}},
                                   .ops = {"layers.1.down_proj"}});
  expect_bad_input([&] { make_plan_executor(twice, g, lim); }, {"layers.1.down_proj", "bound by"});
  expect_bad_input([&] { Plan::from_json(twice.to_json(), "plan.json"); }, {"bound twice"});
}

}  // namespace
}  // namespace ac
