// The HTTP server over real sockets: request heads, Content-Length and chunked bodies, the body
// limit (413 before the body is read), persistent connections, streamed responses, a client
// that disconnects, and a stop that lets the response being written finish.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

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

// Reads until `needle` appears or the peer closes (2 s at most).
std::string read_until(int fd, const std::string& needle) {
  std::string got;
  const auto until = std::chrono::steady_clock::now() + 2s;
  while (got.find(needle) == std::string::npos && std::chrono::steady_clock::now() < until) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, size_t(n));
  }
  return got;
}

struct HttpServerTest : ::testing::Test {
  void start(HttpHandler h, size_t max_body = 1024) {
    HttpServerOptions o;
    o.port = 0;
    o.max_body_bytes = max_body;
    o.access_log = [this](const HttpRequest& r, int status, double, bool left) {
      std::lock_guard<std::mutex> lock(log_mu);
      log.push_back(r.method + " " + r.path + " " + std::to_string(status) + (left ? " left" : ""));
    };
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
  std::unique_ptr<HttpServer> server;
  std::mutex log_mu;
  std::vector<std::string> log;  // the access log's lines
};

HttpHandler echo() {
  return [](const HttpRequest& r, HttpResponder& out) {
    const std::string* x = r.header("x-thing");
    out.send(200, "text/plain", r.method + " " + r.path + " q=" + r.query + " x=" + (x ? *x : "") + " body=" + r.body);
  };
}

TEST(HttpHead, ParsesAndRefusesMalformedHeads) {
  HttpRequest r;
  std::string error;
  ASSERT_TRUE(parse_request_head("POST /v1/x?a=1 HTTP/1.1\r\nHost: h\r\nX-Thing:  v v \r\n", r, error)) << error;
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.path, "/v1/x");
  EXPECT_EQ(r.query, "a=1");
  ASSERT_NE(r.header("x-thing"), nullptr);
  EXPECT_EQ(*r.header("x-thing"), "v v");
  for (const char* bad : {"GET /\r\n", "GET / HTTP/2\r\n", "GET x HTTP/1.1\r\n", "GET / HTTP/1.1\r\nNoColon\r\n",
                          "GET / HTTP/1.1\r\nBad Name: v\r\n", "G@T / HTTP/1.1\r\n"})
    EXPECT_FALSE(parse_request_head(bad, r, error)) << bad;
}

TEST_F(HttpServerTest, BodiesByLengthAndChunksOnOnePersistentConnection) {
  start(echo());
  const int fd = connect_to(server->port());
  send_text(fd, "POST /a?k=1 HTTP/1.1\r\nHost: x\r\nX-Thing: t\r\nContent-Length: 5\r\n\r\nhello");
  std::string got = read_until(fd, "body=hello");
  EXPECT_NE(got.find("HTTP/1.1 200 OK"), std::string::npos) << got;
  EXPECT_NE(got.find("POST /a q=k=1 x=t body=hello"), std::string::npos) << got;
  EXPECT_NE(got.find("Connection: keep-alive"), std::string::npos) << got;
  send_text(fd, "POST /b HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\n\r\n");
  got = read_until(fd, "body=abcde");
  EXPECT_NE(got.find("POST /b q= x= body=abcde"), std::string::npos) << got;
  ::close(fd);
  EXPECT_EQ(logged_when(2), (std::vector<std::string>{"POST /a 200", "POST /b 200"}));
}

TEST_F(HttpServerTest, BodyOverTheLimitIs413BeforeItIsRead) {
  start(echo(), 100);
  const int fd = connect_to(server->port());
  send_text(fd, "POST /a HTTP/1.1\r\nContent-Length: 101\r\n\r\n");
  const std::string got = read_until(fd, "}");
  EXPECT_NE(got.find("HTTP/1.1 413"), std::string::npos) << got;
  EXPECT_NE(got.find("limit of 100 bytes"), std::string::npos) << got;
  EXPECT_NE(got.find("Connection: close"), std::string::npos) << got;
  ::close(fd);
  const int fd2 = connect_to(server->port());
  send_text(fd2, "POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n65\r\n");
  EXPECT_NE(read_until(fd2, "}").find("HTTP/1.1 413"), std::string::npos);
  ::close(fd2);
  const int fd3 = connect_to(server->port());
  send_text(fd3, "GARBAGE\r\n\r\n");
  EXPECT_NE(read_until(fd3, "}").find("HTTP/1.1 400"), std::string::npos);
  ::close(fd3);
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
  EXPECT_NE(got.find("9\r\ndata: 1\n\n\r\n"), std::string::npos) << got;
  ::close(fd);
  const auto until = std::chrono::steady_clock::now() + 3s;
  while (!saw_gone && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(saw_gone);
  server->stop();
  server->wait();  // the log line is written once the connection ends
  EXPECT_EQ(logged(), (std::vector<std::string>{"GET /s 200 left"}));
}

TEST_F(HttpServerTest, StopFinishesTheResponseInFlightAndRefusesNewConnections) {
  std::atomic<bool> entered{false};
  start([&](const HttpRequest&, HttpResponder& out) {
    entered = true;
    std::this_thread::sleep_for(300ms);
    out.send(200, "text/plain", "late but whole");
  });
  const int port = server->port();
  const int fd = connect_to(port);
  send_text(fd, "GET / HTTP/1.1\r\n\r\n");
  while (!entered) std::this_thread::sleep_for(5ms);
  server->stop();
  const std::string got = read_until(fd, "whole");
  EXPECT_NE(got.find("late but whole"), std::string::npos) << got;
  EXPECT_NE(got.find("Connection: close"), std::string::npos) << got;
  server->wait();
  EXPECT_EQ(try_connect(port), -1);
  ::close(fd);
}

}  // namespace
