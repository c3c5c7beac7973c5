#pragma once
// The OpenAI-compatible API over the HTTP server: /v1/chat/completions, /v1/completions (whole or
// streamed as server-sent events), /v1/models, /health, /tokenize, /detokenize and /metrics.
// Requests that need the model get 503 until it is loaded; with an API key, /v1/*, /tokenize and
// /detokenize need "Authorization: Bearer KEY". Errors have the OpenAI shape (api_error.h).
#include <atomic>
#include <memory>
#include <string>

#include "agentcompile/server/http_server.h"
#include "agentcompile/server/metrics.h"
#include "agentcompile/server/served_model.h"

namespace ac::server {

struct OpenAiServerOptions {
  std::string model_name;  // what /v1/models lists and requests must name (when they name one)
  std::string api_key;     // empty: no key needed
};

class OpenAiServer {
 public:
  explicit OpenAiServer(OpenAiServerOptions options) : opts_(std::move(options)) {}
  // From now on requests are served with `m`.
  void set_model(std::unique_ptr<ServedModel> m);
  ServedModel* model() { return ready_.load() ? model_.get() : nullptr; }
  void handle(const HttpRequest& req, HttpResponder& out);
  ServerMetrics& metrics() { return metrics_; }

 private:
  void route(const HttpRequest& req, HttpResponder& out);
  ServedModel& need_model();

  OpenAiServerOptions opts_;
  std::unique_ptr<ServedModel> model_;
  std::atomic<bool> ready_{false};
  ServerMetrics metrics_;
};

}  // namespace ac::server
