// A small HTTP/1.1 client for one JSON POST: POSIX sockets with non-blocking connect and poll
// timeouts, TLS through the statically linked OpenSSL (system trust store, SNI, host name
// check), Content-Length, chunked and close-delimited bodies, a size limit, a per-attempt
// deadline and an overall one, and retries with doubling backoff for transport errors other
// than timeouts, 429 and 5xx.
//
// Debian's cpp-httplib is a shared library (libcpp-httplib.so pulling in brotli, zlib and
// libssl.so.3); the binary must run on the GPU machine, which has none of them
// (../shared/GPU.md), so the advisor speaks HTTP itself.
#include "compiler/advisor/llm_client.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

namespace ac::llm {

namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxHeaderBytes = 64 * 1024;

struct ParsedUrl {
  std::string scheme, host, path;
  int port = 0;
  bool default_port = true;
};

bool parse_url(const std::string& url, ParsedUrl* out, std::string* error) {
  auto fail = [&](const std::string& why) {
    if (error) *error = why;
    return false;
  };
  std::string rest;
  if (url.rfind("http://", 0) == 0) out->scheme = "http", rest = url.substr(7);
  else if (url.rfind("https://", 0) == 0) out->scheme = "https", rest = url.substr(8);
  else return fail("not an http:// or https:// URL");
  const size_t slash = rest.find('/');
  const std::string authority = rest.substr(0, slash);
  out->path = slash == std::string::npos ? "" : rest.substr(slash);
  if (authority.find('@') != std::string::npos) return fail("credentials in the URL are not accepted (use AGENTCOMPILE_LLM_API_KEY)");
  for (unsigned char c : out->path)
    if (c <= 0x20 || c >= 0x7f || c == '?' || c == '#') return fail("the path may not hold a query, a fragment, spaces or control characters");
  std::string port;
  if (!authority.empty() && authority.front() == '[') {  // [IPv6]:port
    const size_t close = authority.find(']');
    if (close == std::string::npos) return fail("unterminated IPv6 address");
    out->host = authority.substr(1, close - 1);
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') return fail("bad host");
      port = authority.substr(close + 2);
    }
  } else {
    const size_t colon = authority.find(':');
    out->host = authority.substr(0, colon);
    if (colon != std::string::npos) port = authority.substr(colon + 1);
  }
  if (out->host.empty()) return fail("no host");
  for (char c : out->host)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == ':')) return fail("bad host");
  out->port = out->scheme == "https" ? 443 : 80;
  if (!port.empty()) {
    if (port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos) return fail("bad port");
    out->port = std::stoi(port);
    out->default_port = false;
    if (out->port < 1 || out->port > 65535) return fail("bad port");
  }
  return true;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

std::string ssl_error_text() {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "TLS error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return buf;
}

// Milliseconds until `t`, at least 0.
int ms_until(Clock::time_point t) {
  const auto d = std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()).count();
  return int(std::max<int64_t>(0, std::min<int64_t>(d, 1 << 30)));
}

class TransportError : public std::runtime_error {
 public:
  TransportError(const std::string& what, bool retry) : std::runtime_error(what), retry_(retry) {}
  bool retry() const { return retry_; }

 private:
  bool retry_;
};

