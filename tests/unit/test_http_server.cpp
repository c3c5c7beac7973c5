// The HTTP server over real sockets: request heads (malformed, oversized, unknown methods),
// Content-Length and chunked bodies, the body limit (413 before the body is read), request
// smuggling refused, persistent connections, timeouts, the connection limit, streamed responses,
// a client that disconnects, and a stop that lets the response being written finish.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "agentcompile/core/error.h"
#include "agentcompile/server/http_server.h"

using namespace ac::server;
using namespace std::chrono_literals;

namespace {

// A socket connected to 127.0.0.1:port, or -1 when the connection is refused.
int try_connect(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return fd;
  ::close(fd);
  return -1;
}

int connect_to(int port) {
  const int fd = try_connect(port);
  EXPECT_GE(fd, 0);
  return fd;
}

void send_text(int fd, const std::string& s) { ASSERT_EQ(::send(fd, s.data(), s.size(), MSG_NOSIGNAL), ssize_t(s.size())); }

// Reads until `needle` appears (an empty one: never) or the peer closes, 2 s at most; `closed`
// tells whether it closed.
std::string read_until(int fd, const std::string& needle, bool* closed = nullptr) {
  std::string got;
  if (closed) *closed = false;
  const auto until = std::chrono::steady_clock::now() + 2s;
  while ((needle.empty() || got.find(needle) == std::string::npos) && std::chrono::steady_clock::now() < until) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) {
      if (closed) *closed = true;
      break;
    }
    got.append(buf, size_t(n));
  }
  return got;
}

// Everything the server sends until it closes the connection (2 s at most).
std::string read_to_close(int fd, bool* closed) { return read_until(fd, "", closed); }

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

