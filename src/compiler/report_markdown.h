#pragma once
// report.md: the compile report (report.json) as a page to read: the regions' searches, fallbacks
// and repairs, the end-to-end check and profile, the decode-step tuning.
#include <string>

#include "agentcompile/core/json.h"

namespace ac {

std::string report_markdown(const Json& rep);

}  // namespace ac
