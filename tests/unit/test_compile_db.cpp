// compile_model and its tuning database: a database locked by another process costs no work,
// a stored reference profile is reused only under the timing conditions it was taken in, and on
// the CPU backend a plan slower than the reference backend is refused (the fallback guard).
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <set>

#include "agentcompile/compiler/compile.h"
#include "agentcompile/model/model.h"
#include "unit/compile_test_util.h"
#include "unit/model_test_util.h"

namespace ac {
namespace {

using test::TempDir;

const fs::path kQwen3 = fs::path(AC_TEST_FIXTURES) / "hf" / "qwen3_mha_untied_5x";

// Every correct specialised candidate a compile's report lists (regions and fused spans).
std::set<std::string> specialised_candidates(const Json& report) {
  std::set<std::string> out;
  auto scan = [&](const Json& search) {
    for (const auto& c : search["candidates"])
      if (c["status"] == "ok" && c["family"] != "cpu:fallback") out.insert(c["candidate"].get<std::string>());
  };
  for (const auto& r : report["regions"]) scan(r["search"]);
  for (const auto& sp : report["spans"]) scan(sp["search"]);
  return out;
}

TEST(CompileDb, ALockedDatabaseCostsNoWorkAndTheReportSaysSo) {
  TempDir tmp;
  auto m = load_model(kQwen3);
  CompileOptions o = test::small_compile_options(tmp / "t.db");
  o.budget_s = 20;
  o.db_wait_s = 0.2;
  { TuningDb create(tmp / "t.db"); }
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open((tmp / "t.db").c_str(), &other), SQLITE_OK);
  // Held as another process would: every read and write of the compile finds it locked.
  ASSERT_EQ(sqlite3_exec(other, "PRAGMA locking_mode=EXCLUSIVE; BEGIN EXCLUSIVE; "
                                "INSERT INTO meta(key, value) VALUES('held', 'yes');",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  CompileResult r = compile_model(*m, o);
  EXPECT_TRUE(r.report["e2e"]["ok"].get<bool>());
  EXPECT_GT(r.report["totals"]["measured"].get<size_t>(), 10u);  // measured, since nothing could be read
  const Json& db = r.report["db"];
  EXPECT_FALSE(db["stored"].get<bool>()) << db.dump();
  EXPECT_GT(db["not_stored"].get<size_t>(), 10u) << db.dump();
  EXPECT_TRUE(db["records_here"].is_null()) << db.dump();
  EXPECT_NE(r.db_note.find("were not stored"), std::string::npos) << r.db_note;
  EXPECT_NE(r.db_note.find("locked"), std::string::npos) << r.db_note;
  EXPECT_NE(r.report_md.find("were not stored in the tuning database"), std::string::npos);
  EXPECT_EQ(r.report["regression"]["status"].get<std::string>().rfind("not checked", 0), 0u) << r.report["regression"].dump();
  EXPECT_TRUE(r.regression.empty());
  write_plan_folder(tmp / "plan", r);  // the plan is written as any other
  EXPECT_TRUE(fs::exists(tmp / "plan" / "plan.json"));
  sqlite3_exec(other, "ROLLBACK;", nullptr, nullptr, nullptr);
  sqlite3_close(other);
  // Unlocked: everything is measured and stored.
  CompileResult again = compile_model(*m, o);
  EXPECT_TRUE(again.report["db"]["stored"].get<bool>()) << again.report["db"].dump();
  EXPECT_EQ(again.db_note, "");
  EXPECT_GT(again.report["db"]["records_here"].get<int64_t>(), 10);
}

TEST(CompileDb, AStoredReferenceProfileIsReusedOnlyUnderTheSameTimingNoise) {
  TempDir tmp;
  auto m = load_model(kQwen3);
  CompileOptions o = test::small_compile_options(tmp / "t.db");
  const TimingNoise quiet{100, 0.02}, loaded{169, 0.30};
  o.timing_noise = [&] { return loaded; };  // the first compile profiles the reference under load
  CompileResult cold = compile_model(*m, o);
  EXPECT_EQ(cold.report["reference_backend"]["source"], "measured now");
  EXPECT_EQ(cold.report["reference_backend"]["timing_noise"]["noise"].get<double>(), 0.30);
  o.timing_noise = [&] { return quiet; };  // the second on a quiet machine: measured again
  CompileResult warm = compile_model(*m, o);
  const std::string src = warm.report["reference_backend"]["source"].get<std::string>();
  EXPECT_EQ(src.rfind("measured now (the tuning DB's profile of ", 0), 0u) << src;
  EXPECT_NE(src.find("noise differs"), std::string::npos) << src;
  EXPECT_EQ(warm.report["timing_noise"]["noise"].get<double>(), 0.02);
  // A third under the same quiet conditions reuses the second's profile, as stored.
  CompileResult third = compile_model(*m, o);
  EXPECT_EQ(third.report["reference_backend"]["source"].get<std::string>().rfind("tuning DB, measured ", 0), 0u);
  EXPECT_EQ(third.report["reference_backend"]["objective_cost_us"], warm.report["reference_backend"]["objective_cost_us"]);
}

TEST(CompileDb, CpuPlanSlowerThanTheReferenceIsRefusedAndReportsOneX) {
  TempDir tmp;
  auto m = load_model(kQwen3);
  CompileOptions o = test::small_compile_options(tmp / "t.db");
  CompileResult first = compile_model(*m, o);
  bool any = false;
  for (const auto& r : first.plan.routes) any = any || r.route != "fallback";
  if (!any) GTEST_SKIP() << "no specialised route won on this host";
  // Every specialised candidate profiles ten times slower side by side: the guard must keep the
  // reference backend (every region's fallback), as the CUDA guard keeps the fast path's defaults.
  for (const auto& name : specialised_candidates(first.report)) o.e2e_slowdown[name] = 10;
  CompileResult r = compile_model(*m, o);
  const Json& fg = r.report["fallback_guard"];
  EXPECT_EQ(fg["status"], "fallbacks kept") << fg.dump();
  EXPECT_NE(fg["reason"].get<std::string>().find("slower than the reference backend"), std::string::npos) << fg.dump();
  EXPECT_GT(fg["plan_us"].get<double>(), fg["fallback_us"].get<double>());
  ASSERT_FALSE(r.report["repairs"].empty());
  for (const auto& rt : r.plan.routes) EXPECT_EQ(rt.route, "fallback") << rt.region;
  EXPECT_NE(r.report_md.find("slower than the reference backend"), std::string::npos);
  // The plan is the reference backend: its speedup is exactly 1, not a ratio against a profile
  // of another moment.
  EXPECT_EQ(r.report["e2e"]["speedup_vs_reference"].get<double>(), 1.0) << r.report["e2e"].dump();
  EXPECT_EQ(r.report["e2e"]["reference_profile"]["source"].get<std::string>().rfind("this plan, profiled now", 0), 0u);
  EXPECT_TRUE(r.regression.empty()) << r.regression;
  // Side by side without the slowdown, the same routes are kept (or the report says why not).
  o.e2e_slowdown.clear();
  for (const auto& name : specialised_candidates(first.report)) o.e2e_slowdown[name] = 0.1;
  CompileResult kept = compile_model(*m, o);
  EXPECT_EQ(kept.report["fallback_guard"]["status"], "searched routes kept") << kept.report["fallback_guard"].dump();
}

}  // namespace
}  // namespace ac