struct HttpServerTest : ::testing::Test {
  void start(HttpHandler h, size_t max_body = 1024, const std::function<void(HttpServerOptions&)>& tune = {}) {
    HttpServerOptions o;
    o.port = 0;
    o.max_body_bytes = max_body;
    o.access_log = [this](const HttpRequest& r, int status, double, bool left) {
      std::lock_guard<std::mutex> lock(log_mu);
      log.push_back(r.method + " " + r.path + " " + std::to_string(status) + (left ? " left" : ""));
    };
    if (tune) tune(o);
    server = std::make_unique<HttpServer>(o, std::move(h), [](int status, const std::string& m) {
      return "{\"status\":" + std::to_string(status) + ",\"message\":\"" + m + "\"}";
    });
    server->start();
  }
  std::vector<std::string> logged() {
    std::lock_guard<std::mutex> lock(log_mu);
    return log;
  }
  // The access log once it holds n lines (2 s at most): a response's line is written after its
  // last byte is sent, so the client can read a response before its line is there.
  std::vector<std::string> logged_when(size_t n) {
    const auto until = std::chrono::steady_clock::now() + 2s;
    while (logged().size() < n && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(5ms);
    return logged();
  }
  // Sends `request` on a new connection and returns all the server answers before it closes;
  // fails the test when the server leaves the connection open.
  std::string refused(const std::string& request) {
    const int fd = connect_to(server->port());
    send_text(fd, request);
    bool closed = false;
    const std::string got = read_to_close(fd, &closed);
    ::close(fd);
    EXPECT_TRUE(closed) << request;
    return got;
  }
  // Sends `request` on a new connection and returns what comes back until `needle`.
  std::string exchange(const std::string& request, const std::string& needle) {
    const int fd = connect_to(server->port());
    send_text(fd, request);
    const std::string got = read_until(fd, needle);
    ::close(fd);
    return got;
  }
  std::unique_ptr<HttpServer> server;
  std::mutex log_mu;
  std::vector<std::string> log;  // the access log's lines
};

// Counts the requests it is given.
HttpHandler counting(std::atomic<int>& handled) {
  return [&handled](const HttpRequest&, HttpResponder& out) {
    ++handled;
    out.send(200, "text/plain", "handled");
  };
}

HttpHandler echo() {
  return [](const HttpRequest& r, HttpResponder& out) {
    const std::string* x = r.header("x-thing");
    out.send(200, "text/plain", r.method + " " + r.path + " q=" + r.query + " x=" + (x ? *x : "") + " body=" + r.body);
  };
}

TEST_F(HttpServerTest, BodiesByLengthAndChunksOnOnePersistentConnection) {
  start(echo());
  const int fd = connect_to(server->port());
  send_text(fd, "POST /a?k=1 HTTP/1.1\r\nHost: x\r\nX-Thing:  v v \r\nContent-Length: 5\r\n\r\nhello");
  std::string got = read_until(fd, "body=hello");
  EXPECT_NE(got.find("HTTP/1.1 200 OK"), std::string::npos) << got;
  EXPECT_NE(got.find("POST /a q=k=1 x=v v body=hello"), std::string::npos) << got;
  EXPECT_NE(got.find("Connection: keep-alive"), std::string::npos) << got;
  send_text(fd, "POST /b HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\n\r\n");
  got = read_until(fd, "body=abcde");
  EXPECT_NE(got.find("POST /b q= x= body=abcde"), std::string::npos) << got;
  // Two requests in one write (pipelined): both answered, in order.
  send_text(fd, "GET /c HTTP/1.1\r\n\r\nGET /d HTTP/1.1\r\n\r\n");
  got = read_until(fd, "GET /d");
  EXPECT_LT(got.find("GET /c"), got.find("GET /d")) << got;
  ::close(fd);
  EXPECT_EQ(logged_when(4), (std::vector<std::string>{"POST /a 200", "POST /b 200", "GET /c 200", "GET /d 200"}));
}

TEST_F(HttpServerTest, Http10AndConnectionCloseEndTheConnection) {
  start(echo());
  for (const char* request : {"GET /old HTTP/1.0\r\n\r\n", "GET /done HTTP/1.1\r\nConnection: close\r\n\r\n"}) {
    const std::string got = refused(request);
    EXPECT_NE(got.find("HTTP/1.1 200"), std::string::npos) << got;
    EXPECT_NE(got.find("Connection: close"), std::string::npos) << got;
  }
}

TEST_F(HttpServerTest, UnknownMethodsReachTheHandler) {
  start(echo());
  const std::string got = exchange("BREW /pot HTTP/1.1\r\nContent-Length: 3\r\n\r\ntea", "body=tea");
  EXPECT_NE(got.find("BREW /pot q= x= body=tea"), std::string::npos) << got;
}

TEST_F(HttpServerTest, MalformedRequestsAre400WithTheErrorBody) {
  std::atomic<int> handled{0};
  start(counting(handled));
  for (const char* bad : {"GET /\r\n\r\n", "GET / HTTP/2\r\n\r\n", "GET / HTTP/2.0\r\n\r\n", "GET x HTTP/1.1\r\n\r\n",
                          "GET / HTTP/1.1\r\nNoColon\r\n\r\n", "GET / HTTP/1.1\r\nBad Name: v\r\n\r\n",
                          "G@T / HTTP/1.1\r\n\r\n", "GET /\x80 HTTP/1.1\r\n\r\n", "GARBAGE\r\n\r\n",
                          "POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n"}) {
    const std::string got = refused(bad);
    EXPECT_EQ(got.rfind("HTTP/1.1 400 ", 0), 0u) << bad << " -> " << got;
    EXPECT_NE(got.find("{\"status\":400,\"message\":\""), std::string::npos) << got;
    EXPECT_NE(got.find("Connection: close"), std::string::npos) << got;
  }
  EXPECT_EQ(handled.load(), 0);
}

TEST_F(HttpServerTest, AHeadOverTheLimitIs431) {
  start(echo(), 1024, [](HttpServerOptions& o) { o.max_head_bytes = 1000; });
  const std::string got = refused("GET / HTTP/1.1\r\nX-Big: " + std::string(2000, 'a') + "\r\n\r\n");
  EXPECT_EQ(got.rfind("HTTP/1.1 431 ", 0), 0u) << got;
  EXPECT_NE(got.find("larger than 1000 bytes"), std::string::npos) << got;
  // Just under the limit is served.
  EXPECT_NE(exchange("GET / HTTP/1.1\r\nX-Thing: " + std::string(900, 'b') + "\r\n\r\n", "body=").find("HTTP/1.1 200"),
            std::string::npos);
}

TEST_F(HttpServerTest, BodyOverTheLimitIs413BeforeItIsRead) {
  start(echo(), 100);
  const std::string got = exchange("POST /a HTTP/1.1\r\nContent-Length: 101\r\n\r\n", "}");
  EXPECT_NE(got.find("HTTP/1.1 413"), std::string::npos) << got;
  EXPECT_NE(got.find("limit of 100 bytes"), std::string::npos) << got;
  EXPECT_NE(got.find("Connection: close"), std::string::npos) << got;
  // A chunk that takes the body over the limit: refused at its size line.
  const std::string chunks = "60\r\n" + std::string(0x60, 'x') + "\r\n5\r\n";
  EXPECT_NE(exchange("POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks, "}").find("HTTP/1.1 413"),
            std::string::npos);
  // Exactly the limit is served.
  EXPECT_NE(exchange("POST /a HTTP/1.1\r\nContent-Length: 100\r\n\r\n" + std::string(100, 'y'), "yyy").find("HTTP/1.1 200"),
            std::string::npos);
}

// Requests whose body length two parties could read differently are refused, and nothing after
// them on the connection is taken for a request.
TEST_F(HttpServerTest, AmbiguousBodiesAreRefusedAndTheConnectionCloses) {
  std::atomic<int> handled{0};
  start(counting(handled));
  const std::string smuggled = "GET /smuggled HTTP/1.1\r\n\r\n";
  struct Case {
    std::string request;
    int status;
  };
  const std::vector<Case> cases = {
      {"POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled, 400},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n" + smuggled, 400},
      {"POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nabcdef" + smuggled, 400},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n" + smuggled, 400},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcdef\r\n0\r\n\r\n" + smuggled, 400},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n" + smuggled, 501},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n" + smuggled, 501},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled, 400},
  };
  for (const Case& c : cases) {
    const std::string got = refused(c.request);
    EXPECT_EQ(got.rfind("HTTP/1.1 " + std::to_string(c.status) + " ", 0), 0u) << c.request << " -> " << got;
    EXPECT_EQ(count(got, "HTTP/1.1 "), 1u) << c.request << " -> " << got;
  }
  EXPECT_EQ(handled.load(), 0);
}

