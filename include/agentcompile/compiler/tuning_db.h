#pragma once
// The tuning database: every candidate measured, keyed by region signature + shape bucket +
// environment (plan.h's Environment::key: device, arch, driver/CUDA/NVRTC, engine version), with
// its parameters, the stage it reached, why it failed, and every timing sample; plus the
// end-to-end figures of every plan compiled (for the regression check). Never binaries.
// SQLite in WAL mode with a busy timeout, so concurrent compiles share it. Records of another
// environment are never returned. Schema: docs/compiler.md ("Tuning database").
#include <cstdint>
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
  // ~/.cache/agentcompile/tune.db (XDG_CACHE_HOME respected).
  static fs::path default_path();
  // Opens or creates; BadInput naming the file when it cannot be opened or is not a tuning DB.
  explicit TuningDb(const fs::path& path);
  ~TuningDb();
  TuningDb(const TuningDb&) = delete;
  TuningDb& operator=(const TuningDb&) = delete;

  const fs::path& path() const { return path_; }
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
  // The recorded plan with the lowest e2e_us for this model and objective here.
  std::optional<PlanRecord> best_plan(const Environment& env, const std::string& model_hash,
                                      const std::string& objective) const;
  int64_t count(const Environment& env) const;  // candidate records in this environment

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

 private:
  void exec(const char* sql) const;
  // A (json, created) run record of `table` (reference_runs or step_tunings), and its insertion.
  std::optional<std::pair<std::string, std::string>> run_record(const char* table, const Environment& env,
                                                               const std::string& key) const;
  void put_run_record(const char* table, const Environment& env, const std::string& key, const std::string& json);
  fs::path path_;
  sqlite3* db_ = nullptr;
};

// The shape bucket of a point: decode "decode:b<batch>:c<pow2 ceiling of context>", prefill
// "prefill:t<pow2 ceiling of tokens>"; records of nearby points share it.
std::string shape_bucket(bool decode, int64_t batch, int64_t tokens, int64_t context);

}  // namespace ac
