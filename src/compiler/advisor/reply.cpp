// An LLM advisor's reply: chat completion -> message content -> validated advice.
#include "compiler/advisor/reply.h"

#include <cctype>

#include "agentcompile/core/error.h"
#include "agentcompile/tokenizer/utf8.h"

namespace ac::advisors {

std::string reply_text(std::string_view bytes, size_t max_bytes) {
  return utf8_sanitize(bytes.substr(0, max_bytes));
}

ChatReply chat_reply_content(std::string_view body) {
  ChatReply out;
  Json j;
  try {
    j = parse_json_strict(body, "chat completion", JsonLimits{32, 4096});
  } catch (const Error& e) {
    // The parser's message is printable ASCII but quotes the token it stopped in: keep it short.
    const std::string why = e.reason();
    out.why = "not JSON: " + (why.size() <= 240 ? why : why.substr(0, 240) + "...");
    return out;
  }
  if (!j.is_object() || !j.contains("choices") || !j["choices"].is_array() || j["choices"].empty()) {
    out.why = "no choices";
    return out;
  }
  const Json& c = j["choices"][0];
  if (!c.is_object() || !c.contains("message") || !c["message"].is_object() || !c["message"].contains("content") ||
      !c["message"]["content"].is_string()) {
    out.why = "choices[0].message.content is not a string";
    return out;
  }
  out.content = c["message"]["content"].get<std::string>();
  return out;
}

std::string strip_fences(std::string_view c) {
  auto trim = [](std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
  };
  c = trim(c);
  if (c.size() >= 6 && c.substr(0, 3) == "```" && c.substr(c.size() - 3) == "```") {
    c.remove_suffix(3);
    const size_t nl = c.find('\n');
    c = nl == std::string_view::npos ? std::string_view() : c.substr(nl + 1);
    c = trim(c);
  }
  return std::string(c);
}

Advice content_advice(std::string_view content, const CandidateSpace& space, const std::vector<std::string>& default_order,
                      const std::string& source) {
  return validate_advice(strip_fences(content), space, default_order, source);
}

}  // namespace ac::advisors
