#include "server/completion.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <random>

#include "agentcompile/core/error.h"
#include "agentcompile/runtime/chat_prompt.h"
#include "agentcompile/server/api_error.h"
#include "agentcompile/server/sse.h"
#include "agentcompile/server/stop_strings.h"
#include "agentcompile/tokenizer/stream_decoder.h"
#include "server/logprobs_json.h"

namespace ac::server {

namespace {

using namespace std::chrono_literals;

std::string random_id(const char* prefix) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  char hex[33];
  std::snprintf(hex, sizeof hex, "%016llx%016llx", static_cast<unsigned long long>(rng()),
                static_cast<unsigned long long>(rng()));
  return std::string(prefix) + std::string(hex, 24);
}

// The request's sampling: generation_config.json's defaults when it sets no sampling field, else
// its fields, with the OpenAI default temperature of 1 when it sets top_p/top_k/min_p only.
SamplingParams sampling_of(const ServedModel& m, const CompletionRequest& r) {
  const bool any = r.temperature || r.top_p || r.top_k || r.min_p;
  SamplingParams s = any ? SamplingParams{} : m.defaults;
  if (any) s.temperature = r.temperature.value_or(1.0f);
  if (r.top_p) s.top_p = *r.top_p;
  if (r.top_k) s.top_k = *r.top_k;
  if (r.min_p) s.min_p = *r.min_p;
  s.seed = r.seed ? *r.seed : std::random_device{}() * 0x9e3779b97f4a7c15ull + std::random_device{}();
  return s;
}

Json usage_json(int64_t prompt, int64_t completion, int64_t cached) {
  return {{"prompt_tokens", prompt},
          {"completion_tokens", completion},
          {"total_tokens", prompt + completion},
          {"prompt_tokens_details", {{"cached_tokens", cached}}}};
}

// The response's pieces in the shape of its endpoint.
struct Shape {
  bool chat;
  std::string id, model;
  int64_t created;
  Json base(const char* object) const { return {{"id", id}, {"object", object}, {"created", created}, {"model", model}}; }
  static Json choice(const Json& finish, const Json& logprobs) {
    return {{"index", 0}, {"logprobs", logprobs}, {"finish_reason", finish}};
  }
  Json choice_delta(const std::string& text, const Json& finish, bool first, const Json& logprobs) const {
    Json c = choice(finish, logprobs);
    if (chat) {
      Json delta = Json::object();
      if (first) delta["role"] = "assistant";
      if (first || !text.empty()) delta["content"] = text;
      c["delta"] = delta;
    } else {
      c["text"] = text;
    }
    return c;
  }
  Json chunk(const std::string& text, const Json& finish, bool first, bool with_usage_field,
             const Json& logprobs = nullptr) const {
    Json j = base(chat ? "chat.completion.chunk" : "text_completion");
    j["choices"] = Json::array({choice_delta(text, finish, first, logprobs)});
    if (with_usage_field) j["usage"] = nullptr;
    return j;
  }
  Json whole(const std::string& text, const std::string& finish, const Json& usage, const Json& logprobs) const {
    Json j = base(chat ? "chat.completion" : "text_completion");
    Json c = choice(finish, logprobs);
    if (chat) c["message"] = {{"role", "assistant"}, {"content", text}};
    else c["text"] = text;
    j["choices"] = Json::array({c});
    j["usage"] = usage;
    return j;
  }
};

}  // namespace

std::vector<int32_t> prompt_ids(const ServedModel& m, const CompletionRequest& r) {
  const Tokenizer& tok = *m.tokenizer;
  try {
    if (r.chat) {
      if (!m.chat_template->has_template())
        throw ApiError(400, "the model has no chat template (" + m.chat_template->missing_reason() +
                                "); use /v1/completions");
      chat::ChatRequest request;
      request.messages = r.messages;
      request.tools = r.tools;
      request.variables = r.template_vars;
      return chat_prompt_ids(tok, *m.chat_template, request, ChatPromptOptions{});
    }
    if (r.prompt_text) return tok.add_special_tokens(tok.encode(*r.prompt_text, true));
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::BadInput) throw;
    throw ApiError(400, e.what(), r.chat ? "messages" : "prompt");
  }
  for (int32_t t : r.prompt_ids)
    if (t >= m.model->config.vocab_size)
      throw ApiError(400, "'prompt' token id " + std::to_string(t) + " is outside the vocabulary of " +
                              std::to_string(m.model->config.vocab_size) + " tokens", "prompt");
  return r.prompt_ids;
}