TEST_F(HttpServerTest, ExpectContinueGetsA100BeforeTheBody) {
  start(echo());
  const int fd = connect_to(server->port());
  send_text(fd, "POST /e HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n");
  EXPECT_EQ(read_until(fd, "\r\n\r\n"), "HTTP/1.1 100 Continue\r\n\r\n");
  send_text(fd, "data");
  EXPECT_NE(read_until(fd, "body=data").find("HTTP/1.1 200"), std::string::npos);
  ::close(fd);
}

TEST_F(HttpServerTest, ASlowRequestIs408AndAnIdleConnectionCloses) {
  start(echo(), 1024, [](HttpServerOptions& o) {
    o.read_timeout_ms = 300;
    o.idle_timeout_ms = 300;
  });
  const auto t0 = std::chrono::steady_clock::now();
  const std::string got = refused("POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc");
  EXPECT_EQ(got.rfind("HTTP/1.1 408 ", 0), 0u) << got;
  EXPECT_EQ(refused(""), "");  // nothing sent: closed after the idle timeout
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1800ms);
}

TEST_F(HttpServerTest, ConnectionsOverTheLimitAre503) {
  start(echo(), 1024, [](HttpServerOptions& o) { o.max_connections = 1; });
  const int first = connect_to(server->port());
  send_text(first, "GET /1 HTTP/1.1\r\n\r\n");
  EXPECT_NE(read_until(first, "body=").find("HTTP/1.1 200"), std::string::npos);  // the first is being served
  const std::string got = refused("GET /2 HTTP/1.1\r\n\r\n");
  EXPECT_EQ(got.rfind("HTTP/1.1 503 ", 0), 0u) << got;
  EXPECT_NE(got.find("Retry-After: 1"), std::string::npos) << got;
  EXPECT_NE(got.find("too many open connections"), std::string::npos) << got;
  ::close(first);
}

TEST_F(HttpServerTest, AHandlerThatThrowsIs500) {
  start([](const HttpRequest&, HttpResponder&) { throw std::runtime_error("boom"); });
  const std::string got = refused("GET / HTTP/1.1\r\n\r\n");
  EXPECT_EQ(got.rfind("HTTP/1.1 500 ", 0), 0u) << got;
  EXPECT_NE(got.find("\"message\":\"boom\""), std::string::npos) << got;
}

