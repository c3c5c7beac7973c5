#pragma once
// A scripted OpenAI-compatible chat-completions server on 127.0.0.1 (ephemeral port) for the
// advisor tests, on plain POSIX sockets: request n is answered by script[n] (the last entry
// repeats). Replies can be delayed, chunked or dripped slowly; requests are kept so tests can
// check what the client sent. One thread per connection; the destructor stops everything.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "agentcompile/core/json.h"

namespace ac::test {

struct ScriptedReply {
  int status = 200;
  std::string body;        // sent as is
  double delay_s = 0;      // before the status line (cut short when the server stops)
  std::string content_type = "application/json";
  bool chunked = false;    // Transfer-Encoding: chunked, 1000-byte chunks
  double drip_s = 0;       // pause between chunks
  bool close_delimited = false;  // no length: the body ends where the connection closes
};

// A chat completion whose message content is `content`.
inline std::string chat_completion(const std::string& content) {
  return Json{{"id", "chatcmpl-test"},
              {"object", "chat.completion"},
              {"model", "scripted"},
              {"choices", Json::array({{{"index", 0},
                                        {"message", {{"role", "assistant"}, {"content", content}}},
                                        {"finish_reason", "stop"}}})}}
      .dump();
}

class ScriptedServer {
 public:
  explicit ScriptedServer(std::vector<ScriptedReply> script) : script_(std::move(script)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listen_fd_ < 0) throw std::runtime_error("socket");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listen_fd_, 16) != 0)
      throw std::runtime_error("bind/listen");
    socklen_t len = sizeof addr;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    if (::pipe(wake_) != 0) throw std::runtime_error("pipe");
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~ScriptedServer() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    (void)!::write(wake_[1], "x", 1);
    acceptor_.join();
    for (auto& t : handlers_) t.join();
    ::close(listen_fd_);
    ::close(wake_[0]);
    ::close(wake_[1]);
  }
  ScriptedServer(const ScriptedServer&) = delete;
  ScriptedServer& operator=(const ScriptedServer&) = delete;

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  struct Seen {
    std::string path, body, authorization;
  };
  std::vector<Seen> requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }

 private:
  void accept_loop() {
    for (;;) {
      pollfd p[2] = {{listen_fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
      if (::poll(p, 2, -1) < 0) continue;
      if (p[1].revents) return;
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      handlers_.emplace_back([this, fd] {
        serve(fd);
        ::close(fd);
      });
    }
  }

  // Reads until the headers are in `buf` (want 0) or it holds `want` bytes; false when the peer
  // closes or the server stops.
  bool read_until(int fd, std::string& buf, size_t want_total_or_zero) {
    char chunk[8192];
    for (;;) {
      if (want_total_or_zero == 0 ? buf.find("\r\n\r\n") != std::string::npos : buf.size() >= want_total_or_zero) return true;
      pollfd p{fd, POLLIN, 0};
      const int r = ::poll(&p, 1, 100);
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopping_) return false;
      }
      if (r <= 0) continue;
      const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
      if (n <= 0) return false;
      buf.append(chunk, size_t(n));
    }
  }

  static std::string header(const std::string& head, const std::string& name) {
    std::string lower = head;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    const size_t at = lower.find("\r\n" + name + ":");
    if (at == std::string::npos) return "";
    size_t b = at + 3 + name.size();
    while (b < head.size() && head[b] == ' ') ++b;
    return head.substr(b, head.find("\r\n", b) - b);
  }

  bool send_all(int fd, const std::string& s) {
    size_t off = 0;
    while (off < s.size()) {
      const ssize_t n = ::send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += size_t(n);
    }
    return true;
  }

  // Sleeps up to `s` seconds; false when the server is stopping.
  bool pause(double s) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::duration<double>(s), [this] { return stopping_; });
    return !stopping_;
  }

  void serve(int fd) {
    std::string buf;
    if (!read_until(fd, buf, 0)) return;
    const size_t end = buf.find("\r\n\r\n");
    const std::string head = buf.substr(0, end);
    const std::string len = header(head, "content-length");
    const size_t body_len = len.empty() ? 0 : std::stoul(len);
    if (!read_until(fd, buf, end + 4 + body_len)) return;
    const size_t sp1 = head.find(' '), sp2 = head.find(' ', sp1 + 1);
    ScriptedReply r;
    {
      std::lock_guard<std::mutex> lock(mu_);
      seen_.push_back({head.substr(sp1 + 1, sp2 - sp1 - 1), buf.substr(end + 4, body_len), header(head, "authorization")});
      r = script_.empty() ? ScriptedReply{500, "{}"} : script_[std::min(next_, script_.size() - 1)];
      ++next_;
    }
    if (r.delay_s > 0 && !pause(r.delay_s)) return;
    std::string out = "HTTP/1.1 " + std::to_string(r.status) + " Scripted\r\nContent-Type: " + r.content_type +
                      "\r\nConnection: close\r\n";
    if (r.close_delimited) {
      send_all(fd, out + "\r\n" + r.body);
      return;
    }
    if (!r.chunked) {
      send_all(fd, out + "Content-Length: " + std::to_string(r.body.size()) + "\r\n\r\n" + r.body);
      return;
    }
    if (!send_all(fd, out + "Transfer-Encoding: chunked\r\n\r\n")) return;
    for (size_t off = 0; off < r.body.size(); off += 1000) {
      const std::string part = r.body.substr(off, 1000);
      char size[32];
      std::snprintf(size, sizeof size, "%zx\r\n", part.size());
      if (!send_all(fd, size + part + "\r\n")) return;
      if (r.drip_s > 0 && !pause(r.drip_s)) return;
    }
    send_all(fd, "0\r\n\r\n");
  }

  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};
  int port_ = -1;
  std::thread acceptor_;
  std::vector<std::thread> handlers_;  // touched by the acceptor only, joined after it
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::vector<ScriptedReply> script_;
  size_t next_ = 0;
  std::vector<Seen> seen_;
};

}  // namespace ac::test
