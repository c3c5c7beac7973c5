// ChatTemplate::load: where a model folder's template comes from (tokenizer_config.json, or
// chat_template.jinja beside it, which wins as in transformers), and its errors.
#include <gtest/gtest.h>

#include <fstream>
#include <thread>
#include <vector>

#include "agentcompile/chat/chat_template.h"
#include "agentcompile/core/error.h"
#include "node_batch.h"

namespace ac::test {
namespace {

void write(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

const chat::ChatRequest kHi{OrderedJson::array({{{"role", "user"}, {"content", "Hi"}}}), OrderedJson(), true,
                            OrderedJson::object()};

// The error of `f`, which must be a one-line BadInput.
template <class F>
std::string input_error(F f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadInput) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(ChatTemplateFolder, ConfigTemplateAndSpecialTokens) {
  TempDir tmp;
  write(tmp.path() / "tokenizer_config.json",
        R"({"chat_template": "{{ bos_token }}{% for m in messages %}{{ m.role }}={{ m.content }};{% endfor %})"
        R"({% if add_generation_prompt %}>{% endif %}{{ extra }}", "bos_token": {"__type": "AddedToken", "content": "<s>"},)"
        R"( "eos_token": "</s>"})");
  const chat::ChatTemplate t = chat::ChatTemplate::load(tmp.path());
  ASSERT_TRUE(t.has_template());
  EXPECT_EQ(t.render(kHi), "<s>user=Hi;>");
  chat::ChatRequest r = kHi;
  r.add_generation_prompt = false;
  r.variables = {{"extra", "!"}};
  EXPECT_EQ(t.render(r), "<s>user=Hi;!");
  EXPECT_EQ(t.special_token("eos_token"), "</s>");
  EXPECT_EQ(t.special_token("bos_token"), "<s>");
  EXPECT_EQ(t.special_token("pad_token"), std::nullopt);
  EXPECT_EQ(t.template_subject(), (tmp.path() / "tokenizer_config.json").string() + ": chat_template");
}

TEST(ChatTemplateFolder, JinjaFileWinsOverTheConfig) {
  TempDir tmp;
  write(tmp.path() / "tokenizer_config.json", R"({"chat_template": "config", "eos_token": "</s>"})");
  write(tmp.path() / "chat_template.jinja", "file {{ eos_token }}");
  const chat::ChatTemplate t = chat::ChatTemplate::load(tmp.path());
  EXPECT_EQ(t.render(kHi), "file </s>");
  EXPECT_EQ(t.template_subject(), (tmp.path() / "chat_template.jinja").string());
  // A named list in the config is replaced too.
  write(tmp.path() / "tokenizer_config.json", R"({"chat_template": [{"name": "default", "template": "d"}]})");
  EXPECT_EQ(chat::ChatTemplate::load(tmp.path()).render(kHi), "file ");
  // The file alone is enough.
  fs::remove(tmp.path() / "tokenizer_config.json");
  EXPECT_EQ(chat::ChatTemplate::load(tmp.path()).render(kHi), "file ");
}

TEST(ChatTemplateFolder, NamedTemplatesFollowTools) {
  TempDir tmp;
  write(tmp.path() / "tokenizer_config.json",
        R"({"chat_template": [{"name": "default", "template": "D"}, {"name": "tool_use", "template": "T{{ tools | length }}"}]})");
  const chat::ChatTemplate t = chat::ChatTemplate::load(tmp.path());
  EXPECT_EQ(t.render(kHi), "D");
  chat::ChatRequest r = kHi;
  r.tools = OrderedJson::array({{{"type", "function"}}});
  EXPECT_EQ(t.render(r), "T1");
}

// The server renders one ChatTemplate from many connection threads at once, while its cache of
// parsed templates is still being filled (the first request of each named template parses it):
// every render gives its template's text. Unguarded, this crashed the server under load.
TEST(ChatTemplateFolder, ConcurrentRendersShareTheCache) {
  TempDir tmp;
  write(tmp.path() / "tokenizer_config.json",
        R"({"chat_template": [{"name": "default", "template": "{% for m in messages %}{{ m.role }}:{{ m.content }}{% endfor %}"},)"
        R"( {"name": "tool_use", "template": "T{{ tools | length }}"}]})");
  chat::ChatRequest with_tools = kHi;
  with_tools.tools = OrderedJson::array({{{"type", "function"}}});
  for (int round = 0; round < 20; ++round) {
    const chat::ChatTemplate t = chat::ChatTemplate::load(tmp.path());  // an empty cache each round
    std::vector<std::string> got(16);
    std::vector<std::thread> threads;
    for (size_t i = 0; i < got.size(); ++i)
      threads.emplace_back([&, i] {
        for (int k = 0; k < 20; ++k) got[i] = t.render(i % 2 ? with_tools : kHi);
      });
    for (std::thread& th : threads) th.join();
    for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], i % 2 ? "T1" : "user:Hi") << "round " << round << ", thread " << i;
  }
}

