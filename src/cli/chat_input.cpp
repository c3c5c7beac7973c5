#include "cli/chat_input.h"

#include "agentcompile/chat/chat_template.h"
#include "agentcompile/core/error.h"
#include "agentcompile/jinja/template.h"
#include "cli/cli_common.h"

namespace ac::cli {

namespace {

// A conversation or tool list far beyond any model's context (a million positions of 64 bytes).
constexpr size_t kMaxChatInputBytes = size_t(64) << 20;

chat::OrderedJson read_json_list(const std::string& path, const char* what) {
  const std::string name = path == "-" ? "stdin" : path;
  const std::string text = read_text_input(path, kMaxChatInputBytes, "a chat input");
  chat::OrderedJson j = jinja::parse_json_ordered(text, name);
  if (!j.is_array()) throw_input(name, std::string("must be a JSON list of ") + what);
  return j;
}

}  // namespace

chat::OrderedJson read_messages_file(const std::string& path) {
  chat::OrderedJson messages = read_json_list(path, "messages");
  chat::check_messages(messages, path == "-" ? "stdin" : path);
  return messages;
}

chat::OrderedJson read_tools_file(const std::string& path) { return read_json_list(path, "tools"); }

chat::OrderedJson parse_template_vars(const std::vector<std::string>& vars, const std::string& flag) {
  chat::OrderedJson out = chat::OrderedJson::object();
  for (const std::string& item : vars) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw_input(flag, json_quote(item) + ": expected NAME=VALUE (VALUE is JSON where it parses, else text)");
    const std::string name = item.substr(0, eq), value = item.substr(eq + 1);
    for (std::string_view option : chat::kHfApplyOptions)
      if (name == option)
        throw_input(flag, "\"" + name + "\" is an option of apply_chat_template, not a template variable");
    try {
      out[name] = jinja::parse_json_ordered(value, flag);
    } catch (const Error&) {
      try {
        (void)chat::OrderedJson(value).dump();  // throws on invalid UTF-8, which no template could print
      } catch (const nlohmann::json::exception&) {
        throw_input(flag, name + ": the value is not valid UTF-8");
      }
      out[name] = value;  // not JSON: the text itself
    }
  }
  return out;
}

void add_template_var_flag(CLI::App* app, std::vector<std::string>& vars) {
  app->add_option("--var", vars,
                  "Template variable NAME=VALUE (repeatable); VALUE is JSON where it parses as JSON "
                  "(enable_thinking=false), else text")
      ->allow_extra_args(false);  // one item per --var, so that MODEL may follow it
}

}  // namespace ac::cli
