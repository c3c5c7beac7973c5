#include "agentcompile/server/openai_request.h"

#include <cmath>
#include <limits>

#include "agentcompile/core/error.h"
#include "agentcompile/jinja/template.h"
#include "agentcompile/runtime/logprobs.h"
#include "agentcompile/server/api_error.h"

namespace ac::server {

namespace {

using OJ = chat::OrderedJson;

[[noreturn]] void bad(const std::string& param, const std::string& why) {
  throw ApiError(400, param.empty() ? why : "'" + param + "' " + why, param);
}

const OJ* field(const OJ& body, const char* name) {
  auto it = body.find(name);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

std::optional<double> number(const OJ& body, const char* name, double lo, double hi) {
  const OJ* v = field(body, name);
  if (!v) return std::nullopt;
  if (!v->is_number()) bad(name, "must be a number");
  const double d = v->get<double>();
  if (!(d >= lo && d <= hi)) {
    const auto fmt = [](double x) {
      std::string s = std::to_string(x);
      s.erase(s.find_last_not_of('0') + 1);
      if (s.back() == '.') s.pop_back();
      return s;
    };
    bad(name, "must be in [" + fmt(lo) + ", " + fmt(hi) + "], got " + v->dump());
  }
  return d;
}

std::optional<int64_t> integer(const OJ& body, const char* name) {
  const OJ* v = field(body, name);
  if (!v) return std::nullopt;
  if (v->is_number_integer()) return v->get<int64_t>();
  if (v->is_number_unsigned()) bad(name, "is too large");
  if (v->is_number_float()) {
    const double d = v->get<double>();
    if (std::floor(d) == d && std::fabs(d) < 9e15) return int64_t(d);  // 16.0 is 16, as in Python clients
  }
  bad(name, "must be an integer");
}

std::optional<bool> boolean(const OJ& body, const char* name) {
  const OJ* v = field(body, name);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) bad(name, "must be a boolean");
  return v->get<bool>();
}

std::vector<int32_t> token_ids(const OJ& list, const std::string& name) {
  std::vector<int32_t> ids;
  for (const OJ& t : list) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > std::numeric_limits<int32_t>::max())
      bad(name, "must be a list of token ids (non-negative integers)");
    ids.push_back(int32_t(t.get<int64_t>()));
  }
  return ids;
}

// A message's content as one text: a string, or a list of {"type": "text", "text": ...} parts.
OJ message_content(const OJ& content, const std::string& where) {
  if (content.is_string() || content.is_null()) return content;
  if (!content.is_array()) bad(where + ".content", "must be a string or a list of text parts");
  std::string text;
  for (const OJ& part : content) {
    if (!part.is_object() || part.value("type", OJ()) != "text" || !part.contains("text") || !part["text"].is_string())
      bad(where + ".content", "parts must be {\"type\": \"text\", \"text\": ...} (only text is supported)");
    text += part["text"].get<std::string>();
  }
  return text;
}

OJ parse_messages(const OJ& body) {
  const OJ* m = field(body, "messages");
  if (!m) bad("messages", "is required");
  if (!m->is_array()) bad("messages", "must be a list of messages");
  if (m->empty()) bad("messages", "must hold at least one message");
  OJ out = OJ::array();
  static constexpr std::string_view kRoles[] = {"system", "developer", "user", "assistant", "tool"};
  for (size_t i = 0; i < m->size(); ++i) {
    const std::string where = "messages[" + std::to_string(i) + "]";
    const OJ& msg = (*m)[i];
    if (!msg.is_object()) bad(where, "must be an object");
    if (!msg.contains("role") || !msg["role"].is_string()) bad(where + ".role", "is required and must be a string");
    const std::string role = msg["role"].get<std::string>();
    bool known = false;
    for (auto r : kRoles) known = known || role == r;
    if (!known) bad(where + ".role", "\"" + role + "\" is not one of system, developer, user, assistant, tool");
    OJ copy = msg;
    if (msg.contains("content")) copy["content"] = message_content(msg["content"], where);
    else if (role != "assistant") bad(where + ".content", "is required");
    out.push_back(std::move(copy));
  }
  return out;
}

}  // namespace

OJ parse_body(std::string_view body) {
  OJ j;
  try {
    j = jinja::parse_json_ordered(body, "request body", kMaxJsonDepth);
  } catch (const Error& e) {
    throw ApiError(400, "the request body is not valid JSON: " + e.reason());
  }
  if (!j.is_object()) throw ApiError(400, "the request body must be a JSON object");
  return j;
}

