// The tuning database's hardening: what --db may point at, a database another process holds
// locked (nothing measured is lost, nothing waits long), rows that are not valid records (skipped,
// never trusted), and the timing-noise rule for reusing a stored reference profile.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <chrono>
#include <cmath>
#include <set>
#include <thread>

#include "agentcompile/compiler/timing_noise.h"
#include "agentcompile/compiler/tuning_db.h"
#include "agentcompile/core/error.h"
#include "agentcompile/tokenizer/utf8.h"
#include "agentcompile/tuning/backend.h"
#include "compiler/db_records.h"
#include "unit/model_test_util.h"

namespace ac {
namespace {

using test::expect_bad_input;
using test::TempDir;
using test::write_bytes;

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

TuningRecord record(const std::string& name, double us) {
  TuningRecord r;
  r.signature = "sig";
  r.bucket = "decode:b1:c256";
  r.backend = "cpu";
  r.family = "cpu:linear.blocked";
  r.params = {{"ROWS", 2}};
  r.name = name;
  r.stage = "timing";
  r.status = "ok";
  r.median_us = us;
  r.samples_us = {us, us};
  r.model = "m";
  return r;
}

// A second connection to the file, as another process would hold it (SQLite's locks work
// between connections of one process as between processes).
class OtherConnection {
 public:
  explicit OtherConnection(const fs::path& p) { EXPECT_EQ(sqlite3_open(p.c_str(), &db_), SQLITE_OK); }
  ~OtherConnection() { sqlite3_close(db_); }
  void exec(const std::string& sql) {
    char* err = nullptr;
    ASSERT_EQ(sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "") << " in " << sql;
  }
  sqlite3* raw() { return db_; }

