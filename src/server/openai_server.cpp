#include "agentcompile/server/openai_server.h"

#include <ctime>

#include "agentcompile/core/error.h"
#include "agentcompile/runtime/chat_prompt.h"
#include "agentcompile/server/api_error.h"
#include "agentcompile/server/openai_request.h"
#include "server/completion.h"

namespace ac::server {

namespace {

constexpr const char* kJson = "application/json";

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

// Compares in time independent of where the texts first differ.
bool same_secret(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  return diff == 0;
}

struct Route {
  const char* method;
  const char* path;
  bool needs_key;
};
constexpr Route kRoutes[] = {
    {"GET", "/health", false},           {"GET", "/metrics", false},
    {"GET", "/v1/models", true},         {"POST", "/v1/chat/completions", true},
    {"POST", "/v1/completions", true},   {"POST", "/tokenize", true},
    {"POST", "/detokenize", true},
};

}  // namespace

void OpenAiServer::set_model(std::unique_ptr<ServedModel> m) {
  model_ = std::move(m);
  ready_.store(true);
}

ServedModel& OpenAiServer::need_model() {
  ServedModel* m = model();
  if (!m) throw ApiError(503, "the model is still loading; retry later");
  return *m;
}

void OpenAiServer::handle(const HttpRequest& req, HttpResponder& out) {
  try {
    route(req, out);
  } catch (const ApiError& e) {
    HttpHeaders extra;
    if (e.status == 503) extra.emplace_back("Retry-After", "1");
    out.send(e.status, kJson, error_body(e), extra);
  } catch (const Error& e) {
    const int status = e.kind() == ErrorKind::BadInput ? 400 : 500;
    out.send(status, kJson, error_body(status, e.what()));
  } catch (const std::exception& e) {
    out.send(500, kJson, error_body(500, std::string("internal error: ") + e.what()));
  }
}

void OpenAiServer::route(const HttpRequest& req, HttpResponder& out) {
  const Route* found = nullptr;
  bool path_known = false;
  for (const Route& r : kRoutes)
    if (req.path == r.path) {
      path_known = true;
      if (req.method == r.method) found = &r;
    }
  if (!found && path_known) {
    for (const Route& r : kRoutes)
      if (req.path == r.path)
        return out.send(405, kJson, error_body(405, "use " + std::string(r.method) + " for " + req.path), {{"Allow", r.method}});
  }
  if (!found) throw ApiError(404, "no route " + req.method + " " + req.path);
  if (found->needs_key && !opts_.api_key.empty()) {
    const std::string* auth = req.header("authorization");
    const std::string prefix = "Bearer ";
    if (!auth || auth->rfind(prefix, 0) != 0 || !same_secret(auth->substr(prefix.size()), opts_.api_key))
      throw ApiError(401, "missing or wrong API key (send \"Authorization: Bearer KEY\")", "", "invalid_api_key");
  }

  const std::string path = req.path;
  if (path == "/health") {
    need_model();
    return out.send(200, kJson, "{\"status\":\"ok\"}");
  }
  if (path == "/metrics") {
    ServedModel* m = model();
    const SchedulerCounters c = m ? m->scheduler->counters() : SchedulerCounters{};
    return out.send(200, "text/plain; version=0.0.4; charset=utf-8", metrics_.render(m ? &c : nullptr));
  }
  if (path == "/v1/models") {
    Json card = {{"id", opts_.model_name}, {"object", "model"}, {"created", int64_t(std::time(nullptr))},
                 {"owned_by", "agentcompile"}};
    if (ServedModel* m = model()) card["max_model_len"] = m->context;
    return out.send(200, kJson, dump({{"object", "list"}, {"data", Json::array({card})}}));
  }
  if (path == "/v1/chat/completions" || path == "/v1/completions") {
    const CompletionRequest r = parse_completion_request(req.body, path == "/v1/chat/completions");
    if (r.model && *r.model != opts_.model_name)
      throw ApiError(404, "the model \"" + *r.model + "\" does not exist; this server serves \"" + opts_.model_name + "\"",
                     "model", "model_not_found");
    return serve_completion(need_model(), r, out, metrics_);
  }
  if (path == "/tokenize") {
    const TokenizeRequest t = parse_tokenize_request(req.body);
    ServedModel& m = need_model();
    CompletionRequest r;
    r.chat = !t.messages.is_null();
    r.messages = t.messages;
    r.prompt_text = t.prompt;
    std::vector<int32_t> ids = prompt_ids(m, r);
    if (t.prompt && !t.add_special_tokens.value_or(true)) ids = m.tokenizer->encode(*t.prompt, true);
    return out.send(200, kJson, dump({{"tokens", ids}, {"count", ids.size()}, {"max_model_len", m.context}}));
  }
  if (path == "/detokenize") {
    const std::vector<int32_t> ids = parse_detokenize_request(req.body);
    ServedModel& m = need_model();
    for (int32_t t : ids)
      if (t >= m.model->config.vocab_size)
        throw ApiError(400, "'tokens' token id " + std::to_string(t) + " is outside the vocabulary of " +
                                std::to_string(m.model->config.vocab_size) + " tokens", "tokens");
    return out.send(200, kJson, dump({{"prompt", m.tokenizer->decode(ids)}}));
  }
  throw ApiError(404, "no route " + req.method + " " + req.path);
}

}  // namespace ac::server
