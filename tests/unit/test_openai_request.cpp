// Request bodies are checked at the edge: types, ranges, roles, n = 1, stop strings, nesting depth;
// each error is a 400 naming the field.
#include <gtest/gtest.h>

#include "agentcompile/server/api_error.h"
#include "agentcompile/server/openai_request.h"

using namespace ac::server;

namespace {

// The ApiError the body raises (status 0 when none).
ApiError error_of(const std::string& body, bool chat = true) {
  try {
    parse_completion_request(body, chat);
  } catch (const ApiError& e) {
    return e;
  }
  return ApiError(0, "");
}

TEST(OpenAiRequest, ChatFieldsAreRead) {
  const CompletionRequest r = parse_completion_request(
      R"({"model": "m", "messages": [{"role": "system", "content": "s"},
          {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}],
          "max_tokens": 16, "temperature": 0.5, "top_p": 0.9, "top_k": -1, "min_p": 0.1, "seed": 7,
          "stop": ["x", "yz"], "stream": true, "stream_options": {"include_usage": true}, "n": 1,
          "chat_template_kwargs": {"enable_thinking": false}})",
      true);
  EXPECT_EQ(*r.model, "m");
  ASSERT_EQ(r.messages.size(), 2u);
  EXPECT_EQ(r.messages[1]["content"], "ab");
  EXPECT_EQ(*r.max_tokens, 16);
  EXPECT_FLOAT_EQ(*r.temperature, 0.5f);
  EXPECT_EQ(*r.top_k, 0);
  EXPECT_EQ(*r.seed, 7u);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"x", "yz"}));
  EXPECT_TRUE(r.stream && r.include_usage);
  EXPECT_EQ(r.template_vars["enable_thinking"], false);
}