 private:
  sqlite3* db_ = nullptr;
};

TEST(TuningDbPath, RefusesWhatIsNotARegularFile) {
  TempDir tmp;
  // A link to a device: SQLite used to open it and create /dev/zero-journal.
  fs::create_symlink("/dev/zero", tmp / "zero.db");
  expect_bad_input([&] { TuningDb db(tmp / "zero.db"); }, {"--db", "zero.db", "a character device", "/dev/zero"});
  EXPECT_FALSE(fs::exists("/dev/zero-journal"));
  EXPECT_FALSE(fs::exists("/dev/zero-wal"));
  ASSERT_EQ(::mkfifo((tmp / "fifo.db").c_str(), 0600), 0);
  expect_bad_input([&] { TuningDb db(tmp / "fifo.db"); }, {"a FIFO", "not a database file"});
  expect_bad_input([&] { TuningDb db(tmp.path()); }, {"a directory"});
  fs::create_symlink(tmp / "missing.db", tmp / "dangling.db");
  expect_bad_input([&] { TuningDb db(tmp / "dangling.db"); }, {"symbolic link to nothing"});
  EXPECT_FALSE(fs::exists(tmp / "missing.db"));
  expect_bad_input([&] { TuningDb db("/proc/agentcompile-test.db"); }, {"system folder"});
  expect_bad_input([&] { TuningDb db("/dev/agentcompile-test.db"); }, {"system folder"});
  EXPECT_FALSE(fs::exists("/dev/agentcompile-test.db"));
  // A journal sibling SQLite would write into.
  fs::create_symlink("/dev/null", tmp / "j.db-wal");
  expect_bad_input([&] { TuningDb db(tmp / "j.db"); }, {"j.db-wal", "symbolic link", "journal"});
  EXPECT_FALSE(fs::exists(tmp / "j.db"));
  // Another program's SQLite file is not written into.
  {
    OtherConnection other(tmp / "theirs.db");
    other.exec("CREATE TABLE photos(id INTEGER PRIMARY KEY, path TEXT)");
  }
  expect_bad_input([&] { TuningDb db(tmp / "theirs.db"); }, {"not a tuning database", "other tables"});
  {
    OtherConnection other(tmp / "theirs.db");
    sqlite3_stmt* s = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(other.raw(), "SELECT COUNT(*) FROM sqlite_master", -1, &s, nullptr), SQLITE_OK);
    ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
    EXPECT_EQ(sqlite3_column_int(s, 0), 1);  // still only its own table
    sqlite3_finalize(s);
  }
}

TEST(TuningDbPath, ACorruptSchemaIsRefusedOnOneLineOfUtf8) {
  TempDir tmp;
  {
    OtherConnection other(tmp / "bad.db");
    other.exec("CREATE TABLE meta(key TEXT)");
    other.exec("PRAGMA writable_schema=ON");
    // SQLite quotes the file's bytes in its message ("near ..."): here not UTF-8.
    other.exec("UPDATE sqlite_master SET sql='CREATE TABLE meta(key TEXT) KE' || CAST(x'ff' AS TEXT) WHERE name='meta'");
  }
  const std::string msg = expect_bad_input([&] { TuningDb db(tmp / "bad.db"); }, {"not a tuning database", "malformed"});
  EXPECT_TRUE(utf8_valid(msg)) << msg;
}

TEST(TuningDbPath, ALinkToARegularFileOpensItsTarget) {
  TempDir tmp;
  fs::create_directories(tmp / "real");
  const Environment env = current_environment("cpu");
  { TuningDb db(tmp / "real" / "t.db"); }
  fs::create_symlink(tmp / "real" / "t.db", tmp / "link.db");
  {
    TuningDb db(tmp / "link.db");
    EXPECT_EQ(db.path(), tmp / "link.db");
    EXPECT_EQ(db.file(), fs::canonical(tmp / "real" / "t.db"));
    db.put(env, record("a", 5));
    EXPECT_TRUE(db.flush());
  }
  TuningDb direct(tmp / "real" / "t.db");
  EXPECT_TRUE(direct.find(env, "sig", "decode:b1:c256", "a"));
  EXPECT_TRUE(fs::is_symlink(tmp / "link.db"));  // the link is left as it was
  EXPECT_FALSE(fs::exists(tmp / "link.db-wal"));
}

// A database holding the record "old".
fs::path db_with_a_record(const TempDir& tmp, const Environment& env) {
  const fs::path path = tmp / "t.db";
  TuningDb db(path);
  db.put(env, record("old", 7));
  return path;
}

TEST(TuningDbLock, WritesAreKeptWhileAnotherProcessWritesAndStoredAfter) {
  TempDir tmp;
  const Environment env = current_environment("cpu");
  const fs::path path = db_with_a_record(tmp, env);
  OtherConnection other(path);
  other.exec("BEGIN EXCLUSIVE");  // WAL: writers wait, readers go on
  TuningDb db(path, 1.0);
  EXPECT_TRUE(db.find(env, "sig", "decode:b1:c256", "old"));
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 10; ++i) {
    EXPECT_TRUE(db.find(env, "sig", "decode:b1:c256", "old"));  // reads go on (a search reads between writes)
    db.put(env, record("new" + std::to_string(i), 3 + i));
  }
  // The first write waited its second in vain; the others were kept at once, not a second each
  // (a read getting through does not bring the wait back: the write lock is still held).
  EXPECT_LT(seconds_since(t0), 6.0);
  EXPECT_EQ(db.health().pending, 10u);
  EXPECT_EQ(db.health().reads_failed, 0u);
  EXPECT_NE(db.health().reason.find("locked"), std::string::npos) << db.health().reason;
  EXPECT_FALSE(db.find(env, "sig", "decode:b1:c256", "new0"));
  other.exec("COMMIT");
  EXPECT_TRUE(db.flush());
  EXPECT_EQ(db.health().not_stored(), 0u);
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(db.find(env, "sig", "decode:b1:c256", "new" + std::to_string(i))) << i;
}

TEST(TuningDbLock, ADatabaseLockedFromTheStartIsMeasuredAroundNotFailed) {
  TempDir tmp;
  const Environment env = current_environment("cpu");
  const fs::path path = db_with_a_record(tmp, env);
  auto other = std::make_unique<OtherConnection>(path);
  other->exec("PRAGMA locking_mode=EXCLUSIVE");  // readers wait too
  other->exec("BEGIN EXCLUSIVE");
  other->exec("INSERT INTO meta(key, value) VALUES('held', 'yes')");
  const auto t0 = std::chrono::steady_clock::now();
  TuningDb db(path, 0.3);  // no error: the compile goes on without it
  EXPECT_FALSE(db.find(env, "sig", "decode:b1:c256", "old"));  // not readable now: measure instead
  EXPECT_FALSE(db.count(env));
  EXPECT_FALSE(db.best_plan(env, "h", "latency"));
  db.put(env, record("new", 3));
  EXPECT_GE(db.health().reads_failed, 3u);
  EXPECT_EQ(db.health().pending, 1u);
  EXPECT_FALSE(db.flush());  // still locked: gives up after its wait, with backoff
  EXPECT_LT(seconds_since(t0), 5.0);
  EXPECT_EQ(db.health().not_stored(), 1u);
  other->exec("ROLLBACK");
  other.reset();
  EXPECT_TRUE(db.flush());
  EXPECT_TRUE(db.find(env, "sig", "decode:b1:c256", "new"));
  EXPECT_TRUE(db.find(env, "sig", "decode:b1:c256", "old"));
}

