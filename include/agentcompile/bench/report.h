#pragma once
// Report writers: a llama-bench-like markdown table per tier, and the change against an earlier
// report. The JSON report itself is what the tiers return (docs/bench.md has its schema).
#include <string>

#include "agentcompile/core/fs.h"
#include "agentcompile/core/json.h"

namespace ac::bench {

inline constexpr const char* kReportSchema = "agentcompile.bench/1";

std::string markdown_report(const Json& report);
// Rows matched by their key (model, workload, backend, route / region, batch / phase); rows only
// in one report are listed as added or gone.
std::string compare_markdown(const Json& before, const Json& after, const std::string& before_name);
// Reads a report written by `bench --json-out`; BadInput when it is not one.
Json load_report(const fs::path& path);

}  // namespace ac::bench
