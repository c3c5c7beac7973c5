// compile_model's report and progress on the CPU backend: report.md's tables start on their own
// line (a list line once ran into the table header), the budget says where the time went and by
// how much it was exceeded, the fallback guard's status is stated, and the progress counts
// regions up to the total.
#include <gtest/gtest.h>

#include <sstream>

#include "agentcompile/compiler/compile.h"
#include "agentcompile/model/model.h"
#include "compiler/report_markdown.h"
#include "unit/model_test_util.h"

namespace ac {
namespace {

using test::TempDir;

const fs::path kQwen3 = fs::path(AC_TEST_FIXTURES) / "hf" / "qwen3_mha_untied_5x";

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> v;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) v.push_back(l);
  return v;
}

// Markdown renders a table only when its rows start lines and the first follows a blank line; a
// row glued to the end of a list line shows as text. Returns the offending line ("" when none).
std::string table_not_on_its_own_line(const std::string& md) {
  const auto ls = lines_of(md);
  for (size_t i = 0; i < ls.size(); ++i) {
    if (ls[i].rfind("|", 0) == 0) {
      if (i > 0 && !ls[i - 1].empty() && ls[i - 1].rfind("|", 0) != 0) return ls[i];
      continue;
    }
    size_t cells = 0;  // "| " twice in a line that is not a row: a row glued to it
    for (size_t at = ls[i].find("| "); at != std::string::npos; at = ls[i].find("| ", at + 2)) ++cells;
    if (cells >= 2) return ls[i];
  }
  return "";
}

TEST(CompileReport, TableOnItsOwnLineCheck) {
  EXPECT_EQ(table_not_on_its_own_line("- a\n\n| x | y |\n|---|---|\n| 1 | 2 |\n"), "");
  EXPECT_NE(table_not_on_its_own_line("- a shape point\n| x | y |\n|---|---|\n"), "");
  EXPECT_NE(table_not_on_its_own_line("- bytes are the region summary's at its| region | phase |\n|---|---|\n"), "");
}