TEST_F(HttpServerTest, StreamsChunksAndSeesTheClientLeave) {
  std::atomic<bool> saw_gone{false};
  start([&](const HttpRequest&, HttpResponder& out) {
    out.start_stream(200, "text/event-stream");
    out.write("data: 1\n\n");
    const auto until = std::chrono::steady_clock::now() + 3s;
    while (std::chrono::steady_clock::now() < until) {
      if (out.client_gone()) {
        saw_gone = true;
        return;
      }
      std::this_thread::sleep_for(10ms);
    }
  });
  const int fd = connect_to(server->port());
  send_text(fd, "GET /s HTTP/1.1\r\n\r\n");
  const std::string got = read_until(fd, "data: 1\n\n\r\n");
  EXPECT_NE(got.find("Transfer-Encoding: chunked"), std::string::npos) << got;
  EXPECT_NE(got.find("Cache-Control: no-cache"), std::string::npos) << got;
  EXPECT_NE(got.find("9\r\ndata: 1\n\n\r\n"), std::string::npos) << got;
  ::close(fd);
  const auto until = std::chrono::steady_clock::now() + 3s;
  while (!saw_gone && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(saw_gone);
  server->stop();
  server->wait();  // the log line is written once the connection ends
  EXPECT_EQ(logged(), (std::vector<std::string>{"GET /s 200 left"}));
}

TEST_F(HttpServerTest, WriteFailsOnceTheClientIsGone) {
  std::atomic<bool> write_failed{false};
  start([&](const HttpRequest&, HttpResponder& out) {
    out.start_stream(200, "text/event-stream");
    const auto until = std::chrono::steady_clock::now() + 3s;
    while (std::chrono::steady_clock::now() < until) {
      if (!out.write("data: tick\n\n")) {
        write_failed = true;
        return;
      }
      std::this_thread::sleep_for(10ms);
    }
  });
  const int fd = connect_to(server->port());
  send_text(fd, "GET /w HTTP/1.1\r\n\r\n");
  read_until(fd, "data: tick");
  ::close(fd);
  server->stop();
  server->wait();
  EXPECT_TRUE(write_failed);
  EXPECT_EQ(logged(), (std::vector<std::string>{"GET /w 200 left"}));
}

TEST_F(HttpServerTest, StopFinishesTheResponseInFlightAndRefusesNewConnections) {
  std::atomic<bool> entered{false};
  start([&](const HttpRequest&, HttpResponder& out) {
    entered = true;
    std::this_thread::sleep_for(300ms);
    out.send(200, "text/plain", "late but whole");
  });
  const int port = server->port();
  const int idle = connect_to(port);  // open, no request: closed by the stop
  const int fd = connect_to(port);
  send_text(fd, "GET / HTTP/1.1\r\n\r\n");
  while (!entered) std::this_thread::sleep_for(5ms);
  server->stop();
  const std::string got = read_until(fd, "whole");
  EXPECT_NE(got.find("late but whole"), std::string::npos) << got;
  EXPECT_NE(got.find("Connection: close"), std::string::npos) << got;
  bool closed = false;
  EXPECT_EQ(read_to_close(idle, &closed), "");
  EXPECT_TRUE(closed);
  server->wait();
  EXPECT_EQ(try_connect(port), -1);
  ::close(fd);
  ::close(idle);
}

TEST_F(HttpServerTest, StopLetsAStreamRunToItsEnd) {
  std::atomic<bool> streaming{false};
  start([&](const HttpRequest&, HttpResponder& out) {
    out.start_stream(200, "text/event-stream");
    streaming = true;
    for (int i = 0; i < 5; ++i) {
      out.write("data: " + std::to_string(i) + "\n\n");
      std::this_thread::sleep_for(50ms);
    }
  });
  const int port = server->port();
  const int fd = connect_to(port);
  send_text(fd, "GET /s HTTP/1.1\r\n\r\n");
  while (!streaming) std::this_thread::sleep_for(5ms);
  server->stop();
  bool closed = false;
  const std::string got = read_to_close(fd, &closed);
  EXPECT_TRUE(closed);
  for (int i = 0; i < 5; ++i) EXPECT_NE(got.find("data: " + std::to_string(i)), std::string::npos) << got;
  EXPECT_NE(got.find("\r\n0\r\n\r\n"), std::string::npos) << got;  // the last chunk
  server->wait();
  EXPECT_EQ(try_connect(port), -1);
  ::close(fd);
  EXPECT_EQ(logged(), (std::vector<std::string>{"GET /s 200"}));
}

TEST(HttpServer, ABusyPortIsBadInputNamingHostAndPort) {
  HttpServerOptions o;
  o.port = 0;
  HttpServer first(o, echo(), [](int, const std::string& m) { return m; });
  first.start();
  o.port = first.port();
  HttpServer second(o, echo(), [](int, const std::string& m) { return m; });
  try {
    second.start();
    FAIL() << "the second server listened on a busy port";
  } catch (const ac::Error& e) {
    EXPECT_EQ(e.kind(), ac::ErrorKind::BadInput);
    EXPECT_EQ(e.subject(), "--host/--port 127.0.0.1:" + std::to_string(o.port));
    EXPECT_NE(e.reason().find("cannot listen there"), std::string::npos) << e.reason();
  }
}

}  // namespace