TEST(OpenAiRequest, CompletionPromptAsTextOrIds) {
  EXPECT_EQ(*parse_completion_request(R"({"prompt": "hi"})", false).prompt_text, "hi");
  EXPECT_EQ(*parse_completion_request(R"({"prompt": ["hi"]})", false).prompt_text, "hi");
  EXPECT_EQ(parse_completion_request(R"({"prompt": [1, 2, 3]})", false).prompt_ids, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(error_of(R"({"prompt": ["a", "b"]})", false).param, "prompt");
  EXPECT_EQ(error_of(R"({"prompt": [1, -2]})", false).param, "prompt");
  EXPECT_EQ(error_of(R"({})", false).param, "prompt");
  EXPECT_EQ(error_of(R"({"prompt": "hi", "logprobs": 21})", false).param, "logprobs");
  EXPECT_EQ(error_of(R"({"prompt": "hi", "logprobs": -1})", false).param, "logprobs");
  EXPECT_EQ(error_of(R"({"prompt": "hi", "logprobs": true})", false).param, "logprobs");
  EXPECT_EQ(error_of(R"({"prompt": "hi", "echo": true})", false).param, "echo");
  EXPECT_EQ(error_of(R"({"prompt": "hi", "suffix": "x"})", false).param, "suffix");
  // Their "off" values are accepted (clients send them by default).
  EXPECT_FALSE(parse_completion_request(R"({"prompt": "hi", "logprobs": null, "echo": false, "suffix": ""})", false).logprobs);
  EXPECT_FALSE(parse_completion_request(R"({"messages": [{"role": "user", "content": "x"}], "logprobs": false})", true).logprobs);
}

TEST(OpenAiRequest, IgnoreEosAsVllmSpellsIt) {
  EXPECT_TRUE(parse_completion_request(R"({"prompt": "hi", "ignore_eos": true})", false).ignore_eos);
  EXPECT_FALSE(parse_completion_request(R"({"prompt": "hi"})", false).ignore_eos);
  EXPECT_EQ(error_of(R"({"prompt": "hi", "ignore_eos": 1})", false).param, "ignore_eos");
}

TEST(OpenAiRequest, LogprobsAsEachEndpointSpellsThem) {
  const auto chat = [](const char* extra) {
    return parse_completion_request(std::string(R"({"messages": [{"role": "user", "content": "x"}], )") + extra + "}", true).logprobs;
  };
  EXPECT_EQ(chat(R"("logprobs": true)"), 0);
  EXPECT_EQ(chat(R"("logprobs": true, "top_logprobs": 5)"), 5);
  EXPECT_EQ(chat(R"("logprobs": true, "top_logprobs": 20)"), 20);
  EXPECT_EQ(chat(R"("logprobs": false, "top_logprobs": null)"), std::nullopt);
  EXPECT_EQ(parse_completion_request(R"({"prompt": "hi", "logprobs": 0})", false).logprobs, 0);
  EXPECT_EQ(parse_completion_request(R"({"prompt": "hi", "logprobs": 3})", false).logprobs, 3);
}

TEST(OpenAiRequest, EveryMalformedFieldIsA400NamingIt) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": -1})", "max_tokens"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 0})", "max_tokens"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": "9"})", "max_tokens"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_completion_tokens": 1.5})", "max_completion_tokens"},
      {R"({"messages": [{"role": "user", "content": "x"}], "temperature": "hot"})", "temperature"},
      {R"({"messages": [{"role": "user", "content": "x"}], "temperature": -0.1})", "temperature"},
      {R"({"messages": [{"role": "user", "content": "x"}], "top_p": 0})", "top_p"},
      {R"({"messages": [{"role": "user", "content": "x"}], "min_p": 1})", "min_p"},
      {R"({"messages": [{"role": "user", "content": "x"}], "top_k": -2})", "top_k"},
      {R"({"messages": [{"role": "user", "content": "x"}], "n": 2})", "n"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stop": 3})", "stop"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stop": ["a","b","c","d","e"]})", "stop"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stop": [""]})", "stop"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stream": "yes"})", "stream"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stream_options": {"include_usage": true}})", "stream_options"},
      {R"({"messages": [{"role": "wizard", "content": "x"}]})", "messages[0].role"},
      {R"({"messages": [{"content": "x"}]})", "messages[0].role"},
      {R"({"messages": [{"role": "user"}]})", "messages[0].content"},
      {R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})", "messages[0].content"},
      {R"({"messages": []})", "messages"},
      {R"({"messages": "hi"})", "messages"},
      {R"({"model": "m"})", "messages"},
      {R"({"messages": [{"role": "user", "content": "x"}], "model": 3})", "model"},
      {R"({"messages": [{"role": "user", "content": "x"}], "logprobs": 1})", "logprobs"},
      {R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})", "top_logprobs"},
      {R"({"messages": [{"role": "user", "content": "x"}], "logprobs": true, "top_logprobs": 21})", "top_logprobs"},
      {R"({"messages": [{"role": "user", "content": "x"}], "logprobs": true, "top_logprobs": "2"})", "top_logprobs"},
  };
  for (const auto& [body, param] : cases) {
    const ApiError e = error_of(body);
    EXPECT_EQ(e.status, 400) << body;
    EXPECT_EQ(e.param, param) << body << ": " << e.message;
    EXPECT_NE(e.message.find(param), std::string::npos) << e.message;
  }
}

TEST(OpenAiRequest, MalformedOrDeepJsonIsRefusedWhileParsing) {
  EXPECT_EQ(error_of("{\"messages\": [").status, 400);
  EXPECT_EQ(error_of("[1, 2]").status, 400);
  EXPECT_EQ(error_of("").status, 400);
  std::string deep = "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"x\": ";
  for (int i = 0; i < 100000; ++i) deep += "[";
  const ApiError e = error_of(deep);
  EXPECT_EQ(e.status, 400);
  EXPECT_NE(e.message.find("nested deeper"), std::string::npos) << e.message;
}

TEST(OpenAiRequest, ErrorBodyHasTheOpenAiShape) {
  const auto j = nlohmann::json::parse(error_body(401, "wrong key", "", "invalid_api_key"));
  EXPECT_EQ(j["error"]["message"], "wrong key");
  EXPECT_EQ(j["error"]["type"], "authentication_error");
  EXPECT_TRUE(j["error"]["param"].is_null());
  EXPECT_EQ(j["error"]["code"], "invalid_api_key");
}

}  // namespace
