#include "agentcompile/tokenizer/chat_template.h"

#include <cstdio>
#include <ctime>

#include "agentcompile/core/error.h"
#include "agentcompile/tokenizer/utf8.h"

namespace ac {

namespace {

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

// The Qwen3 template calls lstrip('\n'), rstrip('\n') and strip('\n'). The reference's template
// engine (@huggingface/jinja) ignores the argument and trims all JavaScript whitespace; Python's
// Jinja would strip newlines only. The reference is followed (it differs only when a message has
// other whitespace at those places).
std::string_view lstrip_nl(std::string_view s) { return js_trim_start(s); }
std::string_view rstrip_nl(std::string_view s) { return js_trim_end(s); }

// s.split(sep)[0] and s.split(sep)[-1].
std::string_view before_first(std::string_view s, std::string_view sep) { return s.substr(0, s.find(sep)); }
std::string_view after_last(std::string_view s, std::string_view sep) {
  size_t p = s.rfind(sep);
  return p == std::string_view::npos ? s : s.substr(p + sep.size());
}

void check_roles(const std::vector<ChatMessage>& msgs) {
  if (msgs.empty()) throw_input("chat", "the conversation is empty");
  for (size_t i = 0; i < msgs.size(); ++i) {
    const std::string& r = msgs[i].role;
    if (r != "system" && r != "user" && r != "assistant")
      throw_input("chat message " + std::to_string(i), "role \"" + r + "\" is not supported (system, user, assistant)");
  }
}

std::string render_qwen3(const std::vector<ChatMessage>& msgs, const ChatOptions& opts) {
  std::string out;
  const size_t n = msgs.size();
  if (msgs[0].role == "system") out += "<|im_start|>system\n" + msgs[0].content + "<|im_end|>\n";
  // The last user turn that is not a tool response: assistant turns after it keep their reasoning.
  size_t last_query = n - 1;
  for (size_t k = n; k-- > 0;) {
    std::string_view c = msgs[k].content;
    const bool tool_response = c.starts_with("<tool_response>") && c.ends_with("</tool_response>");
    if (msgs[k].role == "user" && !tool_response) {
      last_query = k;
      break;
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const ChatMessage& m = msgs[i];
    if (m.role == "user" || (m.role == "system" && i != 0)) {
      out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
      continue;
    }
    if (m.role != "assistant") continue;
    std::string_view content = m.content;
    std::string_view reasoning;
    if (contains(content, "</think>")) {
      content = lstrip_nl(after_last(m.content, "</think>"));
      reasoning = lstrip_nl(after_last(rstrip_nl(before_first(m.content, "</think>")), "<think>"));
    }
    out += "<|im_start|>assistant\n";
    if (i > last_query && (i == n - 1 || !reasoning.empty())) {
      out += "<think>\n";
      out += rstrip_nl(lstrip_nl(reasoning));
      out += "\n</think>\n\n";
      out += lstrip_nl(content);
    } else {
      out += content;
    }
    out += "<|im_end|>\n";
  }
  if (opts.add_generation_prompt) {
    out += "<|im_start|>assistant\n";
    if (!opts.enable_thinking) out += "<think>\n\n</think>\n\n";
  }
  return out;
}

// strftime("%d %b %Y") of the local date, with English month names whatever the locale, as the
// templates' strftime_now gives it.
std::string today() {
  static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%02d %s %d", tm.tm_mday, kMonths[tm.tm_mon], tm.tm_year + 1900);
  return buf;
}

void llama_turn(std::string& out, std::string_view role, std::string_view content) {
  out += "<|start_header_id|>";
  out += role;
  out += "<|end_header_id|>\n\n";
  out += js_trim(content);
  out += "<|eot_id|>";
}

}  // namespace

ChatTemplate ChatTemplate::detect(std::string_view t, std::string bos_token) {
  ChatTemplate c;
  c.bos_token = std::move(bos_token);
  if (contains(t, "<|im_start|>") && contains(t, "</think>") && contains(t, "enable_thinking")) {
    c.format = ChatFormat::Qwen3;
  } else if (contains(t, "<|start_header_id|>") && contains(t, "<|eot_id|>") && !contains(t, "<|image|>")) {
    if (contains(t, "Cutting Knowledge Date")) {
      c.format = ChatFormat::Llama31;
    } else {
      c.format = ChatFormat::Llama3;
      c.always_generation_prompt = !contains(t, "add_generation_prompt");
    }
  }
  return c;
}

std::string_view ChatTemplate::name() const {
  switch (format) {
    case ChatFormat::Qwen3: return "qwen3";
    case ChatFormat::Llama3: return "llama3";
    case ChatFormat::Llama31: return "llama3.1";
    case ChatFormat::None: break;
  }
  return "";
}

std::string_view ChatTemplate::end_of_turn() const {
  switch (format) {
    case ChatFormat::Qwen3: return "<|im_end|>";
    case ChatFormat::Llama3:
    case ChatFormat::Llama31: return "<|eot_id|>";
    case ChatFormat::None: break;
  }
  return "";
}

std::string ChatTemplate::render(const std::vector<ChatMessage>& msgs, const ChatOptions& opts) const {
  check_roles(msgs);
  std::string out;
  switch (format) {
    case ChatFormat::Qwen3: return render_qwen3(msgs, opts);
    case ChatFormat::Llama3:
      for (size_t i = 0; i < msgs.size(); ++i) {
        if (i == 0) out += bos_token;
        llama_turn(out, msgs[i].role, msgs[i].content);
      }
      if (opts.add_generation_prompt || always_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
      return out;
    case ChatFormat::Llama31: {
      out += bos_token;
      size_t first = 0;
      std::string_view system;
      if (msgs[0].role == "system") {
        system = js_trim(msgs[0].content);
        first = 1;
      }
      out += "<|start_header_id|>system<|end_header_id|>\n\n";
      out += "Cutting Knowledge Date: December 2023\n";
      out += "Today Date: " + (opts.date_string.empty() ? today() : opts.date_string) + "\n\n";
      out += system;
      out += "<|eot_id|>";
      for (size_t i = first; i < msgs.size(); ++i) llama_turn(out, msgs[i].role, msgs[i].content);
      if (opts.add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
      return out;
    }
    case ChatFormat::None: break;
  }
  throw_input("tokenizer_config.json: chat_template", "not a known chat template (Qwen3, Llama 3, Llama 3.1/3.2)");
}

}  // namespace ac