CompletionRequest parse_completion_request(std::string_view text, bool chat) {
  const OJ body = parse_body(text);
  CompletionRequest r;
  r.chat = chat;
  if (const OJ* m = field(body, "model")) {
    if (!m->is_string()) bad("model", "must be a string");
    r.model = m->get<std::string>();
  }
  if (chat) {
    r.messages = parse_messages(body);
    if (const OJ* t = field(body, "tools")) {
      if (!t->is_array()) bad("tools", "must be a list");
      r.tools = *t;
    }
    if (const OJ* k = field(body, "chat_template_kwargs")) {
      if (!k->is_object()) bad("chat_template_kwargs", "must be an object");
      for (std::string_view option : chat::kHfApplyOptions)
        if (k->contains(option)) bad("chat_template_kwargs", "may not set \"" + std::string(option) + "\"");
      r.template_vars = *k;
    }
  } else {
    const OJ* p = field(body, "prompt");
    if (!p) bad("prompt", "is required");
    const OJ* one = p;
    if (p->is_array() && !p->empty() && (p->front().is_string() || p->front().is_array())) {
      if (p->size() != 1) bad("prompt", "must be one prompt (a list of prompts is not supported)");
      one = &p->front();
    }
    if (one->is_string()) r.prompt_text = one->get<std::string>();
    else if (one->is_array()) r.prompt_ids = token_ids(*one, "prompt");
    else bad("prompt", "must be a string or a list of token ids");
    if (!r.prompt_text && r.prompt_ids.empty()) bad("prompt", "is empty");
  }

  const char* max_name = chat && field(body, "max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
  r.max_tokens = integer(body, max_name);
  if (r.max_tokens && *r.max_tokens < 1) bad(max_name, "must be at least 1, got " + std::to_string(*r.max_tokens));
  if (auto v = number(body, "temperature", 0, 100)) r.temperature = float(*v);
  if (auto v = number(body, "top_p", 0, 1)) {
    if (*v == 0) bad("top_p", "must be in (0, 1], got 0");
    r.top_p = float(*v);
  }
  if (auto v = number(body, "min_p", 0, 1)) {
    if (*v == 1) bad("min_p", "must be in [0, 1), got 1");
    r.min_p = float(*v);
  }
  if (auto v = integer(body, "top_k")) {
    if (*v < -1 || *v > std::numeric_limits<int32_t>::max()) bad("top_k", "must be -1 or 0 (off) or a positive integer");
    r.top_k = int(std::max<int64_t>(0, *v));
  }
  if (auto v = integer(body, "seed")) r.seed = uint64_t(*v);
  if (auto n = integer(body, "n"); n && *n != 1) bad("n", "must be 1 (one choice per request)");
  // Chat: "logprobs": true, "top_logprobs": n. Completions: "logprobs": n (the alternatives).
  const auto alternatives = [&](const char* name) {
    const int64_t v = *integer(body, name);
    if (v < 0 || v > kMaxTopLogprobs) bad(name, "must be in [0, " + std::to_string(kMaxTopLogprobs) + "], got " + std::to_string(v));
    return int(v);
  };
  if (chat) {
    const bool want = boolean(body, "logprobs").value_or(false);
    if (field(body, "top_logprobs")) {
      const int top = alternatives("top_logprobs");
      if (!want) bad("top_logprobs", "needs \"logprobs\": true");
      r.logprobs = top;
    } else if (want) {
      r.logprobs = 0;
    }
  } else if (field(body, "logprobs")) {
    r.logprobs = alternatives("logprobs");
  }
  // Not built: refused rather than ignored, so that a client never reads a missing field as empty.
  for (const char* name : {"echo", "suffix"})
    if (const OJ* f = field(body, name); f && !f->is_null() && *f != false && *f != "")
      bad(name, "is not supported by this server");
  if (const OJ* s = field(body, "stop")) {
    if (s->is_string()) r.stop.push_back(s->get<std::string>());
    else if (s->is_array()) {
      for (const OJ& item : *s) {
        if (!item.is_string()) bad("stop", "must be a string or a list of strings");
        r.stop.push_back(item.get<std::string>());
      }
    } else {
      bad("stop", "must be a string or a list of strings");
    }
    if (r.stop.size() > 4) bad("stop", "may hold at most 4 strings");
    for (const auto& s2 : r.stop)
      if (s2.empty()) bad("stop", "may not hold an empty string");
  }
  r.ignore_eos = boolean(body, "ignore_eos").value_or(false);
  r.stream = boolean(body, "stream").value_or(false);
  if (const OJ* o = field(body, "stream_options")) {
    if (!o->is_object()) bad("stream_options", "must be an object");
    if (!r.stream) bad("stream_options", "is only allowed with \"stream\": true");
    r.include_usage = boolean(*o, "include_usage").value_or(false);
  }
  return r;
}

TokenizeRequest parse_tokenize_request(std::string_view text) {
  const OJ body = parse_body(text);
  TokenizeRequest r;
  if (body.contains("messages")) r.messages = parse_messages(body);
  if (const OJ* p = field(body, "prompt")) {
    if (!p->is_string()) bad("prompt", "must be a string");
    r.prompt = p->get<std::string>();
  }
  if (r.prompt.has_value() == !r.messages.is_null()) bad("", "give exactly one of 'prompt' and 'messages'");
  r.add_special_tokens = boolean(body, "add_special_tokens");
  return r;
}

std::vector<int32_t> parse_detokenize_request(std::string_view text) {
  const OJ body = parse_body(text);
  const OJ* t = field(body, "tokens");
  if (!t) bad("tokens", "is required");
  if (!t->is_array()) bad("tokens", "must be a list of token ids (non-negative integers)");
  return token_ids(*t, "tokens");
}

}  // namespace ac::server
