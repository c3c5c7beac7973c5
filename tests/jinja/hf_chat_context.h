#pragma once
// The render context of a chat template, built the way Hugging Face's transformers.js builds it
// (PreTrainedTokenizer.get_chat_template and apply_chat_template, as ported by @lenml/tokenizers
// 3.7.2 in src/tokenizers/tokenizers.js), so that a template rendered with it gives what
// transformers.js gives. tests/jinja/test_hf_chat_context.cpp checks it against that code.
//
// Which template (hf_chat_template):
//   - tokenizer_config.json's "chat_template" is a string: that template;
//   - it is a list of {"name": STRING, "template": STRING}: the one named "tool_use" when tools
//     are given (a list, even empty) and one has that name, else the one named "default"; none of
//     them is an error, and so is an entry whose name or template is not a string;
//   - absent or null: an error (transformers.js has no built-in default).
// The context (hf_chat_context), a JSON object whose keys come in this order:
//   messages               the conversation, as given (key order kept);
//   add_generation_prompt  true or false;
//   tools                  the tool list, or null when none is given;
//   documents              null (retrieval documents are not supported here);
//   bos_token, eos_token, unk_token, sep_token, pad_token, cls_token, mask_token:
//                          each only where tokenizer_config.json's value is "truthy": a non-empty
//                          string as it is, an AddedToken object ({"__type": "AddedToken",
//                          "content": ...}) as its content (skipped when that is empty); any
//                          other object is an error (transformers.js throws "Unknown token");
//   then each extra keyword argument (enable_thinking, date_string, reasoning_effort, ...): a key
//                          already there takes the new value in its first place, as JavaScript's
//                          object spread does.
// transformers.js consumes its own options (tools, documents, chat_template,
// add_generation_prompt, tokenize, padding, truncation, max_length, return_tensor, return_dict,
// tokenizer_kwargs) and never passes them to the template: as extra arguments they are refused.
// Stricter than transformers.js, which passes numbers and `true` through: a special token that is
// neither a string nor an AddedToken is an error.
//
// J is nlohmann::json or nlohmann::ordered_json: ordered_json keeps the order of object keys,
// which templates show when they iterate over a mapping or print one with tojson. Render with an
// ordered_json context (Template::render_ordered): with keys sorted as nlohmann::json stores them,
// 68 of the 806 conformance renders differ (tool definitions and tool-call arguments).
#include <array>
#include <string>
#include <string_view>

#include "agentcompile/core/error.h"
#include "agentcompile/core/json.h"

namespace ac::test {

inline constexpr std::array<std::string_view, 7> kHfSpecialTokenKeys = {
    "bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"};

inline constexpr std::array<std::string_view, 11> kHfApplyOptions = {
    "tools",     "documents",  "chat_template",  "add_generation_prompt", "tokenize",        "padding",
    "truncation", "max_length", "return_tensor", "return_dict",           "tokenizer_kwargs"};

// The template text that transformers.js renders for a tokenizer_config.json.
template <class J>
std::string hf_chat_template(const J& config, bool have_tools, const std::string& subject) {
  if (!config.is_object()) throw_input(subject, "is not a JSON object");
  auto it = config.find("chat_template");
  if (it == config.end() || it->is_null()) throw_input(subject, "has no chat_template");
  if (it->is_string()) return it->template get<std::string>();
  if (!it->is_array()) throw_input(subject, "chat_template: is neither a string nor a list of named templates");
  const J* chosen_default = nullptr;
  const J* chosen_tool_use = nullptr;
  for (const J& entry : *it) {
    if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string() || !entry.contains("template") ||
        !entry["template"].is_string())
      throw_input(subject, "chat_template: each entry must have a string \"name\" and a string \"template\"");
    // A later entry of the same name wins, as when transformers.js fills its name -> template map.
    if (entry["name"] == "default") chosen_default = &entry["template"];
    if (entry["name"] == "tool_use") chosen_tool_use = &entry["template"];
  }
  if (have_tools && chosen_tool_use) return chosen_tool_use->template get<std::string>();
  if (chosen_default) return chosen_default->template get<std::string>();
  throw_input(subject, "chat_template: a list of templates without one named \"default\"");
}

// The special token `key` of a tokenizer_config.json as the template sees it, or null when the
// template does not get it.
template <class J>
J hf_special_token(const J& config, std::string_view key, const std::string& subject) {
  auto it = config.find(std::string(key));
  if (it == config.end() || it->is_null()) return J();
  const J& v = *it;
  if (v.is_string()) return v.template get<std::string>().empty() ? J() : v;
  if (v.is_boolean() && !v.template get<bool>()) return J();
  if (v.is_object() && v.contains("__type") && v["__type"] == "AddedToken" && v.contains("content") &&
      v["content"].is_string())
    return v["content"].template get<std::string>().empty() ? J() : v["content"];
  throw_input(subject, std::string(key) + ": a special token must be a string or an AddedToken object, not " +
                           json_brief(Json::parse(v.dump())));
}

// The context transformers.js renders the chat template with. `tools` is null when none are given;
// `kwargs` is an object (or null) of extra template variables.
template <class J>
J hf_chat_context(const J& config, const J& messages, const J& tools, bool add_generation_prompt, const J& kwargs,
                  const std::string& subject) {
  if (!messages.is_array()) throw_input(subject, "messages: must be a list");
  if (!tools.is_null() && !tools.is_array()) throw_input(subject, "tools: must be a list");
  if (!kwargs.is_null() && !kwargs.is_object()) throw_input(subject, "template arguments: must be an object");
  J context = J::object();
  context["messages"] = messages;
  context["add_generation_prompt"] = add_generation_prompt;
  context["tools"] = tools;
  context["documents"] = nullptr;
  for (std::string_view key : kHfSpecialTokenKeys) {
    J token = hf_special_token(config, key, subject);
    if (!token.is_null()) context[std::string(key)] = std::move(token);
  }
  if (kwargs.is_object()) {
    for (auto it = kwargs.begin(); it != kwargs.end(); ++it) {
      for (std::string_view option : kHfApplyOptions)
        if (it.key() == option)
          throw_input(subject, "template arguments: \"" + it.key() + "\" is an option of apply_chat_template, not a variable");
      context[it.key()] = it.value();
    }
  }
  return context;
}

}  // namespace ac::test
