#include "agentcompile/server/http_server.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "agentcompile/core/error.h"

namespace ac::server {

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kTickMs = 200;  // how often a waiting connection looks at the stop flag

const char* reason_phrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    default: return "Unknown";
  }
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

// Whether a comma-separated header value holds `token` (Connection: keep-alive, Upgrade).
bool has_token(const std::string* value, std::string_view token) {
  if (!value) return false;
  std::string_view v = *value;
  while (!v.empty()) {
    const size_t comma = v.find(',');
    std::string_view item = v.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (iequals(item, token)) return true;
    if (comma == std::string_view::npos) break;
    v.remove_prefix(comma + 1);
  }
  return false;
}

// A failed request that ends the connection: answered with `status`, then closed.
struct Refusal {
  int status;
  std::string message;
};

class Connection : public HttpResponder {
 public:
  Connection(int fd, const HttpServerOptions& o, const std::atomic<bool>& stopping, const HttpErrorBody& error_body)
      : fd_(fd), o_(o), stopping_(stopping), error_body_(error_body) {}

  // Serves requests until the client closes, an error, or the server stops.
  void run(const HttpHandler& handler) {
    for (;;) {
      HttpRequest req;
      try {
        if (!read_request(req)) return;
      } catch (const Refusal& r) {
        refuse(r.status, r.message, {});
        return;
      }
      keep_alive_ = req.version == "HTTP/1.1" ? !has_token(req.header("connection"), "close")
                                             : has_token(req.header("connection"), "keep-alive");
      responded_ = streaming_ = false;
      status_ = 0;
      const auto started = Clock::now();
      try {
        handler(req, *this);
      } catch (const std::exception& e) {
        if (!responded_) {
          keep_alive_ = false;
          send(500, "application/json", error_body_(500, e.what()));
        }
      }
      if (!responded_) send(500, "application/json", error_body_(500, "the handler gave no response"));
      if (streaming_ && !broken_) send_all("0\r\n\r\n");
      if (o_.access_log)
        o_.access_log(req, status_, std::chrono::duration<double>(Clock::now() - started).count(), broken_);
      if (broken_ || !keep_alive_ || stopping_.load()) return;
    }
  }

  void send(int status, std::string_view content_type, std::string_view body, const HttpHeaders& extra) override {
    if (responded_) return;
    responded_ = true;
    status_ = status;
    std::string head = status_line(status, content_type, extra);
    head += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
    if (send_all(head)) send_all(body);
  }
  void send(int status, std::string_view content_type, std::string_view body) { send(status, content_type, body, {}); }

  bool start_stream(int status, std::string_view content_type, const HttpHeaders& extra) override {
    if (responded_) return false;
    responded_ = streaming_ = true;
    status_ = status;
    std::string head = status_line(status, content_type, extra);
    head += "Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n";
    return send_all(head);
  }

  bool write(std::string_view data) override {
    if (!streaming_ || broken_) return false;
    if (data.empty()) return true;
    char size[32];
    std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    std::string chunk = size;
    chunk.append(data);
    chunk += "\r\n";
    return send_all(chunk);
  }

  // Answers `status` and ends the connection (a refusal before any request was read).
  void refuse(int status, const std::string& message, const HttpHeaders& extra) {
    keep_alive_ = false;
    send(status, "application/json", error_body_(status, message), extra);
  }

  bool client_gone() override {
    if (broken_) return true;
    pollfd p{fd_, short(POLLIN | POLLRDHUP), 0};
    if (::poll(&p, 1, 0) <= 0) return false;
    if (p.revents & (POLLHUP | POLLERR | POLLRDHUP)) return broken_ = true;
    char c;
    if ((p.revents & POLLIN) && ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0) return broken_ = true;
    return false;
  }

 private:
  std::string status_line(int status, std::string_view content_type, const HttpHeaders& extra) {
    std::string h = "HTTP/1.1 " + std::to_string(status) + " " + reason_phrase(status) + "\r\n";
    h += "Content-Type: ";
    h.append(content_type);
    h += "\r\n";
    if (stopping_.load()) keep_alive_ = false;
    h += keep_alive_ ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
    for (const auto& [k, v] : extra) h += k + ": " + v + "\r\n";
    return h;
  }