TEST(CompileReport, MarkdownBudgetAndProgress) {
  TempDir tmp;
  auto m = load_model(kQwen3);
  CompileOptions o;
  o.backend = "cpu";
  o.db_path = tmp / "t.db";
  o.budget_s = 30;
  o.prefill_tokens = 16;
  o.decode_context = 32;
  o.e2e_tokens = 4;
  o.search.repeats = 2;
  o.search.warmup = 1;
  std::vector<CompileProgress> seen;
  o.progress = [&](const CompileProgress& p) { seen.push_back(p); };
  const CompileResult r = compile_model(*m, o);
  const std::string& md = r.report_md;
  EXPECT_EQ(table_not_on_its_own_line(md), "") << md;
  // The bandwidth line is whole and ends the header list; the region table follows it.
  const auto ls = lines_of(md);
  size_t header = ls.size();
  for (size_t i = 0; i < ls.size(); ++i)
    if (ls[i].rfind("| region | phase |", 0) == 0) header = i;
  ASSERT_LT(header, ls.size()) << md;
  ASSERT_GE(header, 2u);
  EXPECT_EQ(ls[header - 1], "");
  EXPECT_EQ(ls[header - 2].rfind("- bandwidth for", 0), 0u) << ls[header - 2];
  EXPECT_NE(ls[header - 2].find("at its shape point"), std::string::npos) << ls[header - 2];
  EXPECT_NE(ls[header - 2].find("only reads can pass 100%"), std::string::npos) << ls[header - 2];
  // The host has no reads-alone ceiling: one percentage per row, the read pair null.
  EXPECT_EQ(ls[header - 2].find("what reads alone streamed"), std::string::npos) << ls[header - 2];
  EXPECT_NE(ls[header].find("| GB/s (% of bandwidth) |"), std::string::npos) << ls[header];
  EXPECT_FALSE(r.report["target"].contains("read_gbs"));
  for (const auto& reg : r.report["regions"]) {
    EXPECT_TRUE(reg["achieved"]["pct_of_read"].is_null()) << reg["achieved"].dump();
    EXPECT_TRUE(reg["achieved"]["read_GBps"].is_null()) << reg["achieved"].dump();
  }

  // A region the backend timed at another shape than its summary's (a CUDA prompt region on 2048
  // tokens) shows its FLOP rate against the GEMM rate instead of GB/s.
  {
    Json t = r.report;
    ASSERT_FALSE(t["regions"].empty());
    t["regions"].back()["achieved"] = {{"timed_flops", 3.4e10}, {"TFLOPs", 654.3}, {"pct_of_matmul", 83.6},
                                       {"matmul_TFLOPs", 782.0}, {"matmul_source", "measured now"}, {"bytes", nullptr},
                                       {"GBps", nullptr}, {"pct_of_bandwidth", nullptr}, {"bandwidth_GBps", 3000.0},
                                       {"bandwidth_source", "measured now"}, {"pct_of_read", nullptr}, {"read_GBps", nullptr}};
    const std::string tmd = report_markdown(t);
    EXPECT_NE(tmd.find("| 654 TFLOP/s (84% of GEMM) |"), std::string::npos) << tmd;
  }

  // The CPU backend runs every model on its searched routes: no generic-route section. Given
  // one (a CUDA compile of a model the fast path cannot run), report.md lists its regions.
  EXPECT_TRUE(r.report["generic_route"].is_null());
  EXPECT_EQ(md.find("## Generic route"), std::string::npos);
  Json g = r.report;
  g["generic_route"] = {{"why", "mixture-of-experts layers"},
                        {"regions", {{{"region", "mlp_in"}, {"phase", "decode"}, {"instances", 3}, {"bytes", 1.5e6}, {"floor_us", 0.5}}}},
                        {"decode_ms", 2.0},
                        {"decode_floor_ms", 0.5},
                        {"pct_of_floor", 25.0}};
  const std::string gmd = report_markdown(g);
  EXPECT_NE(gmd.find("## Generic route\n\nThe backend's fast routes cannot run this model (mixture-of-experts layers)"),
            std::string::npos) << gmd;
  EXPECT_NE(gmd.find("| mlp_in | decode | 3 | 1500000 |"), std::string::npos) << gmd;
  EXPECT_NE(gmd.find("A decode step took 2.000 ms against a floor of 0.500 ms (25.0% of the floor)."), std::string::npos) << gmd;
  EXPECT_EQ(table_not_on_its_own_line(gmd), "") << gmd;

  // Where the budget went, and by how much it was exceeded.
  const Json& b = r.report["budget"];
  for (const char* k : {"reference_s", "search_s", "after_search_s", "overrun_s", "search_share"})
    ASSERT_TRUE(b.contains(k)) << k;
  EXPECT_GT(b["reference_s"].get<double>(), 0);
  EXPECT_GE(b["overrun_s"].get<double>(), 0);
  EXPECT_DOUBLE_EQ(b["overrun_s"].get<double>(), std::max(0.0, r.elapsed_s - o.budget_s));
  EXPECT_LE(b["search_share"].get<double>(), 0.8 + 1e-9);
  EXPECT_NE(md.find("- budget: 30.00 s, used "), std::string::npos) << md;
  EXPECT_NE(md.find("reference backend"), std::string::npos) << md;

  // The guard against the all-fallback plan (here the reference backend itself) says what it did.
  const std::string guard = r.report["fallback_guard"]["status"].get<std::string>();
  EXPECT_TRUE(guard == "searched routes kept" || guard == "fallbacks kept" || guard == "every region on its fallback") << guard;
  EXPECT_NE(md.find("- against every region's fallback: " + guard), std::string::npos) << md;

  // Progress: regions done never decrease and reach the total before the end-to-end stage.
  ASSERT_FALSE(seen.empty());
  size_t last = 0;
  bool reached = false;
  for (const auto& p : seen) {
    EXPECT_GE(p.regions_done, last);
    last = p.regions_done;
    EXPECT_LE(p.regions_done, p.regions_total);
    if (p.stage == "end-to-end check") reached = p.regions_done == p.regions_total && p.regions_total > 0;
  }
  EXPECT_TRUE(reached);
}

}  // namespace
}  // namespace ac
