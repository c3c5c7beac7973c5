#pragma once
// The tuning database: every candidate measured, keyed by region signature + shape bucket +
// environment (plan.h's Environment::key: device, arch, driver/CUDA/NVRTC, engine version), with
// its parameters, the stage it reached, why it failed, and every timing sample; plus the
// end-to-end figures of every plan compiled (for the regression check). Never binaries.
// SQLite in WAL mode with a busy timeout, so concurrent compiles share it. Records of another
// environment are never returned. Schema: docs/compiler.md ("Tuning database").
//
// A compile never loses its work to the database: a read that cannot be done now (the file
// locked by another process past the wait, or failing) returns nothing, so the compile measures
// instead; a write that cannot be done now is kept in memory, in order, and stored by the next
// write that gets through or by flush(); health() says what was not stored and why. Rows that
// are not valid records (wrong types, non-finite or negative timings, a name that does not match
// its family and parameters, text that is not UTF-8) are skipped, never trusted.
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "agentcompile/compiler/candidate_space.h"
#include "agentcompile/core/fs.h"
#include "agentcompile/plan/plan.h"

struct sqlite3;

namespace ac {

struct TuningRecord {
  std::string signature, bucket, backend;
  std::string family;  // FamilySpace::id
  ParamPoint params;
  std::string name;    // Candidate::name()
  std::string stage;   // the last stage run: constraints, compile, correctness, timing
  std::string status;  // "ok" or "failed"
  std::string reason;  // why it failed ("" when ok)
  double median_us = 0;
  double rel_err = 0;          // worst relative L2 error of the correctness stage
  std::vector<double> samples_us;  // every timing sample, in order
  double retimed_us = 0;           // median of the noise re-timing (best two of a search), 0 if none
  std::string model;           // the model whose compile measured it (cross-model reuse)
  std::string created;         // UTC, ISO 8601
};

struct PlanRecord {
  std::string model_hash, model_name, objective;
  double e2e_us = 0;  // the objective's end-to-end cost (latency: prefill + decode of the workload)
  std::string plan_json;
  std::string created;
};

class TuningDb {
 public:
  // How long an operation waits for a lock another process holds, by default (compile --db-wait).
  static constexpr double kDefaultWaitS = 15;

  // ~/.cache/agentcompile/tune.db (XDG_CACHE_HOME respected).
  static fs::path default_path();
  // Opens or creates. BadInput naming the file when the path is not a regular file (or a link to
  // one), lies in /dev (but /dev/shm), /proc or /sys, has a journal/WAL sibling that is not a regular file, or
  // holds something else than a tuning database. A database locked past `wait_s` is not an
  // error: the object starts unavailable (reads return nothing, writes are kept in memory).
  // After one operation has waited in vain, the next ones try without waiting until a write gets
  // through (then the wait applies again; a read getting through says nothing of the write lock).
  explicit TuningDb(const fs::path& path, double wait_s = kDefaultWaitS);
  ~TuningDb();  // stores what is still kept in memory (flush)
  TuningDb(const TuningDb&) = delete;
  TuningDb& operator=(const TuningDb&) = delete;

  // The path as given, and the file SQLite opens (symbolic links resolved).
  const fs::path& path() const { return path_; }
  const fs::path& file() const { return file_; }
  std::optional<TuningRecord> find(const Environment& env, const std::string& signature, const std::string& bucket,
                                   const std::string& name) const;
  // Every record of a signature in this environment (any bucket), best first.
  std::vector<TuningRecord> for_signature(const Environment& env, const std::string& signature,
                                          const std::string& backend) const;
  // Inserts or replaces the record with the same key, with its samples.
  void put(const Environment& env, const TuningRecord& r);
  // Records the noise re-timing of a candidate (its samples are appended to its samples).
  void set_retimed(const Environment& env, const std::string& signature, const std::string& bucket,
                   const std::string& name, const std::vector<double>& samples_us, double median_us);
  void put_plan(const Environment& env, const PlanRecord& p);
  // The recorded plan with the lowest e2e_us for this model and objective here (rows whose plan
  // does not read back as a plan of this model and objective are skipped).
  std::optional<PlanRecord> best_plan(const Environment& env, const std::string& model_hash,
                                      const std::string& objective) const;
  // Candidate records in this environment; nullopt when the database cannot be read now.
  std::optional<int64_t> count(const Environment& env) const;

  // The reference backend's side of a compile's end-to-end stage (its greedy tokens with their
  // top-2 margins, its profile) as JSON, under a key of everything it depends on (model hash,
  // prompt, tokens, objective): a warm compile reuses it instead of running the reference again.
  // Returns the JSON and when it was measured.
  std::optional<std::pair<std::string, std::string>> reference_run(const Environment& env, const std::string& key) const;
  void put_reference_run(const Environment& env, const std::string& key, const std::string& json);
  // A compile's decode-step tuning (every trial, the routes it chose) as JSON, under a key of
  // what it depends on (model hash, the starting plan's routes, tokens, prompt, margin): a warm
  // compile from the same starting plan decides as the one that measured, without re-timing.
  std::optional<std::pair<std::string, std::string>> step_tuning(const Environment& env, const std::string& key) const;
  void put_step_tuning(const Environment& env, const std::string& key, const std::string& json);

  // What the database could not do for this compile.
  struct Health {
    size_t pending = 0;       // writes kept in memory, not stored (yet)
    size_t dropped = 0;       // writes that failed for good (not a lock: e.g. a read-only file)
    size_t reads_failed = 0;  // reads that found the database unavailable (the compile measured instead)
    size_t rows_skipped = 0;  // rows that were not valid records
    std::string reason;       // the last failure, e.g. "database is locked"
    size_t not_stored() const { return pending + dropped; }
  };
  const Health& health() const;
  // Stores the writes kept in memory, retrying a locked database with backoff for up to the wait
  // in all; true when every write of this object is stored.
  bool flush();

 private:
  // One write: a transaction of its own, kept as is while the database is unavailable.
  using Write = std::function<void()>;
  void write(Write w);
  bool drain();        // one attempt at every kept write, in order; false when one must wait
  bool ready() const;  // the schema checked (or created); tried again while it is not
  void init() const;
  void note_failure(int code, const std::string& why) const;
  void got_through() const;  // a write succeeded: the wait applies again
  template <class T>
  T read(T none, const std::function<T()>& f) const;
  // A (json, created) run record of `table` (reference_runs or step_tunings), and its insertion.
  std::optional<std::pair<std::string, std::string>> run_record(const char* table, const Environment& env,
                                                               const std::string& key) const;
  void put_run_record(const char* table, const Environment& env, const std::string& key, const std::string& json);
  fs::path path_, file_;
  sqlite3* db_ = nullptr;
  int wait_ms_ = 0;
  mutable bool ready_ = false;
  mutable bool waiting_ = true;       // false after an operation waited in vain: the next ones try at once
  mutable bool last_locked_ = false;  // the last failure was a lock (worth retrying)
  bool flushed_ = false;              // flush() ran: the destructor tries once more, without waiting
  std::deque<Write> kept_;
  mutable Health health_;
};

// The shape bucket of a point: decode "decode:b<batch>:c<pow2 ceiling of context>", prefill
// "prefill:t<pow2 ceiling of tokens>"; records of nearby points share it.
std::string shape_bucket(bool decode, int64_t batch, int64_t tokens, int64_t context);

}  // namespace ac