  bool send_all(std::string_view data) {
    while (!data.empty() && !broken_) {
      const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        broken_ = true;
        break;
      }
      data.remove_prefix(size_t(n));
    }
    return !broken_;
  }

  // More bytes into buf_, waiting at most until `deadline`. False when the peer closed or an
  // error; throws 408 at the deadline when `started`, else returns false (an idle connection ends).
  bool fill(Clock::time_point deadline, bool started) {
    for (;;) {
      if (!started && stopping_.load()) return false;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) {
        if (started) throw Refusal{408, "the request was not received in time"};
        return false;
      }
      pollfd p{fd_, POLLIN, 0};
      const int r = ::poll(&p, 1, int(std::min<long long>(left, kTickMs)));
      if (r < 0 && errno != EINTR) return false;
      if (r <= 0) continue;
      if (!started && stopping_.load()) return false;  // a new request on a stopping server: not read
      char tmp[16384];
      const ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) return false;
      buf_.append(tmp, size_t(n));
      return true;
    }
  }

  // Exactly n more body bytes (taken from buf_ first).
  bool read_exact(size_t n, std::string& out, Clock::time_point deadline) {
    while (buf_.size() < n)
      if (!fill(deadline, true)) return false;
    out.append(buf_, 0, n);
    buf_.erase(0, n);
    return true;
  }

  bool read_line(std::string& line, Clock::time_point deadline) {
    size_t eol;
    while ((eol = buf_.find("\r\n")) == std::string::npos) {
      if (buf_.size() > 4096) throw Refusal{400, "malformed chunked body"};
      if (!fill(deadline, true)) return false;
    }
    line = buf_.substr(0, eol);
    buf_.erase(0, eol + 2);
    return true;
  }

  // False when the connection ended cleanly before a request; Refusal on a bad request.
  bool read_request(HttpRequest& req) {
    size_t end;
    auto deadline = Clock::now() + std::chrono::milliseconds(o_.idle_timeout_ms);
    bool started = !buf_.empty();
    if (started) deadline = Clock::now() + std::chrono::milliseconds(o_.read_timeout_ms);
    while ((end = buf_.find("\r\n\r\n")) == std::string::npos) {
      if (buf_.size() > o_.max_head_bytes) throw Refusal{431, "the request head is larger than " + std::to_string(o_.max_head_bytes) + " bytes"};
      if (!fill(deadline, started)) {
        if (started && !buf_.empty()) throw Refusal{400, "the connection closed inside the request head"};
        return false;
      }
      if (!started) {
        started = true;
        deadline = Clock::now() + std::chrono::milliseconds(o_.read_timeout_ms);
      }
    }
    if (end > o_.max_head_bytes) throw Refusal{431, "the request head is larger than " + std::to_string(o_.max_head_bytes) + " bytes"};
    std::string error;
    if (!parse_request_head(std::string_view(buf_).substr(0, end), req, error)) throw Refusal{400, error};
    buf_.erase(0, end + 4);

    const std::string* te = req.header("transfer-encoding");
    const std::string* cl = req.header("content-length");
    if (te && cl) throw Refusal{400, "both Transfer-Encoding and Content-Length"};
    const bool expects_continue = has_token(req.header("expect"), "100-continue");
    if (te) {
      if (!iequals(*te, "chunked")) throw Refusal{501, "unsupported Transfer-Encoding " + *te};
      if (expects_continue) send_all("HTTP/1.1 100 Continue\r\n\r\n");
      std::string line;
      for (;;) {
        if (!read_line(line, deadline)) throw Refusal{400, "the connection closed inside the body"};
        const std::string hex = line.substr(0, line.find(';'));
        if (hex.empty() || hex.size() > 15 || hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
          throw Refusal{400, "malformed chunk size"};
        const size_t n = std::stoull(hex, nullptr, 16);
        if (n == 0) break;
        if (req.body.size() + n > o_.max_body_bytes) throw Refusal{413, body_limit_message()};
        if (!read_exact(n + 2, req.body, deadline)) throw Refusal{400, "the connection closed inside the body"};
        if (req.body.compare(req.body.size() - 2, 2, "\r\n") != 0) throw Refusal{400, "malformed chunk"};
        req.body.resize(req.body.size() - 2);
      }
      do {  // trailer fields, ignored
        if (!read_line(line, deadline)) throw Refusal{400, "the connection closed inside the body"};
      } while (!line.empty());
    } else if (cl) {
      if (cl->empty() || cl->size() > 18 || cl->find_first_not_of("0123456789") != std::string::npos)
        throw Refusal{400, "malformed Content-Length"};
      const size_t n = std::stoull(*cl);
      if (n > o_.max_body_bytes) throw Refusal{413, body_limit_message()};
      if (expects_continue && n > buf_.size()) send_all("HTTP/1.1 100 Continue\r\n\r\n");
      if (!read_exact(n, req.body, deadline)) throw Refusal{400, "the connection closed inside the body"};
    }
    return true;
  }

  std::string body_limit_message() const {
    return "the request body is larger than the server's limit of " + std::to_string(o_.max_body_bytes) + " bytes";
  }

  int fd_;
  const HttpServerOptions& o_;
  const std::atomic<bool>& stopping_;
  const HttpErrorBody& error_body_;
  std::string buf_;
  bool keep_alive_ = true, responded_ = false, streaming_ = false, broken_ = false;
  int status_ = 0;  // of the response to the current request
};

}  // namespace

