#pragma once
// One JSON POST to an OpenAI-compatible endpoint over HTTP or HTTPS, with bounded time, size and
// retries. Internal to the openai advisor.
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

namespace ac::llm {

struct HttpPost {
  std::string url;      // http(s)://host[:port]/path
  std::string api_key;  // sent as "Authorization: Bearer <key>" when not empty
  std::string body;     // JSON
  double connect_timeout_s = 5.0;
  double read_timeout_s = 30.0;
  double total_timeout_s = 60.0;  // per attempt
  // No wait, attempt or backoff goes past it (the caller's budget); unset: the limits above only.
  std::optional<std::chrono::steady_clock::time_point> deadline;
  int max_attempts = 3;  // refused connections, 429 and 5xx are retried; timeouts are not
  double backoff_s = 0.5;
  size_t max_response_bytes = 256 * 1024;
};

struct HttpResult {
  bool ok = false;     // a 2xx response within the limits
  int status = 0;      // HTTP status of the last attempt (0: none)
  std::string body;    // the last response body (cut at the size limit)
  std::string error;   // why not ok
  int attempts = 0;
  double elapsed_ms = 0;
};

// The chat-completions URL for a user's --llm-url: a URL ending in /chat/completions is used as
// is, one ending in /v1 gets /chat/completions, a bare host gets /v1/chat/completions. Empty
// string (why in *error) for anything that is not an http(s) URL.
std::string chat_completions_url(const std::string& base, std::string* error);

HttpResult post_json(const HttpPost& request);

}  // namespace ac::llm
