// agentcompile serve MODEL [options]: an OpenAI-compatible HTTP server with continuous batching.
// It listens at once (/health answers 503 while the model loads), serves until SIGINT or SIGTERM,
// then stops accepting connections, lets the running requests finish and exits 0.
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <ctime>
#include <thread>

#include "agentcompile/core/error.h"
#include "agentcompile/model/hf_config.h"
#include "agentcompile/model/model.h"
#include "agentcompile/runtime/backends.h"
#include "agentcompile/server/api_error.h"
#include "agentcompile/server/http_server.h"
#include "agentcompile/server/openai_server.h"
#include "cli/cli_common.h"
#include "cli/generation_flags.h"

namespace ac::cli {

namespace {

struct ServeCliOptions {
  std::string model, host = "127.0.0.1", api_key, served_name;
  int port = 8080;
  int max_batch = 4;
  int64_t ctx = 4096;
  int64_t prefill_chunk = 256;
  int64_t max_queue = 64;
  int64_t max_body = int64_t(16) << 20;
  GenerationFlags run;
};

void log_line(const std::string& text) {
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", std::localtime(&now));
  std::fprintf(stderr, "%s serve: %s\n", stamp, text.c_str());
  std::fflush(stderr);
}

std::string model_name(const ServeCliOptions& o) {
  if (!o.served_name.empty()) return o.served_name;
  fs::path p = fs::path(o.model).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}

int run_serve(const ServeCliOptions& o) {
  resolve_backend(o.run.backend);  // a backend that cannot run here fails before anything listens
  if (o.run.rebuild_kernels && o.run.plan.empty()) throw_input("--rebuild-kernels", "needs --plan");
  if (!fs::is_directory(o.model)) throw_input(o.model, "is not a model folder");
  if (!fs::exists(fs::path(o.model) / "tokenizer.json")) throw_input(o.model, "has no tokenizer.json (the server needs one)");

  // SIGINT and SIGTERM are taken by sigtimedwait below, in this thread only: every thread started
  // from here on inherits the blocked mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  const std::string name = model_name(o);
  server::OpenAiServer app({name, o.api_key});
  server::HttpServerOptions http_options;
  http_options.host = o.host;
  http_options.port = o.port;
  http_options.max_body_bytes = size_t(o.max_body);
  http_options.access_log = [](const server::HttpRequest& req, int status, double seconds, bool client_left) {
    char took[32];
    std::snprintf(took, sizeof took, "%.3f s", seconds);
    log_line(req.method + " " + req.path + " " + std::to_string(status) + " " + took +
             (client_left ? " (the client left)" : ""));
  };
  server::HttpServer http(
      http_options, [&app](const server::HttpRequest& req, server::HttpResponder& out) { app.handle(req, out); },
      [](int status, const std::string& message) { return server::error_body(status, message); });
  http.start();
  log_line("listening on http://" + o.host + ":" + std::to_string(http.port()) + " (model \"" + name +
           "\" loading from " + o.model + ")");

  SchedulerOptions sched;
  sched.max_batch = o.max_batch;
  sched.max_seq = o.ctx;
  sched.prefill_chunk = o.prefill_chunk;
  sched.max_queue = size_t(o.max_queue);
  const GenerationFlags flags = o.run;
  std::atomic<bool> load_done{false};
  std::exception_ptr load_error;
  std::thread loader([&] {
    try {
      auto m = server::load_served_model(
          o.model, name, sched, [flags](const Model& model, const Graph& graph, const ExecutorLimits& lim) {
            const std::optional<Plan> plan = plan_from_flags(flags, model);
            return executor_from_flags(flags, plan, graph, lim);
          },
          [flags](Model& model) { prepare_model_from_flags(flags, model); });
      log_line("ready: " + std::to_string(sched.max_batch) + " slots of " + std::to_string(m->context) +
               " positions, backend " + (o.run.plan.empty() ? resolve_backend(o.run.backend) : "of --plan " + o.run.plan));
      app.set_model(std::move(m));
    } catch (...) {
      load_error = std::current_exception();
    }
    load_done.store(true);
  });

  int signal_number = 0;
  while (signal_number <= 0 && !(load_done.load() && load_error)) {
    const timespec tick{0, 200 * 1000 * 1000};
    signal_number = sigtimedwait(&stop_signals, nullptr, &tick);
  }
  if (load_error) {
    http.stop();
    http.wait();
    loader.join();
    std::rethrow_exception(load_error);
  }
  log_line(std::string(signal_number == SIGINT ? "SIGINT" : "SIGTERM") +
           ": no new connections; finishing the requests in flight");
  http.stop();
  http.wait();  // every connection has closed: each request in flight was answered
  if (!load_done.load()) {
    log_line("stopped while the model was loading");
    std::fflush(nullptr);
    std::_Exit(0);  // the loader cannot be interrupted; nothing of it needs keeping
  }
  loader.join();
  if (server::ServedModel* m = app.model()) m->scheduler->drain();
  log_line("stopped");
  return 0;
}

}  // namespace

Subcommand add_serve(CLI::App& root) {
  auto o = std::make_shared<ServeCliOptions>();
  CLI::App* app = root.add_subcommand(
      "serve",
      "Serve a model over an OpenAI-compatible HTTP API (/v1/chat/completions, /v1/completions, /v1/models, "
      "/health, /tokenize, /detokenize, /metrics) with continuous batching; SIGINT/SIGTERM drain and exit");
  app->add_option("MODEL", o->model, "Hugging Face model folder (with tokenizer.json)")->required();
  app->add_option("--host", o->host, "Address to listen on (default 127.0.0.1)");
  app->add_option("--port", o->port, "Port to listen on (default 8080; 0: any free port)")->check(in_range(0, 65535));
  app->add_option("--max-batch", o->max_batch, "Requests running at once, one KV slot each (default 4)")
      ->check(in_range(1, 1024));
  app->add_option("--ctx", o->ctx, "Positions per request, prompt + completion (default 4096, at most the model's)")
      ->check(in_range(2, ConfigLimits::kMaxPositions));
  app->add_option("--prefill-chunk", o->prefill_chunk,
                  "Prompt tokens prefilled per step, of one prompt or several (oldest first), so running streams wait at most one chunk (default 256)")
      ->check(in_range(1, ConfigLimits::kMaxPositions));
  app->add_option("--max-queue", o->max_queue, "Requests waiting for a slot before 503 (default 64)")
      ->check(in_range(1, 1 << 20));
  app->add_option("--max-body", o->max_body, "Largest request body in bytes (default 16 MiB); larger ones get 413")
      ->check(in_range(1024, double(int64_t(1) << 32)));
  // Also from the environment: a flag's value is visible to every user of the machine (ps).
  app->add_option("--api-key", o->api_key,
                  "Require \"Authorization: Bearer KEY\" on /v1/*, /tokenize and /detokenize")
      ->envname("AGENTCOMPILE_API_KEY");
  app->add_option("--served-model-name", o->served_name, "The model's name in the API (default: the folder's name)");
  add_executor_flags(app, o->run);
  return {app, [o]() { return run_serve(*o); }};
}

}  // namespace ac::cli