HttpServer::HttpServer(HttpServerOptions options, HttpHandler handler, HttpErrorBody error_body)
    : opts_(std::move(options)), handler_(std::move(handler)), error_body_(std::move(error_body)) {}

HttpServer::~HttpServer() {
  stop();
  wait();
}

void HttpServer::start() {
  const std::string where = opts_.host + ":" + std::to_string(opts_.port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(opts_.host.c_str(), std::to_string(opts_.port).c_str(), &hints, &found); rc != 0)
    throw_input("--host " + opts_.host, std::string("cannot be resolved: ") + ::gai_strerror(rc));
  std::string why = "no address";
  for (addrinfo* a = found; a; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 128) == 0) {
      listen_fd_ = fd;
      break;
    }
    why = std::strerror(errno);
    ::close(fd);
  }
  ::freeaddrinfo(found);
  if (listen_fd_ < 0) throw_input("--host/--port " + where, "cannot listen there: " + why);
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = addr.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port)
                                     : ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  if (::pipe2(wake_pipe_, O_CLOEXEC) != 0) throw_internal("http server", std::string("pipe: ") + std::strerror(errno));
  acceptor_ = std::thread([this] { accept_loop(); });
}

void HttpServer::stop() {
  if (stopping_.exchange(true)) return;
  if (wake_pipe_[1] >= 0) (void)!::write(wake_pipe_[1], "x", 1);
}

void HttpServer::wait() {
  if (acceptor_.joinable()) acceptor_.join();
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return open_connections_ == 0; });
  lock.unlock();
  for (int* fd : {&listen_fd_, &wake_pipe_[0], &wake_pipe_[1]})
    if (*fd >= 0) {
      ::close(*fd);
      *fd = -1;
    }
}

void HttpServer::accept_loop() {
  for (;;) {
    pollfd p[2] = {{listen_fd_, POLLIN, 0}, {wake_pipe_[0], POLLIN, 0}};
    if (::poll(p, 2, -1) < 0 && errno != EINTR) break;
    if (stopping_.load() || (p[1].revents & POLLIN)) break;
    if (!(p[0].revents & POLLIN)) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // stream pieces leave at once
    timeval send_timeout{60, 0};  // a client that stops reading cannot hold a thread forever
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof send_timeout);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (open_connections_ >= opts_.max_connections) {
        Connection(fd, opts_, stopping_, error_body_).refuse(503, "the server has too many open connections", {{"Retry-After", "1"}});
        ::close(fd);
        continue;
      }
      ++open_connections_;
    }
    std::thread([this, fd] { serve(fd); }).detach();
  }
  // The listener closes now, so that new connections are refused while the open ones finish.
  ::close(listen_fd_);
  listen_fd_ = -1;
}

void HttpServer::serve(int fd) {
  {
    Connection c(fd, opts_, stopping_, error_body_);
    try {
      c.run(handler_);
    } catch (...) {  // a connection's failure never takes the server down
    }
  }
  ::shutdown(fd, SHUT_WR);
  ::close(fd);
  std::lock_guard<std::mutex> lock(mu_);
  --open_connections_;
  cv_.notify_all();
}

}  // namespace ac::server
