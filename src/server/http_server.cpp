#include "agentcompile/server/http_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/chunk_encode.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/rfc7230.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <sstream>
#include <thread>

#include "agentcompile/core/error.h"

namespace ac::server {

namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using boost::system::error_code;
using Clock = std::chrono::steady_clock;

constexpr auto kTick = std::chrono::milliseconds(200);  // how often a waiting connection looks at the stop flag
constexpr auto kWriteTimeout = std::chrono::seconds(60);  // a client that stops reading cannot hold a thread forever
constexpr size_t kReadSize = 16384;

// Beast's string_view is Boost's.
std::string text(beast::string_view s) { return std::string(s.data(), s.size()); }
beast::string_view view(std::string_view s) { return {s.data(), s.size()}; }

// Whether a comma-separated header value holds `token` (Expect: 100-continue).
bool has_token(const http::fields& f, http::field name, std::string_view token) {
  const auto it = f.find(name);
  if (it == f.end()) return false;
  for (const auto item : http::token_list(it->value()))
    if (beast::iequals(item, view(token))) return true;
  return false;
}

void close_on_exec(int fd) { ::fcntl(fd, F_SETFD, FD_CLOEXEC); }

// The head of a response: Content-Type, Connection, then the handler's own fields.
template <class Body>
http::response<Body> response_head(int status, std::string_view content_type, const HttpHeaders& extra, bool keep_alive) {
  http::response<Body> res;
  res.version(11);
  res.result(unsigned(status));
  res.set(http::field::content_type, view(content_type));
  res.set(http::field::connection, keep_alive ? "keep-alive" : "close");
  for (const auto& [k, v] : extra) res.insert(k, v);
  return res;
}

http::response<http::string_body> whole_response(int status, std::string_view content_type, std::string_view body,
                                                 const HttpHeaders& extra, bool keep_alive) {
  auto res = response_head<http::string_body>(status, content_type, extra, keep_alive);
  res.body() = std::string(body);
  res.prepare_payload();
  return res;
}

// A message's bytes as they go on the wire.
template <class Message>
std::string serialized(const Message& m) {
  std::ostringstream out;
  out << m;
  return out.str();
}

// The completion handler of every operation on a connection: one type, so that each Asio and
// Beast operation is compiled once (their templates are most of this file's compile time).
struct Done {
  bool* done;
  error_code* ec;
  size_t* transferred;
  void operator()(error_code e, size_t n) const {
    *ec = e;
    *transferred = n;
    *done = true;
  }
};

// A failed request that ends the connection: answered with `status`, then closed.
struct Refusal {
  int status;
  std::string message;
};

// One accepted connection: its own io_context and socket (declared after it, so closed first).
struct Link {
  net::io_context ioc{1};
  tcp::socket socket{ioc};
};

// Serves the requests of one connection on its own thread. Beast's synchronous reads and writes
// cannot time out, so each one is an asynchronous operation run here, on this thread, by the
// connection's io_context (complete()): the run loop wakes at least every tick and cancels the
// operation past its deadline (a timeout, answered 408 while a request is being read) or, while
// waiting for a new request, once the server stops.
class Connection : public HttpResponder {
 public:
  Connection(Link& link, const HttpServerOptions& o, const std::atomic<bool>& stopping, const HttpErrorBody& error_body)
      : link_(link), o_(o), stopping_(stopping), error_body_(error_body) {}

  // Serves requests until the client closes, an error, or the server stops.
  void run(const HttpHandler& handler) {
    for (;;) {
      HttpRequest req;
      try {
        if (!read_request(req)) return;
      } catch (const Refusal& r) {
        keep_alive_ = false;
        send(r.status, "application/json", error_body_(r.status, r.message), {});
        return;
      }
      responded_ = streaming_ = false;
      status_ = 0;
      const auto started = Clock::now();
      try {
        handler(req, *this);
      } catch (const std::exception& e) {
        if (!responded_) {
          keep_alive_ = false;
          send(500, "application/json", error_body_(500, e.what()), {});
        }
      }
      if (!responded_) send(500, "application/json", error_body_(500, "the handler gave no response"), {});
      if (streaming_ && !broken_) write_out(http::make_chunk_last());
      if (o_.access_log)
        o_.access_log(req, status_, std::chrono::duration<double>(Clock::now() - started).count(), broken_);
      if (broken_ || !keep_alive_ || stopping_.load()) return;
    }
  }

