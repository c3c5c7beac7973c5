#pragma once
// A CPU compile small enough for tests: short prompt and context, few checked tokens, few repeats.
#include <cstdint>

#include "agentcompile/compiler/compile.h"

namespace ac::test {

inline CompileOptions small_compile_options(const fs::path& db, int64_t prefill_tokens = 32, int64_t decode_context = 64,
                                            int e2e_tokens = 8) {
  CompileOptions o;
  o.backend = "cpu";
  o.db_path = db;
  o.budget_s = 60;
  o.prefill_tokens = prefill_tokens;
  o.decode_context = decode_context;
  o.e2e_tokens = e2e_tokens;
  o.search.repeats = 3;
  o.search.warmup = 1;
  // Fixed timing conditions: the next compile of a test reuses a stored reference profile
  // whatever the host's load does in between (the tests of that rule set their own).
  o.timing_noise = [] { return TimingNoise{100, 0.02}; };
  return o;
}

}  // namespace ac::test