// One connection: a socket, optionally wrapped in TLS. Every wait is bounded by the attempt's
// deadline and by the per-read timeout.
class Connection {
 public:
  Connection(double read_timeout_s, Clock::time_point deadline)
      : read_timeout_ms_(int(std::max(1.0, read_timeout_s * 1000))), deadline_(deadline) {}
  // Separate from the constructor so the destructor releases what a failed open left.
  void open(const ParsedUrl& u, double connect_timeout_s) {
    connect_tcp(u, Clock::now() + std::chrono::milliseconds(int64_t(std::max(1.0, connect_timeout_s * 1000))));
    if (u.scheme == "https") start_tls(u.host);
  }
  ~Connection() {
    if (ssl_) SSL_free(ssl_);
    if (ctx_) SSL_CTX_free(ctx_);
    if (fd_ >= 0) ::close(fd_);
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  void write_all(const std::string& data) {
    size_t off = 0;
    while (off < data.size()) {
      if (ssl_) {
        const int n = with_sigpipe_blocked([&] { return SSL_write(ssl_, data.data() + off, int(data.size() - off)); });
        if (n > 0) {
          off += size_t(n);
          continue;
        }
        wait_tls(n, "writing");
      } else {
        const ssize_t n = ::send(fd_, data.data() + off, data.size() - off, MSG_NOSIGNAL);
        if (n > 0) {
          off += size_t(n);
          continue;
        }
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
          throw TransportError(std::string("send: ") + std::strerror(errno), true);
        wait(POLLOUT, "writing");
      }
    }
  }

  // Up to `cap` bytes; 0 at the end of the stream.
  size_t read_some(char* buf, size_t cap) {
    for (;;) {
      if (ssl_) {
        const int n = SSL_read(ssl_, buf, int(cap));
        if (n > 0) return size_t(n);
        const int err = SSL_get_error(ssl_, n);
        if (err == SSL_ERROR_ZERO_RETURN) return 0;
        if (err == SSL_ERROR_SYSCALL && ERR_peek_error() == 0) return 0;  // closed without close_notify
        wait_tls(n, "reading");
      } else {
        const ssize_t n = ::recv(fd_, buf, cap, 0);
        if (n >= 0) return size_t(n);
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
          throw TransportError(std::string("recv: ") + std::strerror(errno), true);
        wait(POLLIN, "reading");
      }
    }
  }

 private:
  template <class Fn>
  static int with_sigpipe_blocked(const Fn& fn) {
    // SSL_write on a socket the peer closed raises SIGPIPE; keep it off this thread and drop it.
    sigset_t pipe, old;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, &old);
    sigset_t before;
    sigpending(&before);
    const int r = fn();
    sigset_t after;
    sigpending(&after);
    if (sigismember(&after, SIGPIPE) && !sigismember(&before, SIGPIPE)) {
      const timespec zero{0, 0};
      sigtimedwait(&pipe, nullptr, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    return r;
  }

  void connect_tcp(const ParsedUrl& u, Clock::time_point connect_deadline) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    const int rc = ::getaddrinfo(u.host.c_str(), std::to_string(u.port).c_str(), &hints, &res);
    if (rc != 0) throw TransportError("resolve " + u.host + ": " + gai_strerror(rc), true);
    std::string last = "no address";
    bool timed_out = false;
    for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
      const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
      int r = ::connect(fd, a->ai_addr, a->ai_addrlen);
      if (r != 0 && errno == EINPROGRESS) {
        pollfd p{fd, POLLOUT, 0};
        r = ::poll(&p, 1, ms_until(std::min(connect_deadline, deadline_)));
        if (r == 1) {
          int err = 0;
          socklen_t len = sizeof err;
          ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
          r = err == 0 ? 0 : -1;
          errno = err;
        } else {
          r = -1;
          errno = ETIMEDOUT;
          timed_out = true;
        }
      }
      if (r == 0) {
        fd_ = fd;
        break;
      }
      last = std::strerror(errno);
      ::close(fd);
    }
    ::freeaddrinfo(res);
    if (fd_ < 0) throw TransportError("connect " + u.host + ":" + std::to_string(u.port) + ": " + last, !timed_out);
  }