  void send(int status, std::string_view content_type, std::string_view body, const HttpHeaders& extra) override {
    if (responded_) return;
    responded_ = true;
    status_ = status;
    write_bytes(serialized(whole_response(status, content_type, body, extra, keep_alive())));
  }

  bool start_stream(int status, std::string_view content_type, const HttpHeaders& extra) override {
    if (responded_) return false;
    responded_ = streaming_ = true;
    status_ = status;
    auto res = response_head<http::empty_body>(status, content_type, extra, keep_alive());
    res.set(http::field::cache_control, "no-cache");
    res.chunked(true);
    return write_bytes(serialized(res.base()));
  }

  bool write(std::string_view data) override {
    if (!streaming_ || broken_) return false;
    if (data.empty()) return true;  // an empty chunk would end the body
    return write_out(http::make_chunk(net::buffer(data.data(), data.size())));
  }

  bool client_gone() override {
    if (broken_) return true;
    const int fd = link_.socket.native_handle();
    pollfd p{fd, short(POLLIN | POLLRDHUP), 0};
    if (::poll(&p, 1, 0) <= 0) return false;
    if (p.revents & (POLLHUP | POLLERR | POLLRDHUP)) return broken_ = true;
    char c;
    if ((p.revents & POLLIN) && ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0) return broken_ = true;
    return false;
  }

 private:
  bool keep_alive() {
    if (stopping_.load()) keep_alive_ = false;
    return keep_alive_;
  }

  // Beast's chunk framing around a piece, copied out whole.
  template <class Buffers>
  bool write_out(const Buffers& buffers) {
    std::string bytes(net::buffer_size(buffers), '\0');
    net::buffer_copy(net::buffer(bytes), buffers);
    return write_bytes(bytes);
  }

  // Once a write fails, the client is gone and nothing more is sent.
  bool write_bytes(std::string_view bytes) {
    if (!broken_ && !complete(Clock::now() + kWriteTimeout, false, [&](Done done) {
          net::async_write(link_.socket, net::buffer(bytes.data(), bytes.size()), done);
        }))
      broken_ = true;
    return !broken_;
  }

