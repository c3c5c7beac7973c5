#pragma once
// Reading an LLM advisor's reply, apart from the network and the heuristic so that it can be
// linked and fuzzed alone (fuzz/fuzz_advisor_reply.cpp): the message content of a chat
// completion, and the advice that content gives for one candidate space. Whatever bytes come in,
// what comes out is valid UTF-8.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agentcompile/compiler/advice.h"

namespace ac::advisors {

// Bytes from the network as text to keep (records, reports, messages): cut to max_bytes, then
// every invalid UTF-8 sequence replaced by U+FFFD.
std::string reply_text(std::string_view bytes, size_t max_bytes = kMaxAdviceBytes);

struct ChatReply {
  std::optional<std::string> content;  // choices[0].message.content
  std::string why;                     // why there is none ("not JSON: ...", "no choices", ...)
};

// The message content of a chat-completions response body.
ChatReply chat_reply_content(std::string_view body);

// The JSON an LLM put in its message: surrounding whitespace and one ```json fence removed.
std::string strip_fences(std::string_view content);

// The advice a message content gives, validated against the space (advice.h); not `parsed` when
// the content is not a JSON object.
Advice content_advice(std::string_view content, const CandidateSpace& space, const std::vector<std::string>& default_order,
                      const std::string& source);

}  // namespace ac::advisors
