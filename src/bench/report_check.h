#pragma once
// Type checks of a loaded bench report's fields (report_check.cpp).
#include <string>

#include "agentcompile/core/json.h"

namespace ac::bench {

// Every field the renderers read, when present and not null, has its type; BadInput naming the
// field ("r.json.results[2].peers.hf-eager.speedup: expected a number, found string") otherwise.
// Call after the schema, tier and results array are checked.
void check_report_fields(const Json& report, const std::string& subject);

}  // namespace ac::bench