void serve_completion(ServedModel& m, const CompletionRequest& r, HttpResponder& out, ServerMetrics& metrics) {
  const std::vector<int32_t> prompt = prompt_ids(m, r);
  const int64_t n = int64_t(prompt.size());
  if (n == 0) throw ApiError(400, "the prompt is empty (no tokens)", r.chat ? "messages" : "prompt");
  const int64_t max_tokens = r.max_tokens.value_or(m.context - n);
  if (n + std::max<int64_t>(max_tokens, 1) > m.context)
    throw ApiError(400,
                   "this model's maximum context length is " + std::to_string(m.context) + " tokens; the request needs " +
                       std::to_string(n + std::max<int64_t>(max_tokens, 1)) + " (" + std::to_string(n) +
                       " in the prompt, " + std::to_string(std::max<int64_t>(max_tokens, 1)) +
                       " for the completion): shorten the prompt or lower max_tokens",
                   r.max_tokens ? "max_tokens" : (r.chat ? "messages" : "prompt"), "context_length_exceeded");

  RequestSpec spec;
  spec.prompt = prompt;
  spec.max_tokens = max_tokens;
  spec.sampling = sampling_of(m, r);
  if (!r.ignore_eos) spec.stop_ids = r.chat ? m.chat_stop_ids : m.eos_ids;
  spec.logprobs = r.logprobs.value_or(-1);
  std::shared_ptr<RequestHandle> h;
  try {
    h = m.scheduler->submit(std::move(spec));
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::BadInput) throw;
    throw ApiError(400, e.what());
  }
  if (!h) throw ApiError(503, "the server is busy: its request queue is full; retry later");
  // However this function ends, the request stops using its slot (a no-op once it finished).
  struct CancelAtExit {
    RequestHandle& h;
    ~CancelAtExit() { h.cancel(); }
  } cancel_at_exit{*h};

  const Shape shape{r.chat, random_id(r.chat ? "chatcmpl-" : "cmpl-"), m.name, int64_t(std::time(nullptr))};
  StreamDecoder decoder(*m.tokenizer, /*skip_special_tokens=*/true);
  StopStrings stops(r.stop);
  std::string text;      // the whole answer (not streaming)
  int64_t generated = 0;
  double last_seconds = 0;
  std::string finish;  // "stop" or "length" once decided
  // Log-probabilities wait for the chunk that carries text (or the last one).
  LogprobsJson logprobs(*m.tokenizer, r.chat);
  int64_t decoded_chars = 0;  // characters the decoder gave so far (text_offset)
  const auto take_logprobs = [&]() -> Json { return r.logprobs ? logprobs.take() : Json(nullptr); };

  // Sends a streamed piece; false when the client is gone.
  bool first_chunk = true;
  auto emit = [&](const std::string& piece) {
    if (!r.stream) {
      text += piece;
      return true;
    }
    if (piece.empty() && !(r.chat && first_chunk)) return true;  // the chat stream opens with the role
    const Json lp = piece.empty() ? Json(nullptr) : take_logprobs();
    const bool ok = out.write(sse_event(shape.chunk(piece, nullptr, first_chunk, r.include_usage, lp)));
    first_chunk = false;
    return ok;
  };
  auto give_up = [&]() {  // the client left: free the slot
    h->cancel();
    metrics.request_done("cancelled", n, generated);
  };

  if (r.stream) {
    if (!out.start_stream(200, kSseContentType) || (r.chat && !emit(""))) return give_up();
  }
  while (finish.empty()) {
    RequestUpdate u = h->take(50ms);
    for (size_t i = 0; i < u.tokens.size() && finish.empty(); ++i) {
      ++generated;
      const double s = u.token_seconds[i];
      if (generated == 1) metrics.first_token(s);
      else metrics.next_token(s - last_seconds);
      last_seconds = s;
      const std::string decoded = decoder.push(u.tokens[i]);
      if (r.logprobs && i < u.logprobs.size()) logprobs.add(u.logprobs[i], decoded_chars);
      for (unsigned char c : decoded) decoded_chars += (c & 0xC0) != 0x80;
      const std::string piece = stops.push(decoded);
      if (!emit(piece)) return give_up();
      if (stops.stopped()) {
        h->cancel();  // the rest is not wanted
        finish = "stop";
      }
    }
    if (finish.empty() && u.finished) {
      if (u.finish_reason == "error") {
        metrics.request_done("error", n, generated);
        if (!r.stream) throw ApiError(500, "generation failed: " + u.error);
        out.write(sse_event(Json::parse(error_body(500, "generation failed: " + u.error))));
        out.write(sse_done());
        return;
      }
      if (u.finish_reason == "cancelled") return give_up();  // the server is stopping
      finish = u.finish_reason;
      std::string rest = stops.push(decoder.finish());
      rest += stops.flush();
      if (stops.stopped()) finish = "stop";
      if (!emit(rest)) return give_up();
    }
    if (finish.empty() && out.client_gone()) return give_up();
  }

  metrics.request_done(finish, n, generated);
  const Json usage = usage_json(n, generated, h->stats().reused_tokens);
  if (!r.stream) {
    out.send(200, "application/json",
             shape.whole(text, finish, usage, take_logprobs()).dump(-1, ' ', false, Json::error_handler_t::replace));
    return;
  }
  Json last = shape.chunk("", finish, false, r.include_usage, logprobs.empty() ? Json(nullptr) : take_logprobs());
  if (r.chat) last["choices"][0]["delta"] = Json::object();
  out.write(sse_event(last));
  if (r.include_usage) {
    Json u = shape.base(r.chat ? "chat.completion.chunk" : "text_completion");
    u["choices"] = Json::array();
    u["usage"] = usage;
    out.write(sse_event(u));
  }
  out.write(sse_done());
}

}  // namespace ac::server
