// libFuzzer target: the tuning database's rows and files. The first byte picks the mode (mod 3):
//   0: the rest is a database file, opened through the real open path (TuningDb); a refusal
//      must be a one-line BadInput;
//   1: a fresh database in the real schema gets fuzzer-chosen rows (any storage class in any
//      column: NULL, integers, reals, text, blobs, or values that look right: this
//      environment's key, the vocabulary of statuses and stages, JSON records) in any table;
//   2: a real database holding one record of each kind is corrupted in place: the rest is
//      (2-byte offset, byte) patches (short inputs reach every page of the file).
// Then every read the compile makes runs: find, for_signature, best_plan, count, reference_run
// and step_tuning with the JSON records read back as the compile reads them. A row that is not
// a valid record must be skipped, never returned with a negative or non-finite time, text that
// is not UTF-8 or a token outside the vocabulary. A write afterwards must still get through.
#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <sqlite3.h>

#include "agentcompile/compiler/tuning_db.h"
#include "compiler/db_records.h"
#include "fuzz_common.h"

namespace {

using ac::fuzz::require;

const ac::Environment& env() {
  static const ac::Environment e = [] {
    ac::Environment x;
    x.backend = "cpu";
    x.device = "fuzz CPU";
    x.arch = "x86_64";
    x.cores = 2;
    x.engine_version = "0";
    return x;
  }();
  return e;
}

// Values that pass the type checks, so the fuzzer gets past them to the checks behind.
const std::vector<std::string>& words() {
  static const std::vector<std::string> w = {
      env().key(), "sig", "decode:b1:c256", "cpu", "cuda", "cpu:fallback", "cpu:linear.blocked", "{}",
      R"({"ROWS": 4, "THREADS": 1})", "cpu:linear.blocked{ROWS=4,THREADS=1}", "timing", "constraints", "ok", "failed",
      "latency", "h", "ref", "step", "2026-01-01T00:00:00Z",
      R"({"top2": [[1, 2, 0.5], [3, 0, 0.25]], "prefill_ms": 1, "decode_ms": 0.5, "per_token_us": 0, "cost_us": 65, "profile_s": 0.1, "timing_noise": {"probe_us": 100, "noise": 0.02}})",
      R"({"status": "kept", "variant": "v", "timings": 3, "chain_ms": 1.0, "carveout_ms": 0.9, "smem_carveout": 40})",
      R"({"format": "agentcompile-plan", "version": 1})"};
  return w;
}

const char* kTables[] = {"candidates", "samples", "plans", "reference_runs", "step_tunings", "environments", "meta"};
constexpr int kColumns[] = {16, 3, 8, 4, 4, 3, 2};

// Reads the input from the front: bytes, little-endian integers, short strings.
struct Reader {
  const uint8_t* p;
  size_t n;
  bool empty() const { return n == 0; }
  uint8_t byte() {
    if (!n) return 0;
    --n;
    return *p++;
  }
  std::string bytes(size_t k) {
    k = std::min(k, n);
    std::string s(reinterpret_cast<const char*>(p), k);
    p += k;
    n -= k;
    return s;
  }
  int64_t i64() {
    int64_t v = 0;
    const std::string b = bytes(8);
    std::memcpy(&v, b.data(), b.size());
    return v;
  }
};

void bind_value(sqlite3_stmt* s, int i, Reader& in) {
  switch (in.byte() % 7) {
    case 0: sqlite3_bind_null(s, i); break;
    case 1: sqlite3_bind_int64(s, i, int64_t(int8_t(in.byte()))); break;
    case 2: sqlite3_bind_int64(s, i, in.i64()); break;
    case 3: {
      double d;
      int64_t v = in.i64();
      std::memcpy(&d, &v, sizeof d);
      sqlite3_bind_double(s, i, d);  // NaN becomes NULL; infinities and negatives stay
      break;
    }
    case 4: {
      const std::string t = in.bytes(in.byte() % 64);
      sqlite3_bind_text(s, i, t.data(), int(t.size()), SQLITE_TRANSIENT);
      break;
    }
    case 5: {
      const std::string b = in.bytes(in.byte() % 64);
      sqlite3_bind_blob(s, i, b.data(), int(b.size()), SQLITE_TRANSIENT);
      break;
    }
    default: {
      const std::string& w = words()[in.byte() % words().size()];
      sqlite3_bind_text(s, i, w.data(), int(w.size()), SQLITE_TRANSIENT);
    }
  }
}

// Inserts rows while the input lasts: a table, then a value per column (no type or foreign-key
// checks apply to a raw connection's rows beyond the columns' NOT NULL and keys).
void insert_rows(const std::string& path, Reader& in) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    return;
  }
  sqlite3_exec(db, "PRAGMA synchronous=OFF; BEGIN", nullptr, nullptr, nullptr);
  for (int rows = 0; !in.empty() && rows < 64; ++rows) {
    const size_t t = in.byte() % std::size(kTables);
    std::string sql = std::string("INSERT OR REPLACE INTO ") + kTables[t] + " VALUES(";
    for (int c = 0; c < kColumns[t]; ++c) sql += c ? ",?" : "?";
    sql += ")";
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) == SQLITE_OK) {
      for (int c = 1; c <= kColumns[t]; ++c) bind_value(s, c, in);
      sqlite3_step(s);  // a row the constraints refuse is simply not there
    }
    sqlite3_finalize(s);
  }
  sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
  sqlite3_close(db);
}

