// The tuning database on SQLite (schema in docs/compiler.md).
#include "agentcompile/compiler/tuning_db.h"

#include <sqlite3.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <thread>

#include "agentcompile/core/error.h"
#include "agentcompile/core/text.h"
#include "agentcompile/tokenizer/utf8.h"

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


// A SQLite failure: its result code and message. The public methods decide what it means: a
// lock (the write is kept for later), anything else (a read returns nothing, a write is dropped).
bool locked_code(int code) { return (code & 0xff) == SQLITE_BUSY || (code & 0xff) == SQLITE_LOCKED; }
struct SqlFailure {
  int code;
  std::string why;
  bool locked() const { return locked_code(code); }
};

// SQLite's message, fit for a one-line error: a corrupt file's bytes it quotes ("near ...") may be
// neither UTF-8 nor on one line.
std::string message(const char* m) {
  std::string s = utf8_sanitize(m ? m : "unknown error");
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  return s;
}

[[noreturn]] void sql_fail(sqlite3* db, int rc) { throw SqlFailure{rc, message(db ? sqlite3_errmsg(db) : sqlite3_errstr(rc))}; }

// A prepared statement, finalised on scope exit.
class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& sql) : db_(db) {
    if (const int rc = sqlite3_prepare_v2(db, sql.c_str(), -1, &s_, nullptr); rc != SQLITE_OK) sql_fail(db, rc);
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  Stmt& bind(int i, const std::string& v) {
    sqlite3_bind_text(s_, i, v.c_str(), int(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  // SQLite stores NaN as NULL, which the NOT NULL columns refuse: a NaN (a rel_err of outputs
  // that were not numbers) is stored as infinity, which reads back as "not a timing".
  Stmt& bind(int i, double v) {
    sqlite3_bind_double(s_, i, std::isnan(v) ? INFINITY : v);
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
    sql_fail(db_, rc);
  }
  void reset() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  // Typed reads: a value of another storage class (a row this code did not write) is nullopt,
  // and so is text that is not UTF-8 (it would go into the reports).
  std::optional<std::string> text(int i) const {
    if (sqlite3_column_type(s_, i) != SQLITE_TEXT) return std::nullopt;
    const unsigned char* t = sqlite3_column_text(s_, i);
    std::string v = t ? std::string(reinterpret_cast<const char*>(t), size_t(sqlite3_column_bytes(s_, i))) : std::string();
    if (!utf8_valid(v)) return std::nullopt;
    return v;
  }
  std::optional<double> real(int i) const {
    const int t = sqlite3_column_type(s_, i);
    if (t != SQLITE_FLOAT && t != SQLITE_INTEGER) return std::nullopt;
    return sqlite3_column_double(s_, i);
  }
  std::optional<int64_t> integer(int i) const {
    if (sqlite3_column_type(s_, i) != SQLITE_INTEGER) return std::nullopt;
    return sqlite3_column_int64(s_, i);
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* s_ = nullptr;
};

void exec(sqlite3* db, const char* sql) {
  char* err = nullptr;
  if (const int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err); rc != SQLITE_OK) {
    std::string why = message(err ? err : sqlite3_errstr(rc));
    sqlite3_free(err);
    throw SqlFailure{sqlite3_extended_errcode(db), why};
  }
}

// Runs `body` in a BEGIN IMMEDIATE transaction, rolled back on failure.
template <class F>
void transaction(sqlite3* db, F body) {
  exec(db, "BEGIN IMMEDIATE;");
  try {
    body();
    exec(db, "COMMIT;");
  } catch (...) {
    sqlite3_exec(db, "ROLLBACK;", nullptr, nullptr, nullptr);
    throw;
  }
}

// The environment's row, which every record refers to.
void put_environment(sqlite3* db, const Environment& env) {
  Stmt e(db, "INSERT OR IGNORE INTO environments(env_key, json, first_seen) VALUES(?, ?, ?)");
  e.bind(1, env.key()).bind(2, env.to_json().dump()).bind(3, utc_now_iso()).step();
}

const char* kSelect =
    "SELECT id, signature, bucket, backend, family, params, name, stage, status, reason, median_us, rel_err, model, "
    "created, retimed_us FROM candidates ";

// Every statement the reads and writes prepare compiles against these (a file with tables of
// these names but other columns is not a tuning database).
const char* kShapes[] = {
    ("SELECT id, signature, bucket, backend, family, params, name, stage, status, reason, median_us, rel_err, model, "
     "created, retimed_us, env_key FROM candidates LIMIT 0"),
    "SELECT candidate_id, seq, us FROM samples LIMIT 0",
    "SELECT env_key, model_hash, model_name, objective, e2e_us, plan, created FROM plans LIMIT 0",
    "SELECT env_key, run_key, json, created FROM reference_runs LIMIT 0",
    "SELECT env_key, run_key, json, created FROM step_tunings LIMIT 0",
    "SELECT env_key, json, first_seen FROM environments LIMIT 0",
    "SELECT key, value FROM meta LIMIT 0"};
constexpr size_t kTables = std::size(kShapes);

bool known_stage(const std::string& s) {
  return s == "constraints" || s == "compile" || s == "correctness" || s == "timing";
}

bool positive_finite(double v) { return std::isfinite(v) && v > 0; }

// The record of a row, or nullopt when the row is not one this code writes: a field of another
// type, text that is not UTF-8, params that are not an object of integers, a status or stage
// outside the vocabulary, a family of another backend, or a time that is not a positive finite
// number where the status says it was timed (a negative or non-finite one anywhere).
std::optional<TuningRecord> record_of(const Stmt& s) {
  const auto sig = s.text(1), bucket = s.text(2), backend = s.text(3), family = s.text(4), params = s.text(5);
  const auto name = s.text(6), stage = s.text(7), status = s.text(8), reason = s.text(9), model = s.text(12),
             created = s.text(13);
  const auto med = s.real(10), err = s.real(11), retimed = s.real(14);
  if (!sig || !bucket || !backend || !family || !params || !name || !stage || !status || !reason || !model || !created ||
      !med || !err || !retimed)
    return std::nullopt;
  ParamPoint point;
  const Json pj = Json::parse(*params, nullptr, false);
  if (!pj.is_object()) return std::nullopt;
  for (const auto& [k, v] : pj.items()) {
    if (!v.is_number_integer() || v.get<int64_t>() < INT32_MIN || v.get<int64_t>() > INT32_MAX) return std::nullopt;
    point[k] = int(v.get<int64_t>());
  }
  if (family->rfind(*backend + ":", 0) != 0 || !known_stage(*stage)) return std::nullopt;
  if (*status != "ok" && *status != "failed") return std::nullopt;
  if (*status == "ok" && (*stage != "timing" || !positive_finite(*med) || !std::isfinite(*err))) return std::nullopt;
  if (!(*med >= 0) || !(*err >= 0) || !(*retimed >= 0) || !std::isfinite(*retimed)) return std::nullopt;
  return TuningRecord{.signature = *sig, .bucket = *bucket, .backend = *backend, .family = *family,
                      .params = std::move(point), .name = *name, .stage = *stage, .status = *status,
                      .reason = *reason, .median_us = *med, .rel_err = *err, .samples_us = {},
                      .retimed_us = *retimed, .model = *model, .created = *created};
}

// The file's schema version ("" for a file without tables), and whether every table is there.
// A file with tables but no meta table is something else's database.
std::pair<std::string, bool> schema_version(sqlite3* db) {
  static const char* names[] = {"meta", "environments", "candidates", "samples", "plans", "reference_runs", "step_tunings"};
  size_t have = 0, any = 0;
  bool meta = false;
  Stmt t(db, "SELECT name FROM sqlite_master WHERE type='table'");
  while (t.step()) {
    ++any;
    const std::string n = t.text(0).value_or("");
    for (const char* want : names) have += n == want;
    meta = meta || n == "meta";
  }
  if (any == 0) return {"", false};
  if (!meta) throw SqlFailure{SQLITE_ERROR, "an SQLite file with other tables than a tuning database's"};
  Stmt get(db, "SELECT value FROM meta WHERE key='schema'");
  return {get.step() ? get.text(0).value_or("?") : "", have == kTables};
}

// In /dev (but /dev/shm, a folder of files in memory), /proc or /sys: folders of devices and
// kernel files, not of files.
bool in_system_folder(const fs::path& p) {
  auto under = [&](const char* dir) {
    const fs::path rel = p.lexically_relative(dir);
    return !rel.empty() && *rel.begin() != "..";
  };
  return (under("/dev") && !under("/dev/shm")) || under("/proc") || under("/sys");
}

std::string kind_of(fs::file_type t) {
  switch (t) {
    case fs::file_type::directory: return "a directory";
    case fs::file_type::character: return "a character device";
    case fs::file_type::block: return "a block device";
    case fs::file_type::fifo: return "a FIFO";
    case fs::file_type::socket: return "a socket";
    case fs::file_type::symlink: return "a symbolic link";
    default: return "not a regular file";
  }
}

// The file SQLite is to open for `path`: symbolic links resolved (a link to a regular file is
// fine: the database and its journal live at the target). Refused: anything that exists and is
// not a regular file once links are followed (a link to /dev/zero made SQLite create
// /dev/zero-journal), a dangling link, a file in /dev, /proc or /sys, and a journal, WAL or
// shared-memory sibling that exists and is not a regular file (SQLite would write into it).
fs::path checked_file(const fs::path& path, const std::string& subject) {
  std::error_code ec;
  if (path.empty()) throw_input("--db", "is empty");
  if (fs::exists(fs::symlink_status(path, ec))) {
    const fs::file_status target = fs::status(path, ec);
    if (!fs::exists(target)) throw_input(subject, "is a symbolic link to nothing; give the database file itself");
    if (target.type() != fs::file_type::regular) {
      std::error_code ec2;
      const fs::path to = fs::canonical(path, ec2);
      throw_input(subject, "is " + kind_of(target.type()) + ", not a database file" +
                               (fs::is_symlink(path, ec2) && !to.empty() ? " (it links to " + to.string() + ")" : ""));
    }
  }
  fs::path file = fs::weakly_canonical(fs::absolute(path, ec), ec);
  if (ec || file.empty()) throw_input(subject, "cannot resolve the path: " + ec.message());
  if (in_system_folder(file)) throw_input(subject, "is in " + file.parent_path().string() + ", a system folder, not a folder of files");
  fs::create_directories(file.parent_path(), ec);
  if (!fs::is_directory(file.parent_path(), ec))
    throw_input(subject, "its folder " + file.parent_path().string() + " does not exist and cannot be created");
  for (const char* suffix : {"-journal", "-wal", "-shm"}) {
    const fs::path sib = file.string() + suffix;
    const fs::file_status st = fs::symlink_status(sib, ec);
    if (fs::exists(st) && st.type() != fs::file_type::regular)
      throw_input(subject, sib.filename().string() + " beside it is " + kind_of(st.type()) +
                               ", where SQLite keeps its journal; remove it or use another --db");
  }
  return file;
}

}  // namespace

fs::path TuningDb::default_path() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "agentcompile" / "tune.db";
  const char* home = std::getenv("HOME");
  return fs::path(home && *home ? home : "/tmp") / ".cache" / "agentcompile" / "tune.db";
}

TuningDb::TuningDb(const fs::path& path, double wait_s) : path_(path) {
  const std::string subject = "--db " + path.string();
  wait_ms_ = int(std::clamp(std::isfinite(wait_s) ? wait_s : 0.0, 0.0, 86400.0) * 1000);
  file_ = checked_file(path, subject);
  // NOFOLLOW: the path is resolved already; a link put there since is refused, not followed.
  const int rc = sqlite3_open_v2(file_.c_str(), &db_,
                                 SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX | SQLITE_OPEN_NOFOLLOW,
                                 nullptr);
  if (rc != SQLITE_OK) {
    std::string why = message(db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc));
    sqlite3_close(db_);
    db_ = nullptr;
    throw_input(subject, why);
  }
  sqlite3_busy_timeout(db_, wait_ms_);  // concurrent compiles wait for each other's writes
  sqlite3_exec(db_, "PRAGMA foreign_keys=ON; PRAGMA synchronous=NORMAL;", nullptr, nullptr, nullptr);
  try {
    init();
  } catch (const SqlFailure& f) {
    if (f.locked()) {  // go on without it: reads return nothing, writes are kept
      note_failure(f.code, f.why);
      return;
    }
    sqlite3_close(db_);
    db_ = nullptr;
    throw_input(subject, "not a tuning database (" + f.why + ")");
  } catch (...) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  }
}

