// agentcompile chat-template MODEL --messages F.json [--tools T.json] [--no-generation-prompt]
// [--var NAME=VALUE ...]: the prompt the model's chat template renders, exactly as written.
#include <cstdio>

#include "agentcompile/chat/chat_template.h"
#include "agentcompile/core/error.h"
#include "cli/chat_input.h"
#include "cli/cli_common.h"

namespace ac::cli {

namespace {

struct ChatTemplateOptions {
  std::string model, messages, tools;
  bool no_generation_prompt = false;
  std::vector<std::string> vars;
};

int run_chat_template(const ChatTemplateOptions& o) {
  if (o.messages == "-" && o.tools == "-") throw_input("--tools", "only one of --messages and --tools can be read from stdin");
  const chat::ChatTemplate tpl = chat::ChatTemplate::load(o.model);
  if (!tpl.has_template()) throw_input(tpl.config_subject(), tpl.missing_reason());
  chat::ChatRequest request;
  request.variables = parse_template_vars(o.vars);
  request.messages = read_messages_file(o.messages);
  if (!o.tools.empty()) request.tools = read_tools_file(o.tools);
  request.add_generation_prompt = !o.no_generation_prompt;
  const std::string prompt = tpl.render(request);
  std::fwrite(prompt.data(), 1, prompt.size(), stdout);
  return 0;
}

}  // namespace

Subcommand add_chat_template(CLI::App& root) {
  auto o = std::make_shared<ChatTemplateOptions>();
  CLI::App* app = root.add_subcommand(
      "chat-template",
      "Print the prompt a model's chat template makes of a conversation (as Hugging Face's apply_chat_template "
      "with tokenize=False; no newline added)");
  app->add_option("MODEL", o->model, "Model folder, or any folder with tokenizer_config.json or chat_template.jinja")
      ->required();
  app->add_option("--messages", o->messages,
                  "JSON file with the conversation: a list of {\"role\": ..., \"content\": ...} (- for standard input)")
      ->required();
  app->add_option("--tools", o->tools, "JSON file with a list of tool definitions (- for standard input)");
  app->add_flag("--no-generation-prompt", o->no_generation_prompt,
                "Render add_generation_prompt=false (no opening of the assistant's turn)");
  add_template_var_flag(app, o->vars);
  return {app, [o]() { return run_chat_template(*o); }};
}

}  // namespace ac::cli
