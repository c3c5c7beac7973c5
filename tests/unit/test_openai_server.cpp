// The API's routing before any model work: 503 with Retry-After while the model loads, 401 without
// the key, 404 for unknown routes and models, 405 for a wrong method, /v1/models, /metrics.
#include <gtest/gtest.h>

#include "agentcompile/core/json.h"
#include "agentcompile/server/openai_server.h"

using namespace ac;
using namespace ac::server;

namespace {

struct Recorded : HttpResponder {
  int status = 0;
  std::string type, body;
  HttpHeaders headers;
  void send(int s, std::string_view t, std::string_view b, const HttpHeaders& extra) override {
    status = s;
    type = t;
    body = b;
    headers = extra;
  }
  bool start_stream(int, std::string_view, const HttpHeaders&) override { return false; }
  bool write(std::string_view) override { return false; }
  bool client_gone() override { return false; }
  std::string header(const std::string& name) const {
    for (const auto& [k, v] : headers)
      if (k == name) return v;
    return "";
  }
};

Recorded call(OpenAiServer& s, const std::string& method, const std::string& path, const std::string& body = "",
              const std::string& key = "k") {
  HttpRequest r;
  r.method = method;
  r.path = r.target = path;
  r.version = "HTTP/1.1";
  r.body = body;
  if (!key.empty()) r.headers.emplace_back("authorization", "Bearer " + key);
  Recorded out;
  s.handle(r, out);
  return out;
}

TEST(OpenAiServer, RoutesAuthAndLoading) {
  OpenAiServer s({"tiny", "k"});
  const std::string chat = R"({"model": "tiny", "messages": [{"role": "user", "content": "hi"}]})";

  Recorded r = call(s, "GET", "/health", "", "");
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.header("Retry-After"), "1");
  EXPECT_EQ(Json::parse(r.body)["error"]["type"], "service_unavailable_error");
  EXPECT_EQ(call(s, "POST", "/v1/chat/completions", chat).status, 503);
  EXPECT_EQ(call(s, "POST", "/tokenize", R"({"prompt": "x"})").status, 503);

  r = call(s, "GET", "/v1/models");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(Json::parse(r.body)["data"][0]["id"], "tiny");

  r = call(s, "POST", "/v1/chat/completions", chat, "wrong");
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(Json::parse(r.body)["error"]["code"], "invalid_api_key");
  EXPECT_EQ(call(s, "GET", "/v1/models", "", "").status, 401);
  EXPECT_EQ(call(s, "GET", "/metrics", "", "").status, 200);  // open, like /health

  r = call(s, "GET", "/v2/nothing");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(Json::parse(r.body)["error"]["type"], "not_found_error");
  r = call(s, "POST", "/v1/chat/completions", R"({"model": "other", "messages": [{"role": "user", "content": "x"}]})");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(Json::parse(r.body)["error"]["param"], "model");
  r = call(s, "GET", "/v1/chat/completions");
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.header("Allow"), "POST");
  // The body is checked before the model is needed.
  EXPECT_EQ(call(s, "POST", "/v1/chat/completions", "{oops").status, 400);

  r = call(s, "GET", "/metrics");
  EXPECT_NE(r.body.find("agentcompile_requests_total{finish_reason=\"stop\"} 0"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("# TYPE agentcompile_time_to_first_token_seconds histogram"), std::string::npos);
  EXPECT_NE(r.body.find("agentcompile_queue_depth 0"), std::string::npos);
}

TEST(ServerMetrics, HistogramsAreCumulative) {
  ServerMetrics m;
  m.first_token(0.003);
  m.first_token(0.3);
  m.request_done("length", 10, 4);
  const std::string text = m.render(nullptr);
  EXPECT_NE(text.find("agentcompile_time_to_first_token_seconds_bucket{le=\"0.005\"} 1"), std::string::npos) << text;
  EXPECT_NE(text.find("agentcompile_time_to_first_token_seconds_bucket{le=\"0.5\"} 2"), std::string::npos);
  EXPECT_NE(text.find("agentcompile_time_to_first_token_seconds_bucket{le=\"+Inf\"} 2"), std::string::npos);
  EXPECT_NE(text.find("agentcompile_time_to_first_token_seconds_count 2"), std::string::npos);
  EXPECT_NE(text.find("agentcompile_requests_total{finish_reason=\"length\"} 1"), std::string::npos);
  EXPECT_NE(text.find("agentcompile_prompt_tokens_total 10"), std::string::npos);
  EXPECT_NE(text.find("agentcompile_generation_tokens_total 4"), std::string::npos);
}

}  // namespace
