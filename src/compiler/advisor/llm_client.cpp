// One JSON POST over HTTP/1.1 on Boost.Beast (the request, and the response: Content-Length,
// chunked and close-delimited bodies) and Boost.Asio (sockets, TLS through the statically linked
// OpenSSL with the system trust store, SNI and a host name check), with a size limit, a per-read
// timeout, a per-attempt deadline and an overall one, and retries with doubling backoff for
// transport errors other than timeouts, 429 and 5xx.
//
// Beast and Asio are header-only, so the binary needs nothing of them where it runs: it is carried
// alone to the GPU machine (../shared/GPU.md), which lacks Debian's shared libraries, and Debian's
// cpp-httplib is only one (libcpp-httplib.so pulling in brotli, zlib and libssl.so.3).
#include "compiler/advisor/llm_client.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <thread>

namespace ac::llm {

namespace {

namespace net = boost::asio;
namespace ssl = net::ssl;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using boost::system::error_code;
using Clock = std::chrono::steady_clock;

constexpr std::uint32_t kMaxHeaderBytes = 64 * 1024;
constexpr size_t kReadSize = 16384;

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

class TransportError : public std::runtime_error {
 public:
  TransportError(const std::string& what, bool retry) : std::runtime_error(what), retry_(retry) {}
  bool retry() const { return retry_; }

 private:
  bool retry_;
};

class TooLarge : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Response {
  int status = 0;
  std::string body;
};

// The completion handler of every operation here: one type, so that each Asio operation is
// compiled once per stream type (the headers' templates are most of this file's compile time).
struct Done {
  error_code* ec;
  size_t* transferred;
  void operator()(error_code e, size_t n = 0) const {
    *ec = e;
    *transferred = n;
  }
  void operator()(error_code e, const tcp::endpoint&) const { *ec = e; }
};

// One attempt: its io_context, its limits, and the operations on its connection. Each operation
// is asynchronous and run here to its end, bounded by tcp_stream's expiry: Beast's synchronous
// operations have no timeouts.
class Attempt {
 public:
  Attempt(double read_timeout_s, Clock::time_point deadline)
      : read_timeout_(std::chrono::milliseconds(int64_t(std::max(1.0, read_timeout_s * 1000)))), deadline_(deadline) {}

  tcp::resolver::results_type resolve(const ParsedUrl& u) {
    error_code ec;
    auto found = tcp::resolver(ioc_).resolve(u.host, std::to_string(u.port), ec);
    if (ec) throw TransportError("resolve " + u.host + ": " + ec.message(), true);
    return found;
  }

  // Runs the operation that `start` begins (given its completion handler) on `stream` until it
  // ends, within `limit` and the deadline; a timeout is a TransportError that is not retried (a
  // server that let a whole timeout pass will most likely do it again). Other errors are returned.
  template <class Start>
  error_code run(beast::tcp_stream& stream, Clock::duration limit, const std::string& what, Start&& start,
                 size_t* transferred = nullptr) {
    const auto now = Clock::now();
    if (now >= deadline_) throw TransportError("deadline passed while " + what, false);
    const bool by_deadline = deadline_ <= now + limit;
    stream.expires_at(by_deadline ? deadline_ : now + limit);
    error_code result;
    size_t ignored = 0;
    start(Done{&result, transferred ? transferred : &ignored});
    ioc_.restart();
    ioc_.run();
    if (result == beast::error::timeout)
      throw TransportError(std::string(by_deadline ? "deadline passed" : "timed out") + " while " + what, false);
    return result;
  }

  // Sends `request` (serialized) and reads the response, its body capped at max_body bytes
  // (TooLarge beyond).
  template <class Stream>
  Response exchange(Stream& s, const std::string& request, size_t max_body) {
    beast::tcp_stream& tcp = beast::get_lowest_layer(s);
    if (const error_code ec = run(tcp, read_timeout_, "writing",
                                  [&](Done done) { net::async_write(s, net::buffer(request), done); }))
      throw TransportError("send: " + ec.message(), true);
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.header_limit(kMaxHeaderBytes);
    parser.body_limit(std::uint64_t(max_body));
    // Not eager (one step per put): Beast 1.74's eager parser reads on past a Content-Length over
    // the body limit and loses that error.
    parser.eager(false);
    bool need_more = true;
    while (!parser.is_done()) {
      if (need_more) {  // one read, within the per-read timeout
        size_t n = 0;
        const error_code ec = run(
            tcp, read_timeout_, "reading", [&](Done done) { s.async_read_some(buffer.prepare(kReadSize), done); }, &n);
        if (ec == net::error::eof || ec == ssl::error::stream_truncated) {  // the server closed (TLS: maybe without close_notify)
          error_code end;
          if (parser.got_some()) parser.put_eof(end);  // the end of a body delimited by the close
          if (!parser.got_some() || end)
            throw TransportError(parser.is_header_done() ? "connection closed inside the body"
                                                         : "connection closed before the response headers",
                                 true);
          break;
        }
        if (ec) throw TransportError("recv: " + ec.message(), true);
        buffer.commit(n);
      }
      error_code ec;
      const size_t used = parser.put(buffer.data(), ec);
      buffer.consume(used);
      need_more = ec == http::error::need_more || buffer.size() == 0 || used == 0;
      if (ec == http::error::need_more) continue;
      if (ec == http::error::header_limit) throw TransportError("response headers larger than 64 KiB", false);
      if (ec == http::error::body_limit) throw TooLarge("body");
      if (ec) throw TransportError("bad HTTP response: " + ec.message(), false);
    }
    return {int(parser.get().result_int()), std::move(parser.get().body())};
  }

