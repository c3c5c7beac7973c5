#include "agentcompile/server/sse.h"

namespace ac::server {

// A JSON dump holds no raw newline, so one "data:" line carries the whole chunk.
std::string sse_event(const Json& chunk) {
  return "data: " + chunk.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n\n";
}

std::string sse_done() { return "data: [DONE]\n\n"; }

}  // namespace ac::server