void check_text(const std::string& s, const char* what) {
  try {
    (void)ac::Json(s).dump();
  } catch (const ac::Json::exception&) {
    ac::fuzz::finding(std::string(what) + " is not valid UTF-8");
  }
}

void check_record(const ac::TuningRecord& r) {
  for (const std::string* s : {&r.signature, &r.bucket, &r.backend, &r.family, &r.name, &r.stage, &r.status, &r.reason,
                               &r.model, &r.created})
    check_text(*s, "a record's text");
  require(r.status == "ok" || r.status == "failed", "status in the vocabulary");
  require(r.median_us >= 0 && r.rel_err >= 0 && r.retimed_us >= 0 && std::isfinite(r.retimed_us), "times not negative");
  if (r.status == "ok") require(std::isfinite(r.median_us) && r.median_us > 0, "an ok record's time is positive");
  for (double us : r.samples_us) require(std::isfinite(us) && us > 0, "samples positive and finite");
  require(r.family.rfind(r.backend + ":", 0) == 0, "family of the record's backend");
}

// Every read the compile makes, on whatever the file holds.
void read_everything(ac::TuningDb& db) {
  const ac::Environment& e = env();
  for (const std::string& name : {std::string("cpu:fallback"), std::string("cpu:linear.blocked{ROWS=4,THREADS=1}"),
                                  std::string("sig")})
    if (auto r = db.find(e, "sig", "decode:b1:c256", name)) {
      check_record(*r);
      require(r->name == name, "find returns the record asked for");
      if (r->status == "ok") require(!r->samples_us.empty(), "an ok record has samples");
    }
  for (const char* backend : {"cpu", "cuda"})
    for (const auto& r : db.for_signature(e, "sig", backend)) check_record(r);
  if (auto p = db.best_plan(e, "h", "latency")) require(std::isfinite(p->e2e_us) && p->e2e_us > 0, "plan cost positive");
  if (auto n = db.count(e)) require(*n >= 0, "count not negative");
  for (const char* key : {"ref", "step", "sig"}) {
    if (auto hit = db.reference_run(e, key)) {
      check_text(hit->second, "created");
      for (int tokens : {0, 2})
        if (auto rr = ac::ReferenceRun::from_json(hit->first, tokens, 4)) {
          require(rr->top2.size() == size_t(tokens), "as many steps as checked");
          for (const auto& t : rr->top2)
            require(t.first >= 0 && t.first < 4 && t.second >= 0 && t.second < 4 && t.margin >= 0, "tokens in range");
          if (rr->profile) require(std::isfinite(rr->profile->cost_us) && rr->profile->cost_us > 0, "profile cost positive");
          if (rr->profile && rr->profile->noise)
            require(rr->profile->noise->probe_us > 0 && rr->profile->noise->noise >= 0, "noise estimate sane");
        }
    }
    if (auto hit = db.step_tuning(e, key)) {
      check_text(hit->second, "created");
      for (const char* ms : {"carveout_ms", "fused_ms", "persistent_ms"})
        if (auto j = ac::step_alternative_from_json(hit->first, ms)) (void)j->dump();
    }
  }
}