  // Runs the operation `start` begins (given its completion handler) until it completes. Past
  // `deadline`, or once the server stops when `idle`, it is cancelled (timed_out_ tells which).
  // True when the operation succeeded.
  template <class Start>
  bool complete(Clock::time_point deadline, bool idle, Start&& start, size_t* transferred = nullptr) {
    bool done = false;
    error_ = {};
    timed_out_ = false;
    size_t unused = 0;
    start(Done{&done, &error_, transferred ? transferred : &unused});
    link_.ioc.restart();
    bool cancelled = false;
    while (!done) {
      const auto now = Clock::now();
      if (!cancelled && (now >= deadline || (idle && stopping_.load()))) {
        timed_out_ = now >= deadline;
        cancelled = true;
        error_code ignored;
        link_.socket.cancel(ignored);
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
      link_.ioc.run_for(std::clamp<std::chrono::milliseconds>(left, std::chrono::milliseconds(1), kTick));
    }
    return !error_;
  }

  // False when the connection ended cleanly before a request; Refusal on a bad request.
  bool read_request(HttpRequest& req) {
    if (buffer_.size() == 0) {  // idle between requests: wait for the next one's first bytes
      if (stopping_.load()) return false;
      size_t n = 0;
      const auto idle_until = Clock::now() + std::chrono::milliseconds(o_.idle_timeout_ms);
      if (!complete(idle_until, true, [&](Done done) { link_.socket.async_read_some(buffer_.prepare(kReadSize), done); }, &n))
        return false;  // closed, idle too long, or the server stops
      buffer_.commit(n);
      if (stopping_.load()) return false;  // a new request on a stopping server: not read
    }
    // The head and the body: one deadline from the request's first byte.
    const auto deadline = Clock::now() + std::chrono::milliseconds(o_.read_timeout_ms);
    http::request_parser<http::string_body> parser;
    parser.header_limit(std::uint32_t(std::min<size_t>(o_.max_head_bytes, UINT32_MAX)));
    parser.body_limit(std::uint64_t(o_.max_body_bytes));  // a larger Content-Length fails with the head
    if (!complete(deadline, false, [&](Done done) { http::async_read_header(link_.socket, buffer_, parser, done); }))
      throw refusal("head");
    const auto& head = parser.get();
    if (head.version() != 10 && head.version() != 11) throw Refusal{400, "unsupported HTTP version"};
    req.method = text(head.method_string());
    req.target = text(head.target());
    if (req.target.front() != '/') throw Refusal{400, "the target must be a path"};
    for (unsigned char c : req.target)
      if (c >= 0x7f) throw Refusal{400, "malformed target"};
    const size_t q = req.target.find('?');
    req.path = req.target.substr(0, q);
    req.query = q == std::string::npos ? "" : req.target.substr(q + 1);
    req.version = head.version() == 11 ? "HTTP/1.1" : "HTTP/1.0";
    for (const auto& f : head) {
      std::string name = text(f.name_string());
      std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return char(std::tolower(c)); });
      req.headers.emplace_back(std::move(name), text(f.value()));
    }
    keep_alive_ = head.keep_alive();
    // Beast refuses Content-Length with Transfer-Encoding, but reads a Transfer-Encoding other
    // than chunked as no body at all: what would follow is refused rather than taken for the next request.
    if (const std::string* te = req.header("transfer-encoding"); te && !beast::iequals(*te, "chunked"))
      throw Refusal{501, "unsupported Transfer-Encoding " + *te};
    if (!parser.is_done()) {
      if (has_token(head, http::field::expect, "100-continue") && buffer_.size() == 0) {
        static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
        write_bytes(kContinue);
      }
      if (!complete(deadline, false, [&](Done done) { http::async_read(link_.socket, buffer_, parser, done); }))
        throw refusal("body");
    }
    req.body = std::move(parser.get().body());
    return true;
  }

  // The answer to a failed read of the request's `part` (error_).
  Refusal refusal(const char* part) const {
    if (timed_out_) return {408, "the request was not received in time"};
    if (error_ == http::error::header_limit)
      return {431, "the request head is larger than " + std::to_string(o_.max_head_bytes) + " bytes"};
    if (error_ == http::error::body_limit)
      return {413, "the request body is larger than the server's limit of " + std::to_string(o_.max_body_bytes) + " bytes"};
    if (error_.category() == http::make_error_code(http::error::bad_method).category() &&
        error_ != http::error::partial_message && error_ != http::error::end_of_stream)
      return {400, std::string("malformed request ") + part + ": " + error_.message()};
    return {400, std::string("the connection closed inside the request ") + part};
  }

  Link& link_;
  const HttpServerOptions& o_;
  const std::atomic<bool>& stopping_;
  const HttpErrorBody& error_body_;
  beast::flat_buffer buffer_;  // bytes read and not yet parsed (a pipelined request)
  error_code error_;           // of the last operation
  bool timed_out_ = false;
  bool keep_alive_ = true, responded_ = false, streaming_ = false, broken_ = false;
  int status_ = 0;  // of the response to the current request
};

}  // namespace

struct HttpServer::Impl {
  Impl(HttpServerOptions o, HttpHandler h, HttpErrorBody e)
      : opts(std::move(o)), handler(std::move(h)), error_body(std::move(e)) {}