TEST(TuningDbLock, FlushRetriesUntilTheLockIsReleased) {
  TempDir tmp;
  const fs::path path = tmp / "t.db";
  const Environment env = current_environment("cpu");
  { TuningDb db(path); }
  OtherConnection other(path);
  other.exec("BEGIN EXCLUSIVE");
  TuningDb db(path, 3.0);
  db.put(env, record("a", 4));  // waits its 3 s in vain, kept
  ASSERT_EQ(db.health().pending, 1u);
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    other.exec("COMMIT");
  });
  const bool stored = db.flush();
  release.join();
  EXPECT_TRUE(stored) << db.health().reason;
  EXPECT_TRUE(db.find(env, "sig", "decode:b1:c256", "a"));
}

TEST(TuningDbRows, RowsThatAreNotRecordsAreSkipped) {
  TempDir tmp;
  const fs::path path = tmp / "t.db";
  const Environment env = current_environment("cpu");
  {
    TuningDb db(path);
    db.put(env, record("good", 5));
    db.put_plan(env, PlanRecord{"h", "m", "latency", 100, "{}", ""});
  }
  OtherConnection other(path);
  const std::string k = "'" + env.key() + "'";
  const std::string head =
      "INSERT INTO candidates(env_key, signature, bucket, backend, family, params, name, stage, status, reason, "
      "median_us, rel_err, model, created, retimed_us) VALUES(" + k + ", 'sig', 'decode:b1:c256', ";
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"negative", "'cpu', 'cpu:linear.blocked', '{}', 'negative', 'timing', 'ok', '', -5, 0, 'm', 'now', 0"},
      {"infinite", "'cpu', 'cpu:linear.blocked', '{}', 'infinite', 'timing', 'ok', '', 9e999, 0, 'm', 'now', 0"},
      {"text_time", "'cpu', 'cpu:linear.blocked', '{}', 'text_time', 'timing', 'ok', '', 'fast', 0, 'm', 'now', 0"},
      {"blob_name", "'cpu', 'cpu:linear.blocked', '{}', x'00ff', 'timing', 'ok', '', 5, 0, 'm', 'now', 0"},
      {"params", "'cpu', 'cpu:linear.blocked', '{\"ROWS\": \"two\"}', 'params', 'timing', 'ok', '', 5, 0, 'm', 'now', 0"},
      {"status", "'cpu', 'cpu:linear.blocked', '{}', 'status', 'timing', 'maybe', '', 5, 0, 'm', 'now', 0"},
      {"stage", "'cpu', 'cpu:linear.blocked', '{}', 'stage', 'guess', 'failed', '', 0, 0, 'm', 'now', 0"},
      {"backend", "'cpu', 'cuda:gemv', '{}', 'backend', 'timing', 'ok', '', 5, 0, 'm', 'now', 0"},
      {"utf8", "'cpu', 'cpu:linear.blocked', '{}', 'utf8', 'timing', 'failed', CAST(x'c328' AS TEXT), 0, 0, 'm', 'now', 0"},
      {"retimed", "'cpu', 'cpu:linear.blocked', '{}', 'retimed', 'timing', 'ok', '', 5, 0, 'm', 'now', -1"},
      {"no_samples", "'cpu', 'cpu:linear.blocked', '{}', 'no_samples', 'timing', 'ok', '', 5, 0, 'm', 'now', 0"},
  };
  for (const auto& [name, row] : bad) other.exec(head + row + ")");
  // Samples of the otherwise good rows (but "no_samples"): positive, one of them negative for "negative".
  other.exec("INSERT INTO samples(candidate_id, seq, us) SELECT id, 0, 5 FROM candidates WHERE name NOT IN ('good', 'no_samples')");
  other.exec("INSERT INTO candidates(env_key, signature, bucket, backend, family, params, name, stage, status, reason, "
             "median_us, rel_err, model, created) VALUES(" + k + ", 'sig', 'decode:b1:c256', 'cpu', 'cpu:linear.blocked', "
             "'{}', 'bad_sample', 'timing', 'ok', '', 5, 0, 'm', 'now')");
  other.exec("INSERT INTO samples(candidate_id, seq, us) SELECT id, 0, -1 FROM candidates WHERE name='bad_sample'");
  // Plans: a cheaper row that is not a plan, another with a NaN-like cost stored as text.
  other.exec("INSERT INTO plans(env_key, model_hash, model_name, objective, e2e_us, plan, created) VALUES(" + k +
             ", 'h', 'm', 'latency', 1, 'not json', 'now')");
  other.exec("INSERT INTO plans(env_key, model_hash, model_name, objective, e2e_us, plan, created) VALUES(" + k +
             ", 'h', 'm', 'latency', 'cheap', '{}', 'now')");
  other.exec("INSERT INTO reference_runs(env_key, run_key, json, created) VALUES(" + k + ", 'blob', '{}', x'ff')");
  other.exec("INSERT INTO reference_runs(env_key, run_key, json, created) VALUES(" + k + ", 'fine', '{}', 'now')");

  TuningDb db(path);
  EXPECT_TRUE(db.find(env, "sig", "decode:b1:c256", "good"));
  for (const auto& [name, row] : bad) EXPECT_FALSE(db.find(env, "sig", "decode:b1:c256", name)) << name;
  EXPECT_FALSE(db.find(env, "sig", "decode:b1:c256", "bad_sample"));
  const auto all = db.for_signature(env, "sig", "cpu");
  std::set<std::string> listed;
  for (const auto& r : all) listed.insert(r.name);
  // The listing (the advisor's history) carries no samples: the rows bad only there are in it.
  EXPECT_EQ(listed, (std::set<std::string>{"good", "no_samples", "bad_sample"}));
  for (const auto& r : all) {
    EXPECT_GT(r.median_us, 0);
    EXPECT_TRUE(std::isfinite(r.median_us));
  }
  EXPECT_GT(db.health().rows_skipped, bad.size());
  // The plan that reads back, not the cheaper rows that do not: no plan at all ("{}" is not a
  // plan of model "h"), and no exception.
  EXPECT_FALSE(db.best_plan(env, "h", "latency"));
  EXPECT_FALSE(db.reference_run(env, "blob"));
  EXPECT_TRUE(db.reference_run(env, "fine"));
  // A bad row under a key is replaced by a measurement, as any record is.
  db.put(env, record("negative", 6));
  EXPECT_TRUE(db.flush());
  auto got = db.find(env, "sig", "decode:b1:c256", "negative");
  ASSERT_TRUE(got);
  EXPECT_DOUBLE_EQ(got->median_us, 6);
}

