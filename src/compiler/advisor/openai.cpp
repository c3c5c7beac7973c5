// The openai advisor: one chat-completions call per region signature. Any failure (transport,
// HTTP status, a reply that is not a chat completion, content that is not an advice object)
// falls back to the heuristic advice and says why; after a few consecutive failures the
// advisor stops calling, so an unreachable endpoint costs its timeouts only a few times. Every
// wait ends by the request's own limit and by the config's deadline (compile's share of its
// budget); past that deadline the remaining requests get the heuristic advice without a call.
#include <algorithm>

#include "agentcompile/core/error.h"
#include "compiler/advisor/advisors.h"
#include "compiler/advisor/llm_client.h"
#include "compiler/advisor/reply.h"

namespace ac {

namespace {

using Clock = std::chrono::steady_clock;

// Less than this left before the deadline is not worth a request.
constexpr double kMinRequestS = 0.05;

class OpenAiAdvisor final : public Advisor {
 public:
  explicit OpenAiAdvisor(const AdvisorConfig& c) : c_(c) {
    std::string why;
    url_ = llm::chat_completions_url(c.llm_url, &why);
    if (url_.empty()) throw_input("--llm-url", json_quote(c.llm_url) + ": " + why);
  }
  std::string name() const override { return "openai"; }

 protected:
  AdviceResult answer(const AdvisorRequest& r) override {
    const Json messages = build_prompt(r);
    AdviceExchange ex = advisors::exchange_for(r, "openai");
    ex.llm_model = c_.llm_model;
    if (failures_ >= c_.max_consecutive_failures) {
      ex.status = "error: skipped after " + std::to_string(failures_) + " consecutive failures";
      return fall_back(r, ex, "openai advisor skipped after " + std::to_string(failures_) + " consecutive failures");
    }
    const auto now = Clock::now();
    auto deadline = now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(c_.request_timeout_s));
    if (c_.deadline) {
      if (std::chrono::duration<double>(*c_.deadline - now).count() < kMinRequestS) {
        ex.status = "error: skipped: " + c_.deadline_what + " is spent";
        return fall_back(r, ex, "openai advisor skipped: " + c_.deadline_what + " is spent");
      }
      deadline = std::min(deadline, *c_.deadline);
    }
    llm::HttpPost post;
    post.url = url_;
    post.api_key = c_.api_key;
    post.body = Json{{"model", c_.llm_model}, {"messages", messages}, {"temperature", 0}}.dump();
    post.connect_timeout_s = c_.connect_timeout_s;
    post.read_timeout_s = c_.read_timeout_s;
    post.total_timeout_s = c_.total_timeout_s;
    post.deadline = deadline;
    post.max_attempts = c_.max_attempts;
    post.backoff_s = c_.backoff_s;
    post.max_response_bytes = c_.max_response_bytes;
    const llm::HttpResult res = llm::post_json(post);
    ex.attempts = res.attempts;
    ex.elapsed_ms = res.elapsed_ms;
    // Whatever the bytes, what is kept is valid UTF-8 (records and reports are JSON).
    const std::string error = advisors::reply_text(res.error, 1024);
    if (!res.ok) {
      ++failures_;
      ex.raw_reply = advisors::reply_text(res.body);
      ex.status = "error: " + error;
      return fall_back(r, ex, "openai advisor failed (" + error + ", " + std::to_string(res.attempts) +
                                  (res.attempts == 1 ? " attempt)" : " attempts)"));
    }
    advisors::ChatReply reply = advisors::chat_reply_content(res.body);
    if (!reply.content) {
      ++failures_;
      ex.raw_reply = advisors::reply_text(res.body);
      ex.status = "error: not a chat completion: " + reply.why;
      return fall_back(r, ex, "openai advisor's reply is not a chat completion (" + reply.why + ")");
    }
    ex.raw_reply = *reply.content;
    AdviceResult out = advisors::advice_from_content(r, *reply.content, "openai");
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
  Advice a = content_advice(content, *r.space, heuristic_family_order(r), source);
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
