#include "agentcompile/runtime/chat_prompt.h"

#include <algorithm>

#include "agentcompile/core/error.h"
#include "agentcompile/core/json.h"
#include "agentcompile/model/hf_config.h"
#include "agentcompile/tokenizer/tokenizer.h"
#include "agentcompile/tokenizer/utf8.h"

namespace ac {

namespace {

std::string valid_utf8(std::string text) { return utf8_valid(text) ? text : utf8_sanitize(text); }

// Where the content of each message that holds special-token text lies in `text` (the prompt the
// request renders to): the request is rendered again with those contents replaced by markers,
// and the spans are exact only where putting the contents back in place of the markers gives
// `text` again, byte for byte.
std::vector<std::pair<size_t, size_t>> content_spans(const Tokenizer& tok, const chat::ChatTemplate& tpl,
                                                     const chat::ChatRequest& request, const std::string& text) {
  std::vector<size_t> holders;  // messages whose content has special-token text
  for (size_t i = 0; i < request.messages.size(); ++i) {
    const chat::OrderedJson& m = request.messages[i];
    if (!m.contains("content") || !m["content"].is_string()) continue;
    const std::string& c = m["content"].get_ref<const std::string&>();
    if (!c.empty() && tok.encode(c, true) != tok.encode(c, false)) holders.push_back(i);
  }
  if (holders.empty()) return {};
  chat::ChatRequest marked = request;
  std::vector<std::string> markers;
  for (size_t i : holders) {
    markers.push_back("AcPlainContentMarker" + std::to_string(i) + "Z");
    marked.messages[i]["content"] = markers.back();
  }
  auto refuse = [&](size_t message) {
    throw_input("--no-special-in-prompt",
                "message " + std::to_string(message) +
                    " holds special-token text, and the chat template does not write its content as given, so it "
                    "cannot be kept as plain text");
  };
  const std::string with_markers = valid_utf8(tpl.render(marked));
  std::vector<std::pair<size_t, size_t>> found;  // (offset in with_markers, index into holders)
  for (size_t k = 0; k < holders.size(); ++k) {
    const size_t at = with_markers.find(markers[k]);
    if (at == std::string::npos || with_markers.find(markers[k], at + 1) != std::string::npos ||
        text.find(markers[k]) != std::string::npos)
      refuse(holders[k]);
    found.push_back({at, k});
  }
  std::sort(found.begin(), found.end());
  std::string rebuilt;
  std::vector<std::pair<size_t, size_t>> spans;
  size_t from = 0;
  for (const auto& [at, k] : found) {
    rebuilt.append(with_markers, from, at - from);
    const std::string& content = request.messages[holders[k]]["content"].get_ref<const std::string&>();
    spans.push_back({rebuilt.size(), rebuilt.size() + content.size()});
    rebuilt += content;
    from = at + markers[k].size();
  }
  rebuilt.append(with_markers, from, std::string::npos);
  if (rebuilt != text) refuse(holders[found.front().second]);
  return spans;
}

}  // namespace

void check_chat_template(const chat::ChatTemplate& tpl, const ChatPromptOptions& options) {
  if (!tpl.has_template() && !options.fallback)
    throw_input(tpl.config_subject(),
                tpl.missing_reason() + "; --chat-template-fallback writes plain \"role: content\" lines instead");
}

std::vector<int32_t> chat_prompt_ids(const Tokenizer& tok, const chat::ChatTemplate& tpl, const chat::ChatRequest& request,
                                     const ChatPromptOptions& options) {
  check_chat_template(tpl, options);
  if (!tpl.has_template()) {
    // No template writes a BOS here, so the text takes what a text prompt takes (the post_processor's).
    const std::string text = chat::plain_chat_text(request.messages, request.add_generation_prompt, "messages");
    return tok.add_special_tokens(tok.encode(text, !options.plain_content));
  }
  const std::string text = valid_utf8(tpl.render(request));
  if (!options.plain_content) return tok.encode(text, true);
  return tok.encode(text, true, content_spans(tok, tpl, request, text));
}

std::vector<int64_t> chat_stop_ids(const ModelConfig& config, const Tokenizer& tok) {
  std::vector<int64_t> ids = config.eos_token_ids;
  if (auto eos = tok.eos_token_id(); eos && std::find(ids.begin(), ids.end(), int64_t(*eos)) == ids.end())
    ids.push_back(*eos);
  return ids;
}

void check_last_turn(const chat::OrderedJson& messages, const std::string& subject) {
  if (messages.empty()) throw_input(subject, "the conversation is empty (it must end with a user message)");
  const chat::OrderedJson& last = messages.back();
  const chat::OrderedJson role = last.contains("role") ? last["role"] : chat::OrderedJson();
  if (role != "user" && role != "tool")
    throw_input(subject, "the last message must be the user's (\"role\": \"user\") or a tool result (\"tool\"), not " +
                             json_brief(Json::parse(role.dump())) + ": the reply opens a new assistant turn");
}

}  // namespace ac