TEST(TuningDbRows, ANanTimingIsStoredAndReadBackAsNotATiming) {
  TempDir tmp;
  const Environment env = current_environment("cpu");
  TuningDb db(tmp / "t.db");
  TuningRecord r = record("nan", 0);
  r.status = "failed";
  r.stage = "correctness";
  r.rel_err = std::nan("");  // outputs that were not numbers: used to break the NOT NULL column
  r.samples_us.clear();
  db.put(env, r);
  EXPECT_TRUE(db.flush()) << db.health().reason;
  auto got = db.find(env, "sig", "decode:b1:c256", "nan");
  ASSERT_TRUE(got);
  EXPECT_EQ(got->status, "failed");
  EXPECT_TRUE(std::isinf(got->rel_err));
}

TEST(ReferenceRecord, ReadsBackOnlyWhole) {
  ReferenceRun r;
  r.top2 = {{1, 2, 0.5f}, {3, 4, 0.25f}};
  r.profile = ReferenceProfile{1.5, 0.25, 0, 33.5, 0.1, TimingNoise{100, 0.02}};
  const std::string text = r.to_json().dump();
  auto back = ReferenceRun::from_json(text, 2, 10);
  ASSERT_TRUE(back);
  ASSERT_TRUE(back->profile && back->profile->noise);
  EXPECT_DOUBLE_EQ(back->profile->cost_us, 33.5);
  EXPECT_DOUBLE_EQ(back->profile->noise->noise, 0.02);
  EXPECT_FALSE(ReferenceRun::from_json(text, 3, 10));  // other settings
  EXPECT_FALSE(ReferenceRun::from_json(text, 2, 4));   // a token outside the vocabulary
  EXPECT_FALSE(ReferenceRun::from_json("[1]", 2, 10));
  Json j = Json::parse(text);
  j["cost_us"] = -1;  // the tokens stay usable, the profile does not
  back = ReferenceRun::from_json(j.dump(), 2, 10);
  ASSERT_TRUE(back);
  EXPECT_FALSE(back->profile);
  j = Json::parse(text);
  j.erase("timing_noise");  // a record of before the noise estimates
  back = ReferenceRun::from_json(j.dump(), 2, 10);
  ASSERT_TRUE(back && back->profile);
  EXPECT_FALSE(back->profile->noise);
  EXPECT_TRUE(step_alternative_from_json(R"({"status": "kept", "variant": "v", "timings": 3, "chain_ms": 1, "fused_ms": 0.9, "attn_o": 1})", "fused_ms"));
  EXPECT_FALSE(step_alternative_from_json(R"({"status": "kept", "variant": "v", "timings": 3, "chain_ms": 1})", "fused_ms"));
  EXPECT_FALSE(step_alternative_from_json(R"({"status": 1})", "fused_ms"));
  EXPECT_FALSE(step_alternative_from_json(R"({"status": "kept", "smem_carveout": "40"})", "carveout_ms"));
}

