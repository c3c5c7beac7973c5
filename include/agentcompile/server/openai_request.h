#pragma once
// The body of a /v1/chat/completions or /v1/completions request, checked at the edge: every
// field's type and range, the roles of the messages, n = 1. ApiError 400 naming the field
// otherwise. Fields this server does not use are ignored.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agentcompile/chat/hf_context.h"

namespace ac::server {

// Deepest nesting accepted in a request body (checked while parsing, before any tree is built).
inline constexpr int kMaxJsonDepth = 64;

struct CompletionRequest {
  bool chat = false;
  std::optional<std::string> model;
  // chat: the conversation (content parts joined into one text), tools, chat_template_kwargs
  chat::OrderedJson messages = chat::OrderedJson::array();
  chat::OrderedJson tools;  // null when absent
  chat::OrderedJson template_vars = chat::OrderedJson::object();
  // completions: the prompt as text, or as token ids
  std::optional<std::string> prompt_text;
  std::vector<int32_t> prompt_ids;

  std::optional<int64_t> max_tokens;
  std::optional<float> temperature, top_p, min_p;
  std::optional<int> top_k;
  std::optional<uint64_t> seed;
  std::vector<std::string> stop;
  // Each token's log-probability with this many alternatives (chat: logprobs/top_logprobs,
  // completions: logprobs); none when absent.
  std::optional<int> logprobs;
  bool stream = false, include_usage = false;
  bool ignore_eos = false;  // vLLM's extension: generate max_tokens whatever the model emits (benchmarks)
};

// ApiError 400 on malformed JSON, wrong types, unknown roles, missing messages or prompt, n != 1,
// max_tokens < 1, more than 4 stop strings or an empty one, more than 20 logprobs alternatives
// (or top_logprobs without logprobs), and echo or suffix.
CompletionRequest parse_completion_request(std::string_view body, bool chat);

// The body of /tokenize ({"prompt": text} or {"messages": [...]}, "add_special_tokens") and
// /detokenize ({"tokens": [ids]}).
struct TokenizeRequest {
  std::optional<std::string> prompt;
  chat::OrderedJson messages;  // null unless given
  std::optional<bool> add_special_tokens;
};
TokenizeRequest parse_tokenize_request(std::string_view body);
std::vector<int32_t> parse_detokenize_request(std::string_view body);

// The body as ordered JSON (an object), ApiError 400 otherwise.
chat::OrderedJson parse_body(std::string_view body);

}  // namespace ac::server