TEST(ChatTemplateFolder, Errors) {
  TempDir tmp;
  const std::string config = (tmp.path() / "tokenizer_config.json").string();
  // No files: loads, but has no template; rendering says why.
  const chat::ChatTemplate none = chat::ChatTemplate::load(tmp.path());
  EXPECT_FALSE(none.has_template());
  EXPECT_NE(input_error([&] { none.render(kHi); }).find("neither tokenizer_config.json nor chat_template.jinja"),
            std::string::npos);
  write(config, R"({"eos_token": "</s>"})");
  EXPECT_EQ(input_error([&] { chat::ChatTemplate::load(tmp.path()).render(kHi); }),
            config + ": has no chat_template (and there is no chat_template.jinja beside it)");
  write(config, R"({"chat_template": "x",)");
  EXPECT_NE(input_error([&] { chat::ChatTemplate::load(tmp.path()); }).find(config + ": invalid JSON"), std::string::npos);
  write(config, R"([1])");
  EXPECT_EQ(input_error([&] { chat::ChatTemplate::load(tmp.path()); }), config + ": expected a JSON object");
  // A template that raises: its message, one line, with the line and column.
  write(config, "{\"chat_template\": \"\\n  {{ raise_exception('No chat\\\\nhere') }}\"}");
  EXPECT_EQ(input_error([&] { chat::ChatTemplate::load(tmp.path()).render(kHi); }),
            config + ": chat_template: line 2, column 6: raise_exception: No chat here");
  // A syntax error.
  write(config, R"({"chat_template": "{{ messages }"})");
  EXPECT_NE(input_error([&] { chat::ChatTemplate::load(tmp.path()).render(kHi); }).find(config + ": chat_template: line 1, column"),
            std::string::npos);
  EXPECT_NE(input_error([&] { chat::ChatTemplate::load(tmp.path() / "absent"); }).find("not a folder"), std::string::npos);
  // Messages must be a list of objects.
  EXPECT_EQ(input_error([] { chat::check_messages(OrderedJson::array({"hi"}), "m.json"); }),
            "m.json: message 0 is not an object ({\"role\": ..., \"content\": ...})");
  EXPECT_NE(input_error([] { chat::check_messages(OrderedJson::object(), "m.json"); }).find("must be a list"),
            std::string::npos);
}

TEST(ChatTemplateFolder, PlainFallbackText) {
  const OrderedJson msgs = OrderedJson::array({{{"role", "system"}, {"content", "Be brief."}},
                                               {{"role", "user"}, {"content", "Hi <|im_end|>"}}});
  EXPECT_EQ(chat::plain_chat_text(msgs, true, "m"), "system: Be brief.\nuser: Hi <|im_end|>\nassistant: ");
  EXPECT_EQ(chat::plain_chat_text(msgs, false, "m"), "system: Be brief.\nuser: Hi <|im_end|>\n");
  EXPECT_EQ(input_error([] { chat::plain_chat_text(OrderedJson::array({{{"role", "user"}}}), true, "m"); }),
            "m: message 0: \"content\" must be a string (a model without a chat template gets plain text)");
}

}  // namespace
}  // namespace ac::test