// Creates or migrates only when the file needs it, so a database another process holds for
// writing can still be read.
void TuningDb::init() const {
  const auto found = schema_version(db_);  // (no structured bindings: the lambda below reads them)
  const std::string version = found.first;
  const bool complete = found.second;
  if (version != std::to_string(kSchemaVersion) || !complete) {
    if (!version.empty() && version != "1" && version != std::to_string(kSchemaVersion))
      throw_input("--db " + path_.string(), "tuning database schema " + json_quote(version.substr(0, 40)) +
                                                " is not this engine's (" + std::to_string(kSchemaVersion) +
                                                "); use another --db");
    exec(db_, "PRAGMA journal_mode=WAL;");
    transaction(db_, [&] {
      exec(db_, kSchema);
      if (version == "1") {  // version 1 lacked the noise re-timing
        exec(db_, "ALTER TABLE candidates ADD COLUMN retimed_us REAL NOT NULL DEFAULT 0;"
                  "UPDATE meta SET value='2' WHERE key='schema';");
      } else if (version.empty()) {
        Stmt put(db_, "INSERT OR REPLACE INTO meta(key, value) VALUES('schema', ?)");
        put.bind(1, std::to_string(kSchemaVersion)).step();
      }
    });
  }
  for (const char* sql : kShapes) Stmt(db_, sql).step();
  ready_ = true;
}