  void start_tls(const std::string& host) {
    ERR_clear_error();
    ctx_ = SSL_CTX_new(TLS_client_method());
    if (!ctx_) throw TransportError("TLS: " + ssl_error_text(), false);
    SSL_CTX_set_min_proto_version(ctx_, TLS1_2_VERSION);
    if (SSL_CTX_set_default_verify_paths(ctx_) != 1) throw TransportError("TLS: no trust store: " + ssl_error_text(), false);
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
    ssl_ = SSL_new(ctx_);
    if (!ssl_) throw TransportError("TLS: " + ssl_error_text(), false);
    // An IP literal is matched against the certificate's IP addresses and gets no SNI (RFC 6066).
    in6_addr ip;
    const bool literal = ::inet_pton(AF_INET, host.c_str(), &ip) == 1 || ::inet_pton(AF_INET6, host.c_str(), &ip) == 1;
    const int named = literal ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), host.c_str())
                              : SSL_set1_host(ssl_, host.c_str()) && SSL_set_tlsext_host_name(ssl_, host.c_str());
    if (named != 1) throw TransportError("TLS: cannot check host name " + host, false);
    SSL_set_fd(ssl_, fd_);
    for (;;) {
      const int r = with_sigpipe_blocked([&] { return SSL_connect(ssl_); });
      if (r == 1) return;
      const int err = SSL_get_error(ssl_, r);
      if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) {
        const long verify = SSL_get_verify_result(ssl_);
        if (verify != X509_V_OK)
          throw TransportError(std::string("TLS: certificate not trusted: ") + X509_verify_cert_error_string(verify), false);
        throw TransportError("TLS handshake failed: " + ssl_error_text(), true);
      }
      wait(err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, "the TLS handshake");
    }
  }

  void wait_tls(int ret, const char* what) {
    const int err = SSL_get_error(ssl_, ret);
    if (err == SSL_ERROR_WANT_READ) return wait(POLLIN, what);
    if (err == SSL_ERROR_WANT_WRITE) return wait(POLLOUT, what);
    throw TransportError(std::string("TLS error while ") + what + ": " + ssl_error_text(), true);
  }

  void wait(short events, const char* what) {
    const int budget = ms_until(deadline_);
    // A server that let a whole timeout pass will most likely do it again: timeouts are not retried.
    if (budget == 0) throw TransportError(std::string("deadline passed while ") + what, false);
    pollfd p{fd_, events, 0};
    const int r = ::poll(&p, 1, std::min(budget, read_timeout_ms_));
    if (r == 0)
      throw TransportError(std::string(budget <= read_timeout_ms_ ? "deadline passed" : "timed out") + " while " + what, false);
    if (r < 0 && errno != EINTR) throw TransportError(std::string("poll: ") + std::strerror(errno), true);
  }

  int fd_ = -1;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  int read_timeout_ms_;
  Clock::time_point deadline_;
};

struct Response {
  int status = 0;
  std::string body;
};

class TooLarge : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Reads a response; the body is capped at max_body bytes (TooLarge beyond).
Response read_response(Connection& c, size_t max_body) {
  std::string buf;
  char chunk[16384];
  size_t header_end = std::string::npos;
  while ((header_end = buf.find("\r\n\r\n")) == std::string::npos) {
    if (buf.size() > kMaxHeaderBytes) throw TransportError("response headers larger than 64 KiB", false);
    const size_t n = c.read_some(chunk, sizeof chunk);
    if (n == 0) throw TransportError("connection closed before the response headers", true);
    buf.append(chunk, n);
  }
  const std::string head = buf.substr(0, header_end);
  std::string rest = buf.substr(header_end + 4);
  Response r;
  // Status line: HTTP/1.x SSS reason
  const size_t eol = head.find("\r\n");
  const std::string status_line = head.substr(0, eol);
  if (status_line.rfind("HTTP/1.", 0) != 0 || status_line.size() < 12 || status_line[8] != ' ')
    throw TransportError("not an HTTP/1.x response", false);
  const std::string code = status_line.substr(9, 3);
  if (code.find_first_not_of("0123456789") != std::string::npos) throw TransportError("bad HTTP status line", false);
  r.status = std::stoi(code);
  bool chunked = false;
  long long length = -1;
  size_t pos = eol == std::string::npos ? head.size() : eol + 2;
  while (pos < head.size()) {
    size_t e = head.find("\r\n", pos);
    if (e == std::string::npos) e = head.size();
    const std::string line = head.substr(pos, e - pos);
    pos = e + 2;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string name = lower(line.substr(0, colon));
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    if (name == "content-length") {
      if (value.empty() || value.size() > 18 || value.find_first_not_of("0123456789") != std::string::npos)
        throw TransportError("bad Content-Length", false);
      length = std::stoll(value);
      if (size_t(length) > max_body) throw TooLarge("declared " + value + " bytes");
    } else if (name == "transfer-encoding" && lower(value).find("chunked") != std::string::npos) {
      chunked = true;
    }
  }
  auto more = [&]() {
    const size_t n = c.read_some(chunk, sizeof chunk);
    rest.append(chunk, n);
    return n;
  };
  if (chunked) {
    for (;;) {
      size_t e;
      while ((e = rest.find("\r\n")) == std::string::npos) {
        if (rest.size() > 64) throw TransportError("bad chunk header", false);
        if (more() == 0) throw TransportError("connection closed inside a chunked body", true);
      }
      std::string size_text = rest.substr(0, rest.find_first_of(";\r"));
      if (size_text.empty() || size_text.size() > 15 || size_text.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
        throw TransportError("bad chunk size", false);
      const size_t size = std::stoull(size_text, nullptr, 16);
      rest.erase(0, e + 2);
      if (size == 0) break;
      if (r.body.size() + size > max_body) throw TooLarge("chunked body");
      while (rest.size() < size + 2)
        if (more() == 0) throw TransportError("connection closed inside a chunk", true);
      r.body.append(rest, 0, size);
      rest.erase(0, size + 2);
    }
    return r;
  }
  if (length >= 0) {
    while (rest.size() < size_t(length))
      if (more() == 0) throw TransportError("connection closed before the whole body", true);
    r.body = rest.substr(0, size_t(length));
    return r;
  }
  // Close-delimited body.
  for (;;) {
    if (rest.size() > max_body) throw TooLarge("body");
    if (more() == 0) break;
  }
  r.body = std::move(rest);
  return r;
}

bool retryable(int status) { return status == 429 || status >= 500; }

}  // namespace