std::string temp_db_path() {
  const char* t = std::getenv("TMPDIR");
  return std::string(t && *t ? t : "/tmp") + "/fuzz_tuning_db." + std::to_string(::getpid()) + ".db";
}

void remove_db(const std::string& p) {
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) ::unlink((p + suffix).c_str());
}

void write_file(const std::string& path, const void* data, size_t n) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return;
  std::fwrite(data, 1, n, f);
  std::fclose(f);
}

ac::TuningRecord fallback_record(double us) {
  ac::TuningRecord r;
  r.signature = "sig";
  r.bucket = "decode:b1:c256";
  r.backend = "cpu";
  r.family = "cpu:fallback";
  r.name = "cpu:fallback";
  r.stage = "timing";
  r.status = "ok";
  r.median_us = us;
  r.samples_us = {us, us};
  return r;
}

// The bytes of a database in the real schema, made once through the real open path: empty, or
// with one record of each kind.
std::string make_db(bool populated) {
  const std::string p = temp_db_path() + ".template";
  remove_db(p);
  {
    ac::TuningDb db(p, 0);
    if (populated) {
      db.put(env(), fallback_record(3));
      db.put_plan(env(), ac::PlanRecord{"h", "m", "latency", 10, words()[21], ""});
      db.put_reference_run(env(), "ref", words()[19]);
      db.put_step_tuning(env(), "step", words()[20]);
      db.flush();
    }
  }
  FILE* f = std::fopen(p.c_str(), "rb");
  std::string b;
  char buf[4096];
  for (size_t n; f && (n = std::fread(buf, 1, sizeof buf, f)) > 0;) b.append(buf, n);
  if (f) std::fclose(f);
  remove_db(p);
  return b;
}

const std::string& empty_db() {
  static const std::string bytes = make_db(false);
  return bytes;
}

const std::string& populated_db() {
  static const std::string bytes = make_db(true);
  return bytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string path = temp_db_path();
  remove_db(path);
  Reader in{data + 1, size - 1};
  if (data[0] % 3 == 0) {
    write_file(path, in.p, in.n);
  } else if (data[0] % 3 == 1) {
    write_file(path, empty_db().data(), empty_db().size());
    insert_rows(path, in);
  } else {
    std::string file = populated_db();
    while (in.n >= 3 && !file.empty()) {
      const size_t at = (size_t(in.byte()) | size_t(in.byte()) << 8) % file.size();
      file[at] = char(in.byte());
    }
    write_file(path, file.data(), file.size());
  }
  try {
    ac::TuningDb db(path, 0);
    read_everything(db);
    db.put(env(), fallback_record(2));
    db.flush();
    read_everything(db);
    // A file that opened as a tuning database, with no lock anywhere, stores a new record (unless
    // it is corrupt where the write lands: then the write is dropped with its reason, not thrown).
    if (db.health().not_stored() == 0) {
      const size_t skipped = db.health().rows_skipped, failed = db.health().reads_failed;
      auto back = db.find(env(), "sig", "decode:b1:c256", "cpu:fallback");
      require(back ? back->median_us == 2 : db.health().rows_skipped > skipped || db.health().reads_failed > failed,
              "a stored record reads back, or the read says why not");
    }
  } catch (const ac::Error& e) {
    ac::fuzz::check_rejection(e);
  }
  remove_db(path);
  return 0;
}
