// libFuzzer target: the body of an OpenAI API request, read as /v1/chat/completions,
// /v1/completions, /tokenize and /detokenize bodies. A body is either accepted, with every field
// in the range the server relies on, or refused with ApiError 400 naming the problem in one
// UTF-8 line; any other exception, a crash or a sanitizer report is a finding. Deep nesting is
// refused while parsing (kMaxJsonDepth), so no input can exhaust the stack.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "agentcompile/runtime/logprobs.h"
#include "agentcompile/server/api_error.h"
#include "agentcompile/server/openai_request.h"
#include "fuzz_common.h"

namespace {

using namespace ac;
using ac::fuzz::require;

void check_refusal(const server::ApiError& e) {
  require(e.status == 400, "a refused body is a 400, got " + std::to_string(e.status));
  require(!e.message.empty() && e.message.find('\n') == std::string::npos, "one-line message: " + e.message);
  try {
    (void)Json(e.message).dump();
    (void)server::error_body(e);
  } catch (const Json::exception&) {
    ac::fuzz::finding("the error message is not UTF-8: " + e.message);
  }
}

void check_completion(const server::CompletionRequest& r, bool chat) {
  require(!r.max_tokens || *r.max_tokens >= 1, "max_tokens >= 1");
  require(!r.temperature || (*r.temperature >= 0 && *r.temperature <= 100), "temperature in range");
  require(!r.top_p || (*r.top_p > 0 && *r.top_p <= 1), "top_p in (0, 1]");
  require(!r.min_p || (*r.min_p >= 0 && *r.min_p < 1), "min_p in [0, 1)");
  require(!r.top_k || *r.top_k >= 0, "top_k >= 0");
  require(r.stop.size() <= 4, "at most 4 stop strings");
  for (const auto& s : r.stop) require(!s.empty(), "no empty stop string");
  require(!r.logprobs || (*r.logprobs >= 0 && *r.logprobs <= kMaxTopLogprobs), "logprobs in [0, 20]");
  require(!r.include_usage || r.stream, "include_usage only when streaming");
  if (chat) {
    require(r.messages.is_array() && !r.messages.empty(), "chat: messages");
    for (const auto& m : r.messages) {
      require(m.is_object() && m.contains("role") && m["role"].is_string(), "chat: each message has a role");
      require(!m.contains("content") || m["content"].is_string() || m["content"].is_null(), "chat: content is text");
    }
    require(r.template_vars.is_object(), "chat: template variables are an object");
  } else {
    require(r.prompt_text.has_value() != !r.prompt_ids.empty(), "completions: a prompt as text or as ids, not both");
    for (int32_t t : r.prompt_ids) require(t >= 0, "completions: token ids are not negative");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  for (bool chat : {true, false}) {
    try {
      check_completion(server::parse_completion_request(body, chat), chat);
    } catch (const server::ApiError& e) {
      check_refusal(e);
    } catch (const std::exception& e) {
      ac::fuzz::finding(std::string("parse_completion_request threw something else than ApiError: ") + e.what());
    }
  }
  try {
    const server::TokenizeRequest t = server::parse_tokenize_request(body);
    require(t.prompt.has_value() != !t.messages.is_null(), "tokenize: exactly one of prompt and messages");
  } catch (const server::ApiError& e) {
    check_refusal(e);
  } catch (const std::exception& e) {
    ac::fuzz::finding(std::string("parse_tokenize_request threw: ") + e.what());
  }
  try {
    for (int32_t t : server::parse_detokenize_request(body)) require(t >= 0, "detokenize: ids are not negative");
  } catch (const server::ApiError& e) {
    check_refusal(e);
  } catch (const std::exception& e) {
    ac::fuzz::finding(std::string("parse_detokenize_request threw: ") + e.what());
  }
  return 0;
}
