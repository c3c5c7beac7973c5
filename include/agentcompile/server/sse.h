#pragma once
// Server-sent events as the OpenAI streaming API sends them: one "data: <json>" event per chunk,
// and "data: [DONE]" at the end.
#include <string>

#include "agentcompile/core/json.h"

namespace ac::server {

inline constexpr const char* kSseContentType = "text/event-stream; charset=utf-8";
std::string sse_event(const Json& chunk);
std::string sse_done();

}  // namespace ac::server
