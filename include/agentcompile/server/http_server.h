#pragma once
// An HTTP/1.1 server on Boost.Beast (parsing, chunked coding) and Boost.Asio (sockets, timeouts):
// one thread per connection, persistent connections, Content-Length and chunked request bodies,
// whole or chunked (streamed) responses, a body size limit, read timeouts, and a graceful stop
// (no new connections; each open one ends after the response it is writing). Both are
// header-only, so the binary carried alone to the GPU machine needs no shared library for them;
// Debian's cpp-httplib is only a shared library (libcpp-httplib.so, with brotli and libssl.so).
// This header leaves Boost out: only http_server.cpp compiles it.
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ac::server {

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method, target, path, query;  // target = path + "?" + query
  std::string version;                      // "HTTP/1.1"
  HttpHeaders headers;                      // names lower-cased, in order
  std::string body;
  // The first header of that (lower-case) name, or nullptr.
  const std::string* header(std::string_view name) const;
};

// The answering side of one request: send() once, or start_stream() and then write() pieces
// (sent as HTTP chunks as they come).
class HttpResponder {
 public:
  virtual ~HttpResponder() = default;
  virtual void send(int status, std::string_view content_type, std::string_view body, const HttpHeaders& extra = {}) = 0;
  virtual bool start_stream(int status, std::string_view content_type, const HttpHeaders& extra = {}) = 0;
  // False once the client is gone.
  virtual bool write(std::string_view data) = 0;
  // True when the client closed its end of the connection (checked without blocking).
  virtual bool client_gone() = 0;
};

using HttpHandler = std::function<void(const HttpRequest&, HttpResponder&)>;
// The body of an error the server answers itself (413, 400 for a malformed request, 503 when it
// has too many connections): (status, message) -> JSON text.
using HttpErrorBody = std::function<std::string(int, const std::string&)>;

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                    // 0: any free port (port() tells which)
  size_t max_body_bytes = size_t(16) << 20;
  size_t max_head_bytes = size_t(64) << 10;
  int max_connections = 256;
  int read_timeout_ms = 30000;        // for the rest of a request once it started
  int idle_timeout_ms = 60000;        // between requests of a persistent connection
  // Called after each response: the request, its status, seconds from the request to the end of
  // the response, and whether the client left before the end.
  std::function<void(const HttpRequest&, int, double, bool)> access_log;
};

class HttpServer {
 public:
  HttpServer(HttpServerOptions options, HttpHandler handler, HttpErrorBody error_body);
  ~HttpServer();  // stop() and wait()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and listens (BadInput naming --host/--port when it cannot), then accepts on a thread.
  void start();
  int port() const { return port_; }
  // No new connections; open ones close once idle or after the response they are writing.
  void stop();
  // Returns when every connection has closed.
  void wait();

 private:
  struct Impl;  // the listener, its thread and the open connections' count, on Asio
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

}  // namespace ac::server
