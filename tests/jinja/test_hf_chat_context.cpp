// agentcompile/chat (hf_context.h, chat_template.h): the template choice, the render context and
// the rendered prompt of a chat template as Hugging Face's transformers.js makes them, checked
// against that code itself (apply_reference.js runs @lenml/tokenizers' apply_chat_template and
// records the context it renders with and what it renders).
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agentcompile/chat/chat_template.h"
#include "conformance_corpus.h"
#include "fixed_clock.h"

namespace ac::test {
namespace {

OrderedJson added_token(const std::string& content) {
  return {{"__type", "AddedToken"}, {"content", content}, {"lstrip", false}, {"normalized", false},
          {"rstrip", false},        {"single_word", false}};
}

const OrderedJson kUser = OrderedJson::array({{{"role", "user"}, {"content", "Hi"}}});

// Configs whose special tokens and template lists take each branch of the rules.
std::vector<std::pair<std::string, OrderedJson>> edge_configs() {
  const OrderedJson named = OrderedJson::array({{{"name", "default"}, {"template", "D{{ messages | length }}"}},
                                                {{"name", "tool_use"}, {"template", "T{{ tools | length }}"}}});
  return {
      {"added tokens, empty and null tokens",
       {{"chat_template", "{{ bos_token }}|{{ eos_token }}|{{ unk_token }}|{{ mask_token }}"},
        {"bos_token", added_token("<s>")},
        {"eos_token", "</s>"},
        {"unk_token", ""},
        {"sep_token", added_token("")},
        {"pad_token", nullptr},
        {"cls_token", false},
        {"mask_token", added_token("<mask>")}}},
      {"named templates", {{"chat_template", named}, {"eos_token", "</s>"}}},
      {"named templates, a name twice",
       {{"chat_template", OrderedJson::array({{{"name", "default"}, {"template", "first"}},
                                              {{"name", "default"}, {"template", "second"}}})}}},
      {"named templates, no default",
       {{"chat_template", OrderedJson::array({{{"name", "tool_use"}, {"template", "T"}}})}}},
      {"named templates, a name not a string",
       {{"chat_template", OrderedJson::array({{{"name", 1}, {"template", "T"}}})}}},
      {"no template", {{"bos_token", "<s>"}}},
      {"an unknown token object", {{"chat_template", "x"}, {"bos_token", {{"content", "<s>"}}}}},
  };
}

TEST(HfChatContext, ChoosesTheTemplate) {
  const auto configs = edge_configs();
  const OrderedJson& named = configs[1].second;
  EXPECT_EQ(hf_chat_template(named, false, "t"), "D{{ messages | length }}");
  EXPECT_EQ(hf_chat_template(named, true, "t"), "T{{ tools | length }}");
  EXPECT_EQ(hf_chat_template(configs[2].second, false, "t"), "second");
  EXPECT_EQ(hf_chat_template(configs[3].second, true, "t"), "T");
  EXPECT_THROW(hf_chat_template(configs[3].second, false, "t"), Error);
  EXPECT_THROW(hf_chat_template(configs[4].second, false, "t"), Error);
  EXPECT_THROW(hf_chat_template(configs[5].second, false, "t"), Error);
  EXPECT_THROW(hf_chat_template(OrderedJson{{"chat_template", {{"default", "x"}}}}, false, "t"), Error);
}

TEST(HfChatContext, BuildsTheContextInOrder) {
  const OrderedJson config = edge_configs()[0].second;
  const OrderedJson kwargs = {{"enable_thinking", false}, {"bos_token", "<override>"}};
  const OrderedJson context = hf_chat_context(config, kUser, OrderedJson(), true, kwargs, "t");
  const OrderedJson expected = {{"messages", kUser},   {"add_generation_prompt", true}, {"tools", nullptr},
                                {"documents", nullptr}, {"bos_token", "<override>"},    {"eos_token", "</s>"},
                                {"mask_token", "<mask>"}, {"enable_thinking", false}};
  EXPECT_EQ(context.dump(), expected.dump());
  EXPECT_THROW(hf_chat_context(config, kUser, OrderedJson(), true, OrderedJson{{"tokenize", true}}, "t"), Error);
  EXPECT_THROW(hf_chat_context(edge_configs()[6].second, kUser, OrderedJson(), true, OrderedJson(), "t"), Error);
  try {
    hf_chat_context(config, OrderedJson("not a list"), OrderedJson(), true, OrderedJson(), "model.json");
    ADD_FAILURE() << "messages that are not a list were accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadInput);
    EXPECT_EQ(std::string(e.what()), "model.json: messages: must be a list");
  }
}

// One request of apply_reference.js and what agentcompile/chat says about it.
struct Probe {
  std::string label;
  OrderedJson request;
  std::optional<std::string> template_text;  // nullopt: ours refuses the config
  OrderedJson context;
  std::optional<std::string> output;  // ChatTemplate::render, or nullopt where it fails:
  std::string error;
};

Probe probe(std::string label, const OrderedJson& config, const OrderedJson& messages, const OrderedJson& tools,
            bool agp, const OrderedJson& kwargs) {
  Probe p;
  p.label = std::move(label);
  p.request = {{"config", config}, {"messages", messages}, {"add_generation_prompt", agp}};
  if (!tools.is_null()) p.request["tools"] = tools;
  if (!kwargs.is_null()) p.request["kwargs"] = kwargs;
  try {
    p.template_text = hf_chat_template(config, !tools.is_null(), p.label);
    p.context = hf_chat_context(config, messages, tools, agp, kwargs, p.label);
  } catch (const Error&) {
    p.template_text.reset();
    return p;
  }
  // The product's path: the same config through ChatTemplate, rendered with the fixed clock.
  const chat::ChatTemplate chat_template = chat::ChatTemplate::from_config(config, p.label, fixed_clock_options());
  chat::ChatRequest r{messages, tools, agp, kwargs.is_null() ? OrderedJson::object() : kwargs};
  EXPECT_EQ(chat_template.context(r), p.context) << p.label;
  try {
    p.output = chat_template.render(r);
  } catch (const Error& e) {
    p.error = e.what();
    EXPECT_EQ(e.kind(), ErrorKind::BadInput) << p.label << ": " << p.error;
    EXPECT_EQ(p.error.find('\n'), std::string::npos) << p.label << ": " << p.error;
  }
  return p;
}

// Every conformance template x conversation, and the edge configs above, through the real
// apply_chat_template: the same template, the same context with its keys in the same order, and
// the same prompt from ChatTemplate::render (or both fail).
TEST(HfChatContext, MatchesTransformersJs) {
  std::vector<Probe> probes;
  const OrderedJson conversations = conformance_conversations();
  for (const ConformanceTemplate& t : conformance_templates()) {
    const OrderedJson config = conformance_config(t);
    for (const OrderedJson& c : conversations.at("cases")) {
      const OrderedJson tools =
          c.contains("tools") ? conversations["tool_sets"].at(c["tools"].get<std::string>()) : OrderedJson();
      for (bool agp : {true, false})
        probes.push_back(probe(t.name + " x " + c["name"].get<std::string>() + (agp ? "" : " (no generation prompt)"),
                               config, c.at("messages"), tools, agp, c.value("kwargs", OrderedJson())));
    }
  }
  const OrderedJson some_tools = conversations["tool_sets"]["weather"];
  for (const auto& [label, config] : edge_configs()) {
    probes.push_back(probe(label, config, kUser, OrderedJson(), true, OrderedJson()));
    probes.push_back(probe(label + ", with tools", config, kUser, some_tools, false, OrderedJson()));
    probes.push_back(probe(label + ", with an empty tool list", config, kUser, OrderedJson::array(), false,
                           OrderedJson{{"bos_token", "<kw>"}, {"extra", {{"b", 1}, {"a", 2}}}}));
  }

  OrderedJson request = {{"now", kFixedNow}, {"cases", OrderedJson::array()}};
  for (const Probe& p : probes) request["cases"].push_back(p.request);
  const OrderedJson answers = run_node_batch("apply_reference.js", request);
  ASSERT_TRUE(answers.is_array() && answers.size() == probes.size());
  int checked = 0;
  for (size_t i = 0; i < probes.size(); ++i) {
    const Probe& p = probes[i];
    const OrderedJson& a = answers[i];
    if (!p.template_text) {
      // Ours refuses: transformers.js must refuse too, before rendering anything.
      EXPECT_TRUE(a.contains("error") && !a.contains("context")) << p.label << ": transformers.js accepts it";
      continue;
    }
    ASSERT_TRUE(a.contains("template") && a.contains("context")) << p.label << ": " << a.dump().substr(0, 300);
    EXPECT_EQ(a["template"].get<std::string>(), *p.template_text) << p.label;
    // ordered_json compares objects key by key in order, numbers by value (JavaScript has no 1.0).
    EXPECT_EQ(a["context"], p.context) << p.label;
    if (a.contains("output")) {
      EXPECT_TRUE(p.output) << p.label << ": transformers.js renders it, ours fails: " << p.error;
      if (p.output) {
        EXPECT_EQ(*p.output, a["output"].get<std::string>()) << p.label;
      }
    } else {
      EXPECT_FALSE(p.output) << p.label << ": transformers.js fails (" << a.value("error", "") << "), ours renders";
    }
    ++checked;
  }
  EXPECT_GT(checked, 700);
}

}  // namespace
}  // namespace ac::test