TuningDb::~TuningDb() {
  try {
    if (flushed_) drain();
    else flush();  // a compile that failed before its end: what it measured is still worth storing
  } catch (...) {
    // nothing more to do: the compile's report said what was not stored
  }
  if (db_) sqlite3_close(db_);
}

void TuningDb::note_failure(int code, const std::string& why) const {
  health_.reason = locked_code(code) ? "the database is locked by another process (" + why + ")" : why;
  last_locked_ = locked_code(code);
  if (last_locked_ && waiting_) {  // it waited in vain once: the next operations try without waiting
    waiting_ = false;
    sqlite3_busy_timeout(db_, 0);
  }
}

void TuningDb::got_through() const {
  if (waiting_) return;
  waiting_ = true;
  sqlite3_busy_timeout(db_, wait_ms_);
}

bool TuningDb::ready() const {
  if (ready_) return true;
  if (!db_) return false;
  try {
    init();
  } catch (const SqlFailure& f) {
    note_failure(f.code, f.why);
    return false;
  } catch (const Error& e) {  // found to be another schema only now: unusable for this compile
    note_failure(SQLITE_ERROR, e.reason());
    return false;
  }
  return true;
}

template <class T>
T TuningDb::read(T none, const std::function<T()>& f) const {
  if (!ready()) {
    ++health_.reads_failed;
    return none;
  }
  try {
    return f();
  } catch (const SqlFailure& e) {
    note_failure(e.code, e.why);
    ++health_.reads_failed;
    return none;
  }
}