TEST(TimingNoise, CompatibleOnlyUnderTheSameConditions) {
  const TimingNoise quiet{100, 0.02};
  EXPECT_EQ(noise_mismatch(quiet, quiet), "");
  EXPECT_EQ(noise_mismatch(quiet, TimingNoise{106, 0.01}), "");  // quiet both times, 6% apart
  EXPECT_EQ(noise_mismatch(TimingNoise{100, 0.08}, TimingNoise{112, 0.06}), "");
  // Measured under load: 1.69x slower and noisy then.
  const std::string loaded = noise_mismatch(TimingNoise{169, 0.30}, quiet);
  EXPECT_NE(loaded.find("noise differs"), std::string::npos) << loaded;
  // Steadily loaded (slower, not noisier): the probe's speed tells.
  const std::string slower = noise_mismatch(TimingNoise{169, 0.02}, quiet);
  EXPECT_NE(slower.find("1.69x slower then"), std::string::npos) << slower;
  EXPECT_NE(noise_mismatch(quiet, TimingNoise{169, 0.02}).find("faster then"), std::string::npos);
  EXPECT_FALSE(TimingNoise::from_json(Json{{"probe_us", -1}, {"noise", 0}}));
  EXPECT_FALSE(TimingNoise::from_json(Json{{"probe_us", 1}}));
  const TimingNoise now = measure_timing_noise();
  EXPECT_GT(now.probe_us, 0);
  EXPECT_GE(now.noise, 0);
  const TimingNoise w = quiet.worst(TimingNoise{90, 0.5});
  EXPECT_DOUBLE_EQ(w.probe_us, 100);
  EXPECT_DOUBLE_EQ(w.noise, 0.5);
}


// A verdict "slower" (a regression, or routes blocked for the fallbacks) needs every interleaved
// round: one slow round on a loaded machine made a compile fail its regression check.
TEST(TimingNoise, SlowerOnlyWhenEveryRoundSaysSo) {
  EXPECT_FALSE(slower_in_every_round({120, 125, 100}, {100, 100, 100}, 0.10));  // median 1.2x, one round even
  EXPECT_FALSE(slower_in_every_round({300, 100, 100}, {100, 100, 100}, 0.10));  // one outlier round
  EXPECT_TRUE(slower_in_every_round({120, 125, 115}, {100, 100, 100}, 0.10));
  EXPECT_TRUE(slower_in_every_round({130, 112, 150}, {110, 100, 120}, 0.10));
  EXPECT_FALSE(slower_in_every_round({105, 105, 105}, {100, 100, 100}, 0.10));  // within the margin
  EXPECT_FALSE(slower_in_every_round({}, {}, 0.10));
  EXPECT_FALSE(slower_in_every_round({120, 120}, {100}, 0.10));
  EXPECT_DOUBLE_EQ(min_round_ratio({120, 110}, {100, 100}), 1.1);
}

}  // namespace
}  // namespace ac
