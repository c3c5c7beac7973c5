#pragma once
// The render context of a chat template, built the way Hugging Face's transformers.js builds it
// (PreTrainedTokenizer.get_chat_template and apply_chat_template), so that a template rendered
// with it gives what transformers.js gives. tests/jinja/test_hf_chat_context.cpp checks it against
// that code itself.
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
// Objects are nlohmann::ordered_json, which keeps the order of object keys: templates show it when
// they iterate over a mapping or print one with tojson, so render the context with
// Template::render_ordered (with keys sorted, 68 of the 806 conformance renders differ).
#include <array>
#include <string>
#include <string_view>

#include "agentcompile/core/json.h"

namespace ac::chat {

using OrderedJson = nlohmann::ordered_json;

inline constexpr std::array<std::string_view, 7> kHfSpecialTokenKeys = {
    "bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"};

inline constexpr std::array<std::string_view, 11> kHfApplyOptions = {
    "tools",      "documents",  "chat_template", "add_generation_prompt", "tokenize",        "padding",
    "truncation", "max_length", "return_tensor", "return_dict",           "tokenizer_kwargs"};

// The template text that transformers.js renders for a tokenizer_config.json; BadInput naming
// `subject` when there is none.
std::string hf_chat_template(const OrderedJson& config, bool have_tools, const std::string& subject);

// The special token `key` of a tokenizer_config.json as the template sees it, or null when the
// template does not get it.
OrderedJson hf_special_token(const OrderedJson& config, std::string_view key, const std::string& subject);

// The context transformers.js renders the chat template with. `tools` is null when none are given;
// `kwargs` is an object (or null) of extra template variables.
OrderedJson hf_chat_context(const OrderedJson& config, const OrderedJson& messages, const OrderedJson& tools,
                            bool add_generation_prompt, const OrderedJson& kwargs, const std::string& subject);

}  // namespace ac::chat