void TuningDb::write(Write w) {
  kept_.push_back(std::move(w));
  drain();
}

bool TuningDb::drain() {
  while (!kept_.empty()) {
    if (!ready()) return false;
    try {
      kept_.front()();
      got_through();
    } catch (const SqlFailure& e) {
      note_failure(e.code, e.why);
      if (e.locked()) return false;
      ++health_.dropped;  // it would fail again; the writes after it may still get through
    }
    kept_.pop_front();
  }
  return true;
}

bool TuningDb::flush() {
  using namespace std::chrono;
  flushed_ = true;
  const auto start = steady_clock::now();
  const auto limit = milliseconds(wait_ms_);
  auto pause = milliseconds(50);
  while (!drain() && last_locked_) {
    const auto waited = steady_clock::now() - start;
    if (waited >= limit) break;
    std::this_thread::sleep_for(std::min<steady_clock::duration>(pause, limit - waited));
    pause = std::min(pause * 2, milliseconds(2000));
  }
  return kept_.empty() && health_.dropped == 0;
}

const TuningDb::Health& TuningDb::health() const {
  health_.pending = kept_.size();
  return health_;
}

std::optional<TuningRecord> TuningDb::find(const Environment& env, const std::string& signature,
                                           const std::string& bucket, const std::string& name) const {
  return read<std::optional<TuningRecord>>(std::nullopt, [&]() -> std::optional<TuningRecord> {
    Stmt s(db_, std::string(kSelect) + "WHERE env_key=? AND signature=? AND bucket=? AND name=?");
    s.bind(1, env.key()).bind(2, signature).bind(3, bucket).bind(4, name);
    if (!s.step()) return std::nullopt;
    std::optional<TuningRecord> r = record_of(s);
    const auto id = s.integer(0);
    if (r && id) {
      Stmt q(db_, "SELECT us FROM samples WHERE candidate_id=? ORDER BY seq");
      q.bind(1, *id);
      while (r && q.step()) {
        const auto us = q.real(0);
        if (us && positive_finite(*us)) r->samples_us.push_back(*us);
        else r.reset();
      }
    }
    if (!r || !id || (r->status == "ok" && r->samples_us.empty())) {
      ++health_.rows_skipped;
      return std::nullopt;
    }
    return r;
  });
}

