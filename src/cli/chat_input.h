#pragma once
// What the chat commands read from the user: a conversation file, a tool list, and --var
// template variables, as the ordered JSON the chat template is rendered with.
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "agentcompile/chat/hf_context.h"

namespace ac::cli {

// A JSON list of message objects ({"role": ..., "content": ...}), from a file or "-" (standard
// input); object keys keep their order. BadInput naming the file otherwise.
chat::OrderedJson read_messages_file(const std::string& path);
// A JSON list of tools (function definitions), from a file or "-".
chat::OrderedJson read_tools_file(const std::string& path);
// "NAME=VALUE" items as an object of template variables: VALUE is JSON where it parses as JSON
// (enable_thinking=false is a boolean, n=3 a number), else the text as a string. BadInput on an
// item without "=" or a name that apply_chat_template keeps for itself (tools, tokenize, ...).
chat::OrderedJson parse_template_vars(const std::vector<std::string>& vars, const std::string& flag = "--var");
// Adds --var (one NAME=VALUE item per flag, repeatable) to a command.
void add_template_var_flag(CLI::App* app, std::vector<std::string>& vars);

}  // namespace ac::cli