std::string chat_completions_url(const std::string& base, std::string* error) {
  ParsedUrl u;
  if (!parse_url(base, &u, error)) return "";
  std::string path = u.path;
  while (!path.empty() && path.back() == '/') path.pop_back();
  const std::string suffix = "/chat/completions";
  if (path.size() >= suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0) return base;
  std::string root = base;
  while (!root.empty() && root.back() == '/') root.pop_back();
  if (path.empty()) return root + "/v1/chat/completions";
  return root + suffix;
}

HttpResult post_json(const HttpPost& rq) {
  HttpResult out;
  const auto t0 = Clock::now();
  ParsedUrl u;
  std::string why;
  if (!parse_url(rq.url, &u, &why)) {
    out.error = "bad URL: " + why;
    return out;
  }
  std::string host_header = u.host.find(':') != std::string::npos ? "[" + u.host + "]" : u.host;
  if (!u.default_port) host_header += ":" + std::to_string(u.port);
  std::string request = "POST " + (u.path.empty() ? std::string("/") : u.path) + " HTTP/1.1\r\nHost: " + host_header +
                        "\r\nUser-Agent: agentcompile/" AGENTCOMPILE_VERSION
                        "\r\nContent-Type: application/json\r\nAccept: application/json\r\nConnection: close\r\n";
  if (!rq.api_key.empty()) request += "Authorization: Bearer " + rq.api_key + "\r\n";
  request += "Content-Length: " + std::to_string(rq.body.size()) + "\r\n\r\n" + rq.body;

  const int attempts = std::max(1, rq.max_attempts);
  for (int attempt = 1; attempt <= attempts; ++attempt) {
    if (attempt > 1) {
      const auto backoff = std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(rq.backoff_s * std::pow(2.0, attempt - 2)));
      if (rq.deadline && Clock::now() + backoff >= *rq.deadline) break;  // no time for another attempt
      std::this_thread::sleep_for(backoff);
    }
    out.attempts = attempt;
    out.status = 0;
    out.body.clear();
    auto deadline = Clock::now() + std::chrono::milliseconds(int64_t(std::max(0.001, rq.total_timeout_s) * 1000));
    if (rq.deadline) deadline = std::min(deadline, *rq.deadline);
    try {
      Connection c(rq.read_timeout_s, deadline);
      c.open(u, rq.connect_timeout_s);
      c.write_all(request);
      Response r = read_response(c, rq.max_response_bytes);
      out.status = r.status;
      out.body = std::move(r.body);
    } catch (const TooLarge&) {
      out.error = "response larger than " + std::to_string(rq.max_response_bytes) + " bytes";
      break;  // a server that answers too much will do it again
    } catch (const TransportError& e) {
      out.error = std::string("transport error: ") + e.what();
      if (!e.retry()) break;
      continue;
    }
    if (out.status >= 200 && out.status < 300) {
      out.ok = true;
      out.error.clear();
      break;
    }
    out.error = "HTTP " + std::to_string(out.status);
    if (!retryable(out.status)) break;
  }
  out.elapsed_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  return out;
}

}  // namespace ac::llm
