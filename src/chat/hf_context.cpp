#include "agentcompile/chat/hf_context.h"

#include "agentcompile/core/error.h"

namespace ac::chat {

std::string hf_chat_template(const OrderedJson& config, bool have_tools, const std::string& subject) {
  if (!config.is_object()) throw_input(subject, "is not a JSON object");
  auto it = config.find("chat_template");
  if (it == config.end() || it->is_null()) throw_input(subject, "has no chat_template");
  if (it->is_string()) return it->get<std::string>();
  if (!it->is_array()) throw_input(subject, "chat_template: is neither a string nor a list of named templates");
  const OrderedJson* chosen_default = nullptr;
  const OrderedJson* chosen_tool_use = nullptr;
  for (const OrderedJson& entry : *it) {
    if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string() || !entry.contains("template") ||
        !entry["template"].is_string())
      throw_input(subject, "chat_template: each entry must have a string \"name\" and a string \"template\"");
    // A later entry of the same name wins, as when transformers.js fills its name -> template map.
    if (entry["name"] == "default") chosen_default = &entry["template"];
    if (entry["name"] == "tool_use") chosen_tool_use = &entry["template"];
  }
  if (have_tools && chosen_tool_use) return chosen_tool_use->get<std::string>();
  if (chosen_default) return chosen_default->get<std::string>();
  throw_input(subject, "chat_template: a list of templates without one named \"default\"");
}

OrderedJson hf_special_token(const OrderedJson& config, std::string_view key, const std::string& subject) {
  auto it = config.find(std::string(key));
  if (it == config.end() || it->is_null()) return OrderedJson();
  const OrderedJson& v = *it;
  if (v.is_string()) return v.get<std::string>().empty() ? OrderedJson() : v;
  if (v.is_boolean() && !v.get<bool>()) return OrderedJson();
  if (v.is_object() && v.contains("__type") && v["__type"] == "AddedToken" && v.contains("content") &&
      v["content"].is_string())
    return v["content"].get<std::string>().empty() ? OrderedJson() : v["content"];
  throw_input(subject, std::string(key) + ": a special token must be a string or an AddedToken object, not " +
                           json_brief(Json::parse(v.dump())));
}

OrderedJson hf_chat_context(const OrderedJson& config, const OrderedJson& messages, const OrderedJson& tools,
                            bool add_generation_prompt, const OrderedJson& kwargs, const std::string& subject) {
  if (!messages.is_array()) throw_input(subject, "messages: must be a list");
  if (!tools.is_null() && !tools.is_array()) throw_input(subject, "tools: must be a list");
  if (!kwargs.is_null() && !kwargs.is_object()) throw_input(subject, "template arguments: must be an object");
  OrderedJson context = OrderedJson::object();
  context["messages"] = messages;
  context["add_generation_prompt"] = add_generation_prompt;
  context["tools"] = tools;
  context["documents"] = nullptr;
  for (std::string_view key : kHfSpecialTokenKeys) {
    OrderedJson token = hf_special_token(config, key, subject);
    if (!token.is_null()) context[std::string(key)] = std::move(token);
  }
  if (kwargs.is_object()) {
    for (auto it = kwargs.begin(); it != kwargs.end(); ++it) {
      for (std::string_view option : kHfApplyOptions)
        if (it.key() == option)
          throw_input(subject,
                      "template arguments: \"" + it.key() + "\" is an option of apply_chat_template, not a variable");
      context[it.key()] = it.value();
    }
  }
  return context;
}

}  // namespace ac::chat
