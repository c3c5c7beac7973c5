// The openai advisor: one chat-completions call per region signature. Any failure (transport,
// HTTP status, a reply that is not a chat completion, content that is not an advice object)
// falls back to the heuristic advice and says why; after a few consecutive failures the
// advisor stops calling, so an unreachable endpoint costs its timeouts only a few times.
#include <algorithm>

#include "agentcompile/core/error.h"
#include "compiler/advisor/advisors.h"
#include "compiler/advisor/llm_client.h"

namespace ac {

namespace {

// choices[0].message.content of a chat completion; empty optional (why in *why) otherwise.
std::optional<std::string> message_content(const std::string& body, std::string* why) {
  Json j;
  try {
    j = parse_json_strict(body, "chat completion", JsonLimits{32, 4096});
  } catch (const Error& e) {
    *why = "not JSON: " + e.reason();
    return std::nullopt;
  }
  if (!j.is_object() || !j.contains("choices") || !j["choices"].is_array() || j["choices"].empty()) {
    *why = "no choices";
    return std::nullopt;
  }
  const Json& c = j["choices"][0];
  if (!c.is_object() || !c.contains("message") || !c["message"].is_object() || !c["message"].contains("content") ||
      !c["message"]["content"].is_string()) {
    *why = "choices[0].message.content is not a string";
    return std::nullopt;
  }
  return c["message"]["content"].get<std::string>();
}

class OpenAiAdvisor final : public Advisor {
 public:
  explicit OpenAiAdvisor(const AdvisorConfig& c) : c_(c) {
    std::string why;
    url_ = llm::chat_completions_url(c.llm_url, &why);
    if (url_.empty()) throw_input("--llm-url", json_quote(c.llm_url) + ": " + why);
  }
  std::string name() const override { return "openai"; }

  AdviceResult advise(const AdvisorRequest& r) override {
    const Json messages = build_prompt(r);
    AdviceExchange ex = advisors::exchange_for(r, "openai");
    ex.llm_model = c_.llm_model;
    if (failures_ >= c_.max_consecutive_failures) {
      ex.status = "error: skipped after " + std::to_string(failures_) + " consecutive failures";
      return fall_back(r, ex, "openai advisor skipped after " + std::to_string(failures_) + " consecutive failures");
    }
    llm::HttpPost post;
    post.url = url_;
    post.api_key = c_.api_key;
    post.body = Json{{"model", c_.llm_model}, {"messages", messages}, {"temperature", 0}}.dump();
    post.connect_timeout_s = c_.connect_timeout_s;
    post.read_timeout_s = c_.read_timeout_s;
    post.total_timeout_s = c_.total_timeout_s;
    post.max_attempts = c_.max_attempts;
    post.backoff_s = c_.backoff_s;
    post.max_response_bytes = c_.max_response_bytes;
    const llm::HttpResult res = llm::post_json(post);
    ex.attempts = res.attempts;
    ex.elapsed_ms = res.elapsed_ms;
    if (!res.ok) {
      ++failures_;
      ex.raw_reply = res.body.substr(0, kMaxAdviceBytes);
      ex.status = "error: " + res.error;
      return fall_back(r, ex, "openai advisor failed (" + res.error + ", " + std::to_string(res.attempts) + " attempts)");
    }
    std::string why;
    std::optional<std::string> content = message_content(res.body, &why);
    if (!content) {
      ++failures_;
      ex.raw_reply = res.body.substr(0, kMaxAdviceBytes);
      ex.status = "error: not a chat completion: " + why;
      return fall_back(r, ex, "openai advisor's reply is not a chat completion (" + why + ")");
    }
    ex.raw_reply = *content;
    AdviceResult out = advisors::advice_from_content(r, *content, "openai");
    if (out.fell_back) {
      ++failures_;
      ex.status = "error: unusable reply";
    } else {
      failures_ = 0;
      ex.status = "ok";
    }
    ex.advice = out.advice.to_json();
    out.exchange = std::move(ex);
    return out;
  }

 private:
  AdviceResult fall_back(const AdvisorRequest& r, AdviceExchange ex, const std::string& why) {
    AdviceResult out = heuristic_advice(r);
    out.fell_back = true;
    out.note = why + "; heuristic order used";
    ex.advice = out.advice.to_json();
    out.exchange = std::move(ex);
    return out;
  }

  AdvisorConfig c_;
  std::string url_;
  int failures_ = 0;
};

}  // namespace

namespace advisors {

AdviceResult advice_from_content(const AdvisorRequest& r, const std::string& content, const std::string& source) {
  Advice a = validate_advice(strip_fences(content), *r.space, heuristic_family_order(r), source);
  if (a.parsed) {
    AdviceResult out;
    out.advice = std::move(a);
    if (!out.advice.rejections.empty())
      out.note = std::to_string(out.advice.rejections.size()) + " part(s) of the advice rejected";
    return out;
  }
  AdviceResult out = heuristic_advice(r);
  out.fell_back = true;
  const std::string reason = a.rejections.empty() ? "no advice" : a.rejections.front().reason;
  out.note = "the " + source + " reply is not usable advice (" + reason + "); heuristic order used";
  for (auto& rej : a.rejections) out.advice.rejections.push_back(std::move(rej));
  return out;
}

std::unique_ptr<Advisor> make_openai(const AdvisorConfig& config) { return std::make_unique<OpenAiAdvisor>(config); }

}  // namespace advisors

}  // namespace ac
