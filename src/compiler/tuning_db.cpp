// The tuning database on SQLite (schema in docs/compiler.md).
#include "agentcompile/compiler/tuning_db.h"

#include <sqlite3.h>

#include <cstdlib>
#include <ctime>

#include "agentcompile/core/error.h"
#include "agentcompile/core/text.h"

namespace ac {

namespace {

constexpr int kSchemaVersion = 2;  // 2: candidates.retimed_us

const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS environments(env_key TEXT PRIMARY KEY, json TEXT NOT NULL, first_seen TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS candidates(
  id INTEGER PRIMARY KEY,
  env_key TEXT NOT NULL REFERENCES environments(env_key),
  signature TEXT NOT NULL, bucket TEXT NOT NULL, backend TEXT NOT NULL,
  family TEXT NOT NULL, params TEXT NOT NULL, name TEXT NOT NULL,
  stage TEXT NOT NULL, status TEXT NOT NULL, reason TEXT NOT NULL,
  median_us REAL NOT NULL, rel_err REAL NOT NULL, model TEXT NOT NULL, created TEXT NOT NULL,
  retimed_us REAL NOT NULL DEFAULT 0,
  UNIQUE(env_key, signature, bucket, name));
CREATE TABLE IF NOT EXISTS samples(
  candidate_id INTEGER NOT NULL REFERENCES candidates(id) ON DELETE CASCADE,
  seq INTEGER NOT NULL, us REAL NOT NULL, PRIMARY KEY(candidate_id, seq));
CREATE TABLE IF NOT EXISTS plans(
  id INTEGER PRIMARY KEY, env_key TEXT NOT NULL REFERENCES environments(env_key),
  model_hash TEXT NOT NULL, model_name TEXT NOT NULL, objective TEXT NOT NULL,
  e2e_us REAL NOT NULL, plan TEXT NOT NULL, created TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS reference_runs(
  env_key TEXT NOT NULL REFERENCES environments(env_key), run_key TEXT NOT NULL,
  json TEXT NOT NULL, created TEXT NOT NULL, PRIMARY KEY(env_key, run_key));
CREATE TABLE IF NOT EXISTS step_tunings(
  env_key TEXT NOT NULL REFERENCES environments(env_key), run_key TEXT NOT NULL,
  json TEXT NOT NULL, created TEXT NOT NULL, PRIMARY KEY(env_key, run_key));
CREATE INDEX IF NOT EXISTS candidates_by_sig ON candidates(env_key, signature);
CREATE INDEX IF NOT EXISTS plans_by_model ON plans(env_key, model_hash, objective);
)sql";


// A prepared statement, finalised on scope exit; errors name the database file.
class Stmt {
 public:
  Stmt(sqlite3* db, const fs::path& path, const char* sql) : db_(db), path_(path) {
    if (sqlite3_prepare_v2(db, sql, -1, &s_, nullptr) != SQLITE_OK) fail("prepare");
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt& bind(int i, const std::string& v) {
    sqlite3_bind_text(s_, i, v.c_str(), int(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& bind(int i, double v) {
    sqlite3_bind_double(s_, i, v);
    return *this;
  }
  Stmt& bind(int i, int64_t v) {
    sqlite3_bind_int64(s_, i, v);
    return *this;
  }
  bool step() {
    const int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail("step");
  }
  void reset() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  std::string text(int i) const {
    const unsigned char* t = sqlite3_column_text(s_, i);
    return t ? std::string(reinterpret_cast<const char*>(t), size_t(sqlite3_column_bytes(s_, i))) : std::string();
  }
  double real(int i) const { return sqlite3_column_double(s_, i); }
  int64_t integer(int i) const { return sqlite3_column_int64(s_, i); }

 private:
  [[noreturn]] void fail(const char* what) {
    throw_internal("tuning db " + path_.string(), std::string(what) + ": " + sqlite3_errmsg(db_));
  }
  sqlite3* db_;
  const fs::path& path_;
  sqlite3_stmt* s_ = nullptr;
};

ParamPoint params_from_text(const std::string& s) {
  ParamPoint p;
  const Json j = Json::parse(s, nullptr, false);
  if (j.is_object())
    for (const auto& [k, v] : j.items())
      if (v.is_number_integer()) p[k] = v.get<int>();
  return p;
}

const char* kSelect =
    "SELECT id, signature, bucket, backend, family, params, name, stage, status, reason, median_us, rel_err, model, "
    "created, retimed_us FROM candidates ";

TuningRecord record_of(const Stmt& s) {
  TuningRecord r;
  r.signature = s.text(1);
  r.bucket = s.text(2);
  r.backend = s.text(3);
  r.family = s.text(4);
  r.params = params_from_text(s.text(5));
  r.name = s.text(6);
  r.stage = s.text(7);
  r.status = s.text(8);
  r.reason = s.text(9);
  r.median_us = s.real(10);
  r.rel_err = s.real(11);
  r.model = s.text(12);
  r.created = s.text(13);
  r.retimed_us = s.real(14);
  return r;
}

}  // namespace

fs::path TuningDb::default_path() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "agentcompile" / "tune.db";
  const char* home = std::getenv("HOME");
  return fs::path(home && *home ? home : "/tmp") / ".cache" / "agentcompile" / "tune.db";
}

TuningDb::TuningDb(const fs::path& path) : path_(path) {
  const std::string subject = "--db " + path.string();
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  if (fs::is_directory(path, ec)) throw_input(subject, "is a directory, not a database file");
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr) !=
      SQLITE_OK) {
    std::string why = db_ ? sqlite3_errmsg(db_) : "cannot open";
    sqlite3_close(db_);
    db_ = nullptr;
    throw_input(subject, why);
  }
  sqlite3_busy_timeout(db_, 15000);  // concurrent compiles wait for each other's writes
  try {
    exec("PRAGMA journal_mode=WAL; PRAGMA foreign_keys=ON; PRAGMA synchronous=NORMAL;");
    exec("BEGIN IMMEDIATE;");
    exec(kSchema);
    Stmt get(db_, path_, "SELECT value FROM meta WHERE key='schema'");
    if (get.step()) {
      if (get.text(0) == "1") {  // version 1 lacked the noise re-timing
        exec("ALTER TABLE candidates ADD COLUMN retimed_us REAL NOT NULL DEFAULT 0;"
             "UPDATE meta SET value='2' WHERE key='schema';");
      } else if (get.text(0) != std::to_string(kSchemaVersion))
        throw_input(subject, "tuning database schema " + get.text(0) + " is not this engine's (" +
                                 std::to_string(kSchemaVersion) + "); use another --db");
    } else {
      Stmt put(db_, path_, "INSERT INTO meta(key, value) VALUES('schema', ?)");
      put.bind(1, std::to_string(kSchemaVersion)).step();
    }
    exec("COMMIT;");
  } catch (const Error& e) {
    sqlite3_exec(db_, "ROLLBACK;", nullptr, nullptr, nullptr);
    sqlite3_close(db_);
    db_ = nullptr;
    // "file is not a database" and the like are bad input, not internal failures.
    if (e.kind() == ErrorKind::Internal) throw_input(subject, "not a tuning database (" + e.reason() + ")");
    throw;
  }
}

TuningDb::~TuningDb() {
  if (db_) sqlite3_close(db_);
}

void TuningDb::exec(const char* sql) const {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string why = err ? err : "unknown error";
    sqlite3_free(err);
    throw_internal("tuning db " + path_.string(), why);
  }
}

std::optional<TuningRecord> TuningDb::find(const Environment& env, const std::string& signature,
                                           const std::string& bucket, const std::string& name) const {
  Stmt s(db_, path_, (std::string(kSelect) + "WHERE env_key=? AND signature=? AND bucket=? AND name=?").c_str());
  s.bind(1, env.key()).bind(2, signature).bind(3, bucket).bind(4, name);
  if (!s.step()) return std::nullopt;
  TuningRecord r = record_of(s);
  Stmt q(db_, path_, "SELECT us FROM samples WHERE candidate_id=? ORDER BY seq");
  q.bind(1, s.integer(0));
  while (q.step()) r.samples_us.push_back(q.real(0));
  return r;
}

std::vector<TuningRecord> TuningDb::for_signature(const Environment& env, const std::string& signature,
                                                  const std::string& backend) const {
  Stmt s(db_, path_,
         (std::string(kSelect) +
          "WHERE env_key=? AND signature=? AND backend=? ORDER BY status='ok' DESC, median_us ASC, name ASC")
             .c_str());
  s.bind(1, env.key()).bind(2, signature).bind(3, backend);
  std::vector<TuningRecord> out;
  while (s.step()) out.push_back(record_of(s));
  return out;
}

void TuningDb::put(const Environment& env, const TuningRecord& r) {
  exec("BEGIN IMMEDIATE;");
  try {
    Stmt e(db_, path_, "INSERT OR IGNORE INTO environments(env_key, json, first_seen) VALUES(?, ?, ?)");
    e.bind(1, env.key()).bind(2, env.to_json().dump()).bind(3, utc_now_iso()).step();
    Stmt d(db_, path_, "DELETE FROM candidates WHERE env_key=? AND signature=? AND bucket=? AND name=?");
    d.bind(1, env.key()).bind(2, r.signature).bind(3, r.bucket).bind(4, r.name).step();
    Stmt ins(db_, path_,
             "INSERT INTO candidates(env_key, signature, bucket, backend, family, params, name, stage, status, reason, "
             "median_us, rel_err, model, created) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    ins.bind(1, env.key()).bind(2, r.signature).bind(3, r.bucket).bind(4, r.backend).bind(5, r.family);
    ins.bind(6, Json(r.params).dump()).bind(7, r.name).bind(8, r.stage).bind(9, r.status).bind(10, r.reason);
    ins.bind(11, r.median_us).bind(12, r.rel_err).bind(13, r.model).bind(14, r.created.empty() ? utc_now_iso() : r.created);
    ins.step();
    const int64_t id = sqlite3_last_insert_rowid(db_);
    Stmt smp(db_, path_, "INSERT INTO samples(candidate_id, seq, us) VALUES(?, ?, ?)");
    for (size_t i = 0; i < r.samples_us.size(); ++i) {
      smp.reset();
      smp.bind(1, id).bind(2, int64_t(i)).bind(3, r.samples_us[i]).step();
    }
    exec("COMMIT;");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK;", nullptr, nullptr, nullptr);
    throw;
  }
}

void TuningDb::set_retimed(const Environment& env, const std::string& signature, const std::string& bucket,
                           const std::string& name, const std::vector<double>& samples_us, double median_us) {
  exec("BEGIN IMMEDIATE;");
  try {
    Stmt id(db_, path_, "SELECT id FROM candidates WHERE env_key=? AND signature=? AND bucket=? AND name=?");
    id.bind(1, env.key()).bind(2, signature).bind(3, bucket).bind(4, name);
    if (id.step()) {
      const int64_t cid = id.integer(0);
      Stmt u(db_, path_, "UPDATE candidates SET retimed_us=? WHERE id=?");
      u.bind(1, median_us).bind(2, cid).step();
      Stmt n(db_, path_, "SELECT COALESCE(MAX(seq) + 1, 0) FROM samples WHERE candidate_id=?");
      n.bind(1, cid);
      int64_t seq = n.step() ? n.integer(0) : 0;
      Stmt smp(db_, path_, "INSERT INTO samples(candidate_id, seq, us) VALUES(?, ?, ?)");
      for (double us : samples_us) {
        smp.reset();
        smp.bind(1, cid).bind(2, seq++).bind(3, us).step();
      }
    }
    exec("COMMIT;");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK;", nullptr, nullptr, nullptr);
    throw;
  }
}

void TuningDb::put_plan(const Environment& env, const PlanRecord& p) {
  exec("BEGIN IMMEDIATE;");
  try {
    Stmt e(db_, path_, "INSERT OR IGNORE INTO environments(env_key, json, first_seen) VALUES(?, ?, ?)");
    e.bind(1, env.key()).bind(2, env.to_json().dump()).bind(3, utc_now_iso()).step();
    Stmt s(db_, path_,
           "INSERT INTO plans(env_key, model_hash, model_name, objective, e2e_us, plan, created) VALUES(?,?,?,?,?,?,?)");
    s.bind(1, env.key()).bind(2, p.model_hash).bind(3, p.model_name).bind(4, p.objective).bind(5, p.e2e_us);
    s.bind(6, p.plan_json).bind(7, p.created.empty() ? utc_now_iso() : p.created).step();
    exec("COMMIT;");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK;", nullptr, nullptr, nullptr);
    throw;
  }
}

std::optional<PlanRecord> TuningDb::best_plan(const Environment& env, const std::string& model_hash,
                                              const std::string& objective) const {
  Stmt s(db_, path_,
         "SELECT model_hash, model_name, objective, e2e_us, plan, created FROM plans WHERE env_key=? AND model_hash=? "
         "AND objective=? ORDER BY e2e_us ASC LIMIT 1");
  s.bind(1, env.key()).bind(2, model_hash).bind(3, objective);
  if (!s.step()) return std::nullopt;
  return PlanRecord{s.text(0), s.text(1), s.text(2), s.real(3), s.text(4), s.text(5)};
}

std::optional<std::pair<std::string, std::string>> TuningDb::run_record(const char* table, const Environment& env,
                                                                       const std::string& key) const {
  const std::string sql = std::string("SELECT json, created FROM ") + table + " WHERE env_key=? AND run_key=?";
  Stmt s(db_, path_, sql.c_str());
  s.bind(1, env.key()).bind(2, key);
  if (!s.step()) return std::nullopt;
  return std::make_pair(s.text(0), s.text(1));
}

void TuningDb::put_run_record(const char* table, const Environment& env, const std::string& key, const std::string& json) {
  exec("BEGIN IMMEDIATE;");
  try {
    Stmt e(db_, path_, "INSERT OR IGNORE INTO environments(env_key, json, first_seen) VALUES(?, ?, ?)");
    e.bind(1, env.key()).bind(2, env.to_json().dump()).bind(3, utc_now_iso()).step();
    const std::string sql = std::string("INSERT OR REPLACE INTO ") + table + "(env_key, run_key, json, created) VALUES(?,?,?,?)";
    Stmt s(db_, path_, sql.c_str());
    s.bind(1, env.key()).bind(2, key).bind(3, json).bind(4, utc_now_iso()).step();
    exec("COMMIT;");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK;", nullptr, nullptr, nullptr);
    throw;
  }
}

std::optional<std::pair<std::string, std::string>> TuningDb::reference_run(const Environment& env,
                                                                          const std::string& key) const {
  return run_record("reference_runs", env, key);
}
void TuningDb::put_reference_run(const Environment& env, const std::string& key, const std::string& json) {
  put_run_record("reference_runs", env, key, json);
}
std::optional<std::pair<std::string, std::string>> TuningDb::step_tuning(const Environment& env, const std::string& key) const {
  return run_record("step_tunings", env, key);
}
void TuningDb::put_step_tuning(const Environment& env, const std::string& key, const std::string& json) {
  put_run_record("step_tunings", env, key, json);
}

int64_t TuningDb::count(const Environment& env) const {
  Stmt s(db_, path_, "SELECT COUNT(*) FROM candidates WHERE env_key=?");
  s.bind(1, env.key());
  return s.step() ? s.integer(0) : 0;
}

std::string shape_bucket(bool decode, int64_t batch, int64_t tokens, int64_t context) {
  auto pow2 = [](int64_t v) {
    int64_t p = 1;
    while (p < v) p <<= 1;
    return p;
  };
  if (decode) return "decode:b" + std::to_string(batch) + ":c" + std::to_string(pow2(context));
  return "prefill:t" + std::to_string(pow2(tokens));
}

}  // namespace ac