std::vector<TuningRecord> TuningDb::for_signature(const Environment& env, const std::string& signature,
                                                  const std::string& backend) const {
  return read<std::vector<TuningRecord>>({}, [&] {
    Stmt s(db_, std::string(kSelect) +
                    "WHERE env_key=? AND signature=? AND backend=? ORDER BY status='ok' DESC, median_us ASC, name ASC");
    s.bind(1, env.key()).bind(2, signature).bind(3, backend);
    std::vector<TuningRecord> out;
    while (s.step())
      if (auto r = record_of(s)) out.push_back(std::move(*r));
      else ++health_.rows_skipped;
    return out;
  });
}

void TuningDb::put(const Environment& env, const TuningRecord& r) {
  write([this, env, r] {
    transaction(db_, [&] {
      put_environment(db_, env);
      Stmt d(db_, "DELETE FROM candidates WHERE env_key=? AND signature=? AND bucket=? AND name=?");
      d.bind(1, env.key()).bind(2, r.signature).bind(3, r.bucket).bind(4, r.name).step();
      Stmt ins(db_,
               "INSERT INTO candidates(env_key, signature, bucket, backend, family, params, name, stage, status, reason, "
               "median_us, rel_err, model, created) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
      ins.bind(1, env.key()).bind(2, r.signature).bind(3, r.bucket).bind(4, r.backend).bind(5, r.family);
      ins.bind(6, Json(r.params).dump()).bind(7, r.name).bind(8, r.stage).bind(9, r.status).bind(10, r.reason);
      ins.bind(11, r.median_us).bind(12, r.rel_err).bind(13, r.model);
      ins.bind(14, r.created.empty() ? utc_now_iso() : r.created).step();
      const int64_t id = sqlite3_last_insert_rowid(db_);
      // Samples left under this id by a row deleted without its samples (another tool's write).
      Stmt stale(db_, "DELETE FROM samples WHERE candidate_id=?");
      stale.bind(1, id).step();
      Stmt smp(db_, "INSERT INTO samples(candidate_id, seq, us) VALUES(?, ?, ?)");
      for (size_t i = 0; i < r.samples_us.size(); ++i) {
        smp.reset();
        smp.bind(1, id).bind(2, int64_t(i)).bind(3, r.samples_us[i]).step();
      }
    });
  });
}

void TuningDb::set_retimed(const Environment& env, const std::string& signature, const std::string& bucket,
                           const std::string& name, const std::vector<double>& samples_us, double median_us) {
  write([this, env, signature, bucket, name, samples_us, median_us] {
    transaction(db_, [&] {
      Stmt id(db_, "SELECT id FROM candidates WHERE env_key=? AND signature=? AND bucket=? AND name=?");
      id.bind(1, env.key()).bind(2, signature).bind(3, bucket).bind(4, name);
      const std::optional<int64_t> cid = id.step() ? id.integer(0) : std::nullopt;
      if (!cid) return;
      Stmt u(db_, "UPDATE candidates SET retimed_us=? WHERE id=?");
      u.bind(1, median_us).bind(2, *cid).step();
      Stmt n(db_, "SELECT COALESCE(MAX(seq) + 1, 0) FROM samples WHERE candidate_id=?");
      n.bind(1, *cid);
      int64_t seq = n.step() ? n.integer(0).value_or(0) : 0;
      Stmt smp(db_, "INSERT INTO samples(candidate_id, seq, us) VALUES(?, ?, ?)");
      for (double us : samples_us) {
        smp.reset();
        smp.bind(1, *cid).bind(2, seq++).bind(3, us).step();
      }
    });
  });
}

void TuningDb::put_plan(const Environment& env, const PlanRecord& p) {
  write([this, env, p] {
    transaction(db_, [&] {
      put_environment(db_, env);
      Stmt s(db_, "INSERT INTO plans(env_key, model_hash, model_name, objective, e2e_us, plan, created) VALUES(?,?,?,?,?,?,?)");
      s.bind(1, env.key()).bind(2, p.model_hash).bind(3, p.model_name).bind(4, p.objective).bind(5, p.e2e_us);
      s.bind(6, p.plan_json).bind(7, p.created.empty() ? utc_now_iso() : p.created).step();
    });
  });
}

std::optional<PlanRecord> TuningDb::best_plan(const Environment& env, const std::string& model_hash,
                                              const std::string& objective) const {
  return read<std::optional<PlanRecord>>(std::nullopt, [&]() -> std::optional<PlanRecord> {
    Stmt s(db_,
           "SELECT model_hash, model_name, objective, e2e_us, plan, created FROM plans WHERE env_key=? AND model_hash=? "
           "AND objective=? ORDER BY e2e_us ASC");
    s.bind(1, env.key()).bind(2, model_hash).bind(3, objective);
    while (s.step()) {
      const auto hash = s.text(0), name = s.text(1), obj = s.text(2), plan = s.text(4), created = s.text(5);
      const auto us = s.real(3);
      if (hash && name && obj && plan && created && us && positive_finite(*us)) try {
          const Plan p = Plan::from_json(Json::parse(*plan), "tuning db plan");
          if (p.model_hash == model_hash && p.objective == objective)
            return PlanRecord{*hash, *name, *obj, *us, *plan, *created};
        } catch (const std::exception&) {
          // not a plan: skipped, as any row that is not a record
        }
      ++health_.rows_skipped;
    }
    return std::nullopt;
  });
}

std::optional<std::pair<std::string, std::string>> TuningDb::run_record(const char* table, const Environment& env,
                                                                       const std::string& key) const {
  using Rec = std::optional<std::pair<std::string, std::string>>;
  return read<Rec>(std::nullopt, [&]() -> Rec {
    Stmt s(db_, std::string("SELECT json, created FROM ") + table + " WHERE env_key=? AND run_key=?");
    s.bind(1, env.key()).bind(2, key);
    if (!s.step()) return std::nullopt;
    const auto json = s.text(0), created = s.text(1);
    // "created" goes into the report ("tuning DB, measured <created>"): short text.
    if (!json || !created || created->empty() || created->size() > 64) {
      ++health_.rows_skipped;
      return std::nullopt;
    }
    return std::make_pair(*json, *created);
  });
}

void TuningDb::put_run_record(const char* table, const Environment& env, const std::string& key, const std::string& json) {
  write([this, table, env, key, json] {
    transaction(db_, [&] {
      put_environment(db_, env);
      Stmt s(db_, std::string("INSERT OR REPLACE INTO ") + table + "(env_key, run_key, json, created) VALUES(?,?,?,?)");
      s.bind(1, env.key()).bind(2, key).bind(3, json).bind(4, utc_now_iso()).step();
    });
  });
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

std::optional<int64_t> TuningDb::count(const Environment& env) const {
  return read<std::optional<int64_t>>(std::nullopt, [&]() -> std::optional<int64_t> {
    Stmt s(db_, "SELECT COUNT(*) FROM candidates WHERE env_key=?");
    s.bind(1, env.key());
    return s.step() ? s.integer(0) : std::optional<int64_t>(0);
  });
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
