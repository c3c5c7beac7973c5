// The knob machinery on a small table of its own (no backend): plan blocks read strictly and
// written back, overrides, values taken from routes, a binding to a configuration struct.
#include <gtest/gtest.h>

#include "agentcompile/core/error.h"
#include "agentcompile/plan/knobs.h"
#include "agentcompile/plan/plan.h"
#include "unit/model_test_util.h"
#include "unit/plan_test_util.h"

namespace ac {
namespace {

using test::expect_bad_input;
using test::plan_route;

struct Point {
  int block = 256, rows = 1;
};
struct Config {
  Point a{128, 2}, b;
  Point c;  // optional in plans, whole when there
  int split = 32;
  int terms = 2;  // overrides only
  int ilp = 1;
  int carve = -1;  // -1: none
  bool graph = true;
};

const KnobBinding<Config>& binding() {
  static const KnobBinding<Config> b("test_block", [] {
    std::vector<BoundKnob<Config>> k;
    for (auto [slot, p] : {std::pair{"a", &Config::a}, std::pair{"b", &Config::b}}) {
      const std::string s = slot;
      k.push_back(bind(Knob("point." + s + ".block").range(32, 1024).in_plan(KnobInPlan::Required).override_as(s, "block")
                           .picked_by({"fam:gemv", "BLOCK", "region_" + s, {64, 128}}),
                       p, &Point::block));
      k.push_back(bind(Knob("point." + s + ".rows").range(1, 8).in_plan(KnobInPlan::Required).override_as(s, "rows")
                           .picked_by({"fam:gemv", "ROWS", "region_" + s, {1, 2}}),
                       p, &Point::rows));
    }
    k.push_back(bind(Knob("extra.c.block").range(32, 1024).in_plan(KnobInPlan::WithParent).override_as("c", "block"), &Config::c,
                     &Point::block));
    k.push_back(bind(Knob("extra.c.rows").range(1, 8).in_plan(KnobInPlan::WithParent).override_as("c", "rows"), &Config::c,
                     &Point::rows));
    k.push_back(bind(Knob("split").range(1, 1024).in_plan(KnobInPlan::Required).picked_by({"fam:attn", "SPLIT", "", {}}),
                     &Config::split));
    k.push_back(bind(Knob("ilp").one_of({1, 4}).in_plan(KnobInPlan::Optional), &Config::ilp));
    k.push_back(bind(Knob("terms"), &Config::terms));
    k.push_back(bind(Knob("carve").range(0, 100).none_at(-1).in_plan(KnobInPlan::Optional)
                         .picked_by({"", "smem_carveout", "region_a", {}}),
                     &Config::carve));
    k.push_back(bind(Knob("graph").in_plan(KnobInPlan::Optional), &Config::graph));
    return k;
  }());
  return b;
}

TEST(Knobs, DefaultsComeFromTheStruct) {
  const KnobTable& t = binding().table();
  EXPECT_EQ(t.knob("point.a.block").def, 128);
  EXPECT_EQ(t.knob("point.b.rows").def, 1);
  EXPECT_EQ(t.knob("carve").def, -1);
  EXPECT_EQ(t.knob("graph").def, 1);
  EXPECT_EQ(t.knob("graph").type, KnobType::Bool);
  EXPECT_THROW(t.knob("nope"), Error);
}

TEST(Knobs, PlanBlockRoundTrip) {
  Config c;
  c.b.rows = 4;
  c.c.block = 512;
  c.terms = 3;  // not in plans
  c.carve = 40;
  c.graph = false;
  const KnobValues v = binding().values(c);
  const Json j = v.to_json();
  EXPECT_EQ(j, Json::parse(R"({"point": {"a": {"block": 128, "rows": 2}, "b": {"block": 256, "rows": 4}},
                               "extra": {"c": {"block": 512, "rows": 1}}, "split": 32, "ilp": 1, "carve": 40,
                               "graph": false})"));
  const KnobValues back = KnobValues::from_json(binding().table(), j, "blk");
  EXPECT_EQ(back, v);
  EXPECT_EQ(back.to_json(), j);
  const Config d = binding().config(back);
  EXPECT_EQ(d.b.rows, 4);
  EXPECT_EQ(d.carve, 40);
  EXPECT_FALSE(d.graph);
  EXPECT_EQ(d.c.block, 512);
  EXPECT_EQ(d.terms, Config{}.terms);
  // A knob at its `none` is not written; an optional knob absent reads as the default.
  EXPECT_FALSE(binding().values(Config{}).to_json().contains("carve"));
  Json old = j;
  old.erase("ilp");
  old.erase("carve");
  old.erase("graph");
  old.erase("extra");
  const KnobValues o = KnobValues::from_json(binding().table(), old, "blk");
  EXPECT_FALSE(o.get("ilp"));
  EXPECT_EQ(o.value("ilp"), 1);
  EXPECT_EQ(o.to_json(), old);
  EXPECT_TRUE(binding().config(o).graph);
  EXPECT_EQ(binding().config(o).c.block, Config{}.c.block);
  // An object holding WithParent knobs must hold all of them; absent, it is not needed.
  Json with_c = j;
  with_c["extra"]["c"].erase("rows");
  expect_bad_input([&] { KnobValues::from_json(binding().table(), with_c, "blk"); }, {"blk: extra.c", "rows: missing"});
}

TEST(Knobs, PlanBlockRefusals) {
  const Json good = binding().values(Config{}).to_json();
  auto refused = [&](const std::function<void(Json&)>& edit, std::initializer_list<std::string> needles) {
    Json j = good;
    edit(j);
    expect_bad_input([&] { KnobValues::from_json(binding().table(), j, "blk"); }, needles);
  };
  refused([](Json& j) { j["point"]["a"]["block"] = 4096; }, {"blk: point.a", "block", "4096"});
  refused([](Json& j) { j["point"]["b"].erase("rows"); }, {"point.b", "rows: missing"});
  refused([](Json& j) { j["point"].erase("b"); }, {"blk: point", "b: missing"});
  refused([](Json& j) { j.erase("split"); }, {"split: missing"});
  refused([](Json& j) { j["point"] = 3; }, {"point: expected an object"});
  refused([](Json& j) { j["ilp"] = 3; }, {"ilp", "1 or 4"});
  refused([](Json& j) { j["carve"] = -1; }, {"carve"});  // `none` is absence in plans, not a value
  refused([](Json& j) { j["graph"] = 1; }, {"graph", "true or false"});
  refused([](Json& j) { j["point"]["z"] = {{"block", 64}, {"rows", 1}}; }, {"point: unknown key \"z\"", "a, b"});
  refused([](Json& j) { j["point"]["a"]["blok"] = 64; }, {"point.a: unknown key \"blok\""});
  // Unknown top-level keys are ignored, as plans always allowed.
  Json extra = good;
  extra["from_a_newer_engine"] = 1;
  EXPECT_EQ(KnobValues::from_json(binding().table(), extra, "blk").to_json(), good);
  expect_bad_input([&] { KnobValues::from_json(binding().table(), Json::array(), "blk"); }, {"blk", "object"});
}

TEST(Knobs, Overrides) {
  const Config c = binding().apply_overrides({}, "b=512:8,,split=64,graph=0,c=64:2,carve=30,terms=-5", "override");
  EXPECT_EQ(c.b.block, 512);
  EXPECT_EQ(c.b.rows, 8);
  EXPECT_EQ(c.split, 64);
  EXPECT_FALSE(c.graph);
  EXPECT_EQ(c.c.block, 64);
  EXPECT_EQ(c.carve, 30);
  EXPECT_EQ(c.terms, -5);  // any integer
  EXPECT_EQ(c.a.block, Config{}.a.block);
  EXPECT_EQ(binding().apply_overrides(c, "carve=-1", "override").carve, -1);  // its none
  EXPECT_TRUE(binding().apply_overrides(c, "graph=7", "override").graph);
  for (auto [spec, needle] : {std::pair{"b=512", "'b' needs block:rows"}, std::pair{"b=512:x", "'b': 'x' is not an integer"},
                              std::pair{"b=16:1", "'b': block must be an integer from 32 to 1024"},
                              std::pair{"ilp=2", "'ilp' must be 1 or 4"}, std::pair{"carve=101", "'carve' must be -1 (none) or"},
                              std::pair{"split", "'split' is not key=value"}, std::pair{"split=", "'split': '' is not an integer"},
                              std::pair{"split=12a", "is not an integer"}, std::pair{"nope=1", "unknown key 'nope'"},
                              std::pair{"point.a.block=64", "unknown key"}})
    expect_bad_input([&] { binding().apply_overrides({}, spec, "override"); }, {"override", needle});
}

TEST(Knobs, ValuesFromRoutes) {
  std::vector<PlanRoute> routes = {plan_route("region_b", "decode", "fam:gemv", {{"BLOCK", 64}, {"ROWS", 2}}),
                                   plan_route("region_a", "decode", "fallback", {}, 25),
                                   plan_route("attention", "decode", "fam:attn", {{"SPLIT", 128}, {"OTHER", 3}}),
                                   plan_route("region_a", "prefill", "fam:gemv", {{"BLOCK", 1024}, {"ROWS", 8}})};
  KnobValues v = binding().values(Config{});
  v.take_routes(routes, "decode");
  const Config c = binding().config(v);
  EXPECT_EQ(c.b.block, 64);
  EXPECT_EQ(c.b.rows, 2);
  EXPECT_EQ(c.a.block, Config{}.a.block);  // its only route is a prefill route
  EXPECT_EQ(c.split, 128);
  EXPECT_EQ(c.carve, 25);
  std::vector<std::string> searched;
  for (const Knob* k : binding().table().searched()) searched.push_back(k->name);
  EXPECT_EQ(searched, (std::vector<std::string>{"point.a.block", "point.a.rows", "point.b.block", "point.b.rows", "split", "carve"}));
  // A route value outside the knob's domain (a corrupt tuning record) is refused, naming the block.
  routes[0].params["ROWS"] = 64;
  expect_bad_input([&] { v.take_routes(routes, "decode"); }, {"test_block", "point.b.rows", "64"});
}

TEST(Knobs, InconsistentDeclarationsAreBugs) {
  auto table = [](std::vector<Knob> k) { KnobTable t("t", std::move(k)); };
  EXPECT_THROW(table({Knob("x"), Knob("x")}), Error);
  EXPECT_THROW(table({Knob("x").range(1, 4).defaults_to(0)}), Error);
  EXPECT_THROW(table({Knob("a").in_plan(KnobInPlan::Optional), Knob("a.b").in_plan(KnobInPlan::Optional)}), Error);
  EXPECT_THROW(table({Knob("a").override_as("t", "x"), Knob("b").override_as("t")}), Error);
  try {
    table({Knob("x"), Knob("x")});
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Internal);
  }
  // The registry holds one table per block.
  static const KnobTable once("test_registry_block", {Knob("x")});
  EXPECT_EQ(find_knob_table("test_registry_block"), nullptr);
  register_knob_table(once);
  EXPECT_EQ(find_knob_table("test_registry_block"), &once);
  EXPECT_THROW(register_knob_table(once), Error);
}

}  // namespace
}  // namespace ac