  void connect(beast::tcp_stream& tcp, const ParsedUrl& u, double connect_timeout_s) {
    const auto found = resolve(u);
    const std::string where = u.host + ":" + std::to_string(u.port);
    const auto limit = std::chrono::milliseconds(int64_t(std::max(1.0, connect_timeout_s * 1000)));
    if (const error_code ec = run(tcp, limit, "connecting to " + where, [&](Done done) { tcp.async_connect(found, done); }))
      throw TransportError("connect " + where + ": " + ec.message(), true);
  }

  // The TLS handshake with the statically linked OpenSSL: the system trust store, TLS 1.2 at
  // least, SNI, and the certificate checked against the host name (or IP address).
  void handshake(ssl::stream<beast::tcp_stream>& s, const std::string& host) {
    SSL* ssl = s.native_handle();
    // An IP literal is matched against the certificate's IP addresses and gets no SNI (RFC 6066).
    in6_addr ip;
    const bool literal = ::inet_pton(AF_INET, host.c_str(), &ip) == 1 || ::inet_pton(AF_INET6, host.c_str(), &ip) == 1;
    const int named = literal ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host.c_str())
                              : SSL_set1_host(ssl, host.c_str()) && SSL_set_tlsext_host_name(ssl, host.c_str());
    if (named != 1) throw TransportError("TLS: cannot check host name " + host, false);
    const error_code ec = run(beast::get_lowest_layer(s), read_timeout_, "the TLS handshake",
                              [&](Done done) { s.async_handshake(ssl::stream_base::client, done); });
    if (!ec) return;
    const long verify = SSL_get_verify_result(ssl);
    if (verify != X509_V_OK)
      throw TransportError(std::string("TLS: certificate not trusted: ") + X509_verify_cert_error_string(verify), false);
    throw TransportError("TLS handshake failed: " + ec.message(), true);
  }

  net::io_context& ioc() { return ioc_; }

 private:
  net::io_context ioc_{1};
  Clock::duration read_timeout_;
  Clock::time_point deadline_;
};

// The TLS settings of a connection, set before its stream takes them.
ssl::context tls_context() {
  ERR_clear_error();
  ssl::context ctx(ssl::context::tls_client);
  SSL_CTX_set_min_proto_version(ctx.native_handle(), TLS1_2_VERSION);
  error_code ec;
  ctx.set_default_verify_paths(ec);
  if (ec) throw TransportError("TLS: no trust store: " + ec.message(), false);
  ctx.set_verify_mode(ssl::verify_peer);
  return ctx;
}

// One attempt's request and response, over TCP or TLS.
Response attempt_once(const ParsedUrl& u, const std::string& request, const HttpPost& rq,
                      Clock::time_point deadline) {
  Attempt a(rq.read_timeout_s, deadline);
  if (u.scheme != "https") {
    beast::tcp_stream tcp(a.ioc());
    a.connect(tcp, u, rq.connect_timeout_s);
    return a.exchange(tcp, request, rq.max_response_bytes);
  }
  ssl::context ctx = tls_context();
  ssl::stream<beast::tcp_stream> tls(a.ioc(), ctx);
  a.connect(beast::get_lowest_layer(tls), u, rq.connect_timeout_s);
  a.handshake(tls, u.host);
  return a.exchange(tls, request, rq.max_response_bytes);
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
  http::request<http::string_body> message(http::verb::post, u.path.empty() ? std::string("/") : u.path, 11);
  message.set(http::field::host, host_header);
  message.set(http::field::user_agent, "agentcompile/" AGENTCOMPILE_VERSION);
  message.set(http::field::content_type, "application/json");
  message.set(http::field::accept, "application/json");
  message.set(http::field::connection, "close");
  if (!rq.api_key.empty()) message.set(http::field::authorization, "Bearer " + rq.api_key);
  message.body() = rq.body;
  message.prepare_payload();
  std::ostringstream wire;  // serialized once, sent by every attempt
  wire << message;
  const std::string request = wire.str();

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
      Response r = attempt_once(u, request, rq, deadline);
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