  // Accepts the next connection (on the acceptor's thread), each into its own io_context.
  void accept_next() {
    auto link = std::make_shared<Link>();
    acceptor.async_accept(link->socket, [this, link](error_code ec) {
      if (ec == net::error::operation_aborted || !acceptor.is_open()) return;  // stop() closed it
      if (!ec && !stopping.load()) admit(std::move(link));
      accept_next();
    });
  }

  void admit(std::shared_ptr<Link> link) {
    error_code ignored;
    close_on_exec(link->socket.native_handle());
    link->socket.set_option(tcp::no_delay(true), ignored);  // stream pieces leave at once
    {
      std::lock_guard<std::mutex> lock(mu);
      if (open_connections >= opts.max_connections) {
        // Answered here without waiting: a short response into a new socket's empty send buffer.
        link->socket.non_blocking(true, ignored);
        auto res = whole_response(503, "application/json", error_body(503, "the server has too many open connections"),
                                  {{"Retry-After", "1"}}, false);
        net::write(link->socket, net::buffer(serialized(res)), ignored);
        return;
      }
      ++open_connections;
    }
    std::thread([this, link] { serve(*link); }).detach();
  }

  void serve(Link& link) {
    {
      Connection c(link, opts, stopping, error_body);
      try {
        c.run(handler);
      } catch (...) {  // a connection's failure never takes the server down
      }
    }
    error_code ignored;
    link.socket.shutdown(tcp::socket::shutdown_send, ignored);
    link.socket.close(ignored);
    std::lock_guard<std::mutex> lock(mu);
    --open_connections;
    cv.notify_all();
  }

  HttpServerOptions opts;
  HttpHandler handler;
  HttpErrorBody error_body;
  net::io_context ioc{1};  // the acceptor's
  tcp::acceptor acceptor{ioc};
  std::thread thread;
  std::atomic<bool> stopping{false};
  std::mutex mu;
  std::condition_variable cv;
  int open_connections = 0;
};

HttpServer::HttpServer(HttpServerOptions options, HttpHandler handler, HttpErrorBody error_body)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(handler), std::move(error_body))) {}

HttpServer::~HttpServer() {
  stop();
  wait();
}

void HttpServer::start() {
  const HttpServerOptions& o = impl_->opts;
  const std::string where = o.host + ":" + std::to_string(o.port);
  error_code ec;
  tcp::resolver resolver(impl_->ioc);
  const auto found = resolver.resolve(o.host, std::to_string(o.port),
                                      tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec) throw_input("--host " + o.host, "cannot be resolved: " + ec.message());
  tcp::acceptor& a = impl_->acceptor;
  std::string why = "no address";
  for (const auto& entry : found) {
    error_code ignored;
    a.open(entry.endpoint().protocol(), ec);
    if (!ec) a.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) a.bind(entry.endpoint(), ec);
    if (!ec) a.listen(128, ec);
    if (!ec) break;
    why = ec.message();
    a.close(ignored);
  }
  if (!a.is_open()) throw_input("--host/--port " + where, "cannot listen there: " + why);
  close_on_exec(a.native_handle());
  port_ = a.local_endpoint().port();
  impl_->accept_next();
  impl_->thread = std::thread([this] { impl_->ioc.run(); });
}

void HttpServer::stop() {
  if (impl_->stopping.exchange(true)) return;
  // The listener closes now (on its own thread), so that new connections are refused while the
  // open ones finish.
  net::post(impl_->ioc, [a = &impl_->acceptor] {
    error_code ignored;
    a->close(ignored);
  });
}

void HttpServer::wait() {
  if (impl_->thread.joinable()) impl_->thread.join();
  std::unique_lock<std::mutex> lock(impl_->mu);
  impl_->cv.wait(lock, [&] { return impl_->open_connections == 0; });
}

}  // namespace ac::server
