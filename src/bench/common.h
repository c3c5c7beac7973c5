#pragma once
// Pieces every tier uses: models by folder or preset, the report's header (environment,
// settings) and the ceilings measured in the same run.
#include <memory>
#include <string>

#include "agentcompile/bench/tiers.h"
#include "agentcompile/model/model.h"

namespace ac::bench {

struct BenchModel {
  std::string name;    // preset name or folder basename: what peers are matched by
  std::string preset;  // "" for a user folder
  std::unique_ptr<Model> model;
  bool in_memory = false;  // a preset made in memory: no folder
};

// A folder, or a preset synthesised (once) into the cache folder, or made in memory (--in-memory).
BenchModel resolve_model(const std::string& spec, const BenchOptions& o);
Json model_json(const BenchModel& m);

// schema, tier, created, command, environment, settings; `backend` resolved (cpu | cuda).
Json report_header(const std::string& tier, const BenchOptions& o, const std::string& backend);

// Copy bandwidth and cuBLAS bf16 GEMM on the GPU; on the CPU a note saying they need a GPU.
Json measure_ceilings(const std::string& backend, bool progress);
double ceiling(const Json& ceilings, const char* key);  // 0 when not measured

void progress_line(bool on, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace ac::bench
