#pragma once
// The chat template of a model folder, rendered as Hugging Face renders it: the template text and
// special tokens of tokenizer_config.json, or the text of chat_template.jinja beside it (which
// replaces the config's chat_template, as transformers loads it), with the context of
// hf_context.h, by the Jinja engine of src/jinja. The output is the prompt as text; tokenize it
// without adding special tokens (the template writes them), as apply_chat_template does.
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "agentcompile/chat/hf_context.h"
#include "agentcompile/core/fs.h"
#include "agentcompile/jinja/template.h"

namespace ac::chat {

// What a template is rendered with besides the special tokens.
struct ChatRequest {
  OrderedJson messages = OrderedJson::array();  // a list of objects ({"role": ..., "content": ...})
  OrderedJson tools;                            // a list, or null when none are given
  bool add_generation_prompt = true;
  OrderedJson variables = OrderedJson::object();  // extra template variables: enable_thinking, ...
};

class ChatTemplate {
 public:
  // Reads dir/tokenizer_config.json and dir/chat_template.jinja, each where present. A folder
  // with neither, or with no template in them, loads (has_template() is false); malformed files
  // are BadInput naming them.
  static ChatTemplate load(const fs::path& dir, jinja::Options options = {});
  // From a tokenizer_config.json's content (tests); `subject` names it in errors.
  static ChatTemplate from_config(OrderedJson config, std::string subject, jinja::Options options = {});

  bool has_template() const;
  // Why there is none ("has no chat_template"), for has_template() == false, and what it is
  // about (tokenizer_config.json's path, or the folder's where that is missing).
  std::string missing_reason() const;
  const std::string& config_subject() const { return config_subject_; }
  // The file the template text came from (for messages).
  const std::string& template_subject() const { return template_subject_; }

  // The prompt text; BadInput when there is no template, the request is malformed, the template
  // does not parse or raises (one line, with the template's line and column).
  std::string render(const ChatRequest& request) const;
  // The context render() gives the template.
  OrderedJson context(const ChatRequest& request) const;

  // A special token of tokenizer_config.json as the template sees it ("eos_token" -> "<|im_end|>"),
  // nullopt where it has none.
  std::optional<std::string> special_token(std::string_view key) const;

  ChatTemplate(ChatTemplate&&) noexcept;
  ChatTemplate& operator=(ChatTemplate&&) noexcept;
  ~ChatTemplate();

 private:
  ChatTemplate() = default;
  OrderedJson config_ = OrderedJson::object();
  std::string config_subject_;    // tokenizer_config.json's path
  std::string template_subject_;  // "<path>/tokenizer_config.json: chat_template" or "<path>/chat_template.jinja"
  bool have_config_ = false;
  jinja::Options options_;
  // Each template text parsed once (named templates may give two). The server renders from many
  // connection threads at once: the cache is looked up and filled under the lock; a parsed
  // template is never replaced or erased, and rendering it only reads it.
  mutable std::map<std::string, std::unique_ptr<jinja::Template>> parsed_;
  mutable std::unique_ptr<std::mutex> parsed_mu_ = std::make_unique<std::mutex>();
};

// `messages` must be a list of objects; BadInput naming `subject` otherwise.
void check_messages(const OrderedJson& messages, const std::string& subject);

// The text `generate --chat-template-fallback` uses for a model without a chat template: each
// message as "ROLE: CONTENT\n" (role and content must be strings), then "assistant: " when
// add_generation_prompt. No special tokens are written.
std::string plain_chat_text(const OrderedJson& messages, bool add_generation_prompt, const std::string& subject);

}  // namespace ac::chat
