#include "agentcompile/chat/chat_template.h"

#include "agentcompile/core/error.h"

namespace ac::chat {

namespace {

// tokenizer_config.json of real models is well under a megabyte (Qwen3's: 10 KiB, DeepSeek V3's
// with its added_tokens_decoder: 1.2 MiB); templates are bounded again by the engine (1 MiB).
constexpr size_t kMaxConfigBytes = size_t(16) << 20;
constexpr size_t kMaxTemplateFileBytes = size_t(16) << 20;

}  // namespace

ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;
ChatTemplate::~ChatTemplate() = default;

ChatTemplate ChatTemplate::load(const fs::path& dir, jinja::Options options) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw_input(dir.string(), "not a folder");
  ChatTemplate t;
  t.options_ = std::move(options);
  const fs::path config_path = dir / "tokenizer_config.json";
  t.config_subject_ = config_path.string();
  t.template_subject_ = t.config_subject_ + ": chat_template";
  if (fs::exists(config_path, ec)) {
    t.config_ = jinja::parse_json_ordered(read_file(config_path, kMaxConfigBytes), t.config_subject_);
    if (!t.config_.is_object()) throw_input(t.config_subject_, "expected a JSON object");
    t.have_config_ = true;
  }
  // transformers reads chat_template.jinja after the config, and its text replaces the config's
  // chat_template (tests/test_tokenization_common.py: test_chat_template_file_priority).
  const fs::path jinja_path = dir / "chat_template.jinja";
  if (fs::exists(jinja_path, ec)) {
    t.config_["chat_template"] = read_file(jinja_path, kMaxTemplateFileBytes);
    t.template_subject_ = jinja_path.string();
  }
  if (!t.have_config_ && !t.has_template()) t.config_subject_ = dir.string();
  return t;
}

ChatTemplate ChatTemplate::from_config(OrderedJson config, std::string subject, jinja::Options options) {
  if (!config.is_object()) throw_input(subject, "expected a JSON object");
  ChatTemplate t;
  t.config_ = std::move(config);
  t.config_subject_ = std::move(subject);
  t.template_subject_ = t.config_subject_ + ": chat_template";
  t.have_config_ = true;
  t.options_ = std::move(options);
  return t;
}

bool ChatTemplate::has_template() const {
  auto it = config_.find("chat_template");
  return it != config_.end() && !it->is_null();
}

std::string ChatTemplate::missing_reason() const {
  if (!have_config_) return "has neither tokenizer_config.json nor chat_template.jinja (no chat template)";
  return "has no chat_template (and there is no chat_template.jinja beside it)";
}

OrderedJson ChatTemplate::context(const ChatRequest& request) const {
  return hf_chat_context(config_, request.messages, request.tools, request.add_generation_prompt, request.variables,
                         template_subject_);
}

std::string ChatTemplate::render(const ChatRequest& request) const {
  if (!has_template()) throw_input(config_subject_, missing_reason());
  const std::string text = hf_chat_template(config_, !request.tools.is_null(), config_subject_);
  const OrderedJson context = this->context(request);
  const jinja::Template* parsed = nullptr;
  {
    std::lock_guard<std::mutex> lock(*parsed_mu_);
    auto& slot = parsed_[text];
    if (!slot) slot = std::make_unique<jinja::Template>(jinja::Template::parse(text, template_subject_, options_));
    parsed = slot.get();
  }
  return parsed->render_ordered(context);
}

std::optional<std::string> ChatTemplate::special_token(std::string_view key) const {
  const OrderedJson token = hf_special_token(config_, key, config_subject_);
  if (!token.is_string()) return std::nullopt;
  return token.get<std::string>();
}

void check_messages(const OrderedJson& messages, const std::string& subject) {
  if (!messages.is_array()) throw_input(subject, "must be a list of messages, not " + json_brief(Json::parse(messages.dump())));
  for (size_t i = 0; i < messages.size(); ++i)
    if (!messages[i].is_object())
      throw_input(subject, "message " + std::to_string(i) + " is not an object ({\"role\": ..., \"content\": ...})");
}

std::string plain_chat_text(const OrderedJson& messages, bool add_generation_prompt, const std::string& subject) {
  check_messages(messages, subject);
  std::string text;
  for (size_t i = 0; i < messages.size(); ++i) {
    const OrderedJson& m = messages[i];
    for (const char* key : {"role", "content"})
      if (!m.contains(key) || !m[key].is_string())
        throw_input(subject, "message " + std::to_string(i) + ": \"" + key +
                                 "\" must be a string (a model without a chat template gets plain text)");
    text += m["role"].get<std::string>() + ": " + m["content"].get<std::string>() + "\n";
  }
  if (add_generation_prompt) text += "assistant: ";
  return text;
}

}  // namespace ac::chat
