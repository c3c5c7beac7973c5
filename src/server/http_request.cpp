// The request line and header fields of an HTTP/1.1 request (RFC 9112), strictly: a malformed
// head is refused rather than guessed at.
#include <algorithm>
#include <cctype>

#include "agentcompile/server/http_server.h"

namespace ac::server {

namespace {

bool is_token_char(unsigned char c) {
  return std::isalnum(c) || std::string_view("!#$%&'*+-.^_`|~").find(char(c)) != std::string_view::npos;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

const std::string* HttpRequest::header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (k == name) return &v;
  return nullptr;
}

bool parse_request_head(std::string_view head, HttpRequest& out, std::string& error) {
  auto fail = [&](std::string why) {
    error = std::move(why);
    return false;
  };
  size_t eol = head.find("\r\n");
  const std::string_view line = head.substr(0, eol);
  const size_t sp1 = line.find(' '), sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos)
    return fail("malformed request line");
  out.method = std::string(line.substr(0, sp1));
  out.target = std::string(line.substr(sp1 + 1, sp2 - sp1 - 1));
  out.version = std::string(line.substr(sp2 + 1));
  if (out.method.empty() || !std::all_of(out.method.begin(), out.method.end(), [](char c) { return is_token_char(c); }))
    return fail("malformed method");
  if (out.version != "HTTP/1.1" && out.version != "HTTP/1.0") return fail("unsupported HTTP version");
  if (out.target.empty() || out.target.front() != '/') return fail("the target must be a path");
  for (unsigned char c : out.target)
    if (c <= 0x20 || c >= 0x7f) return fail("malformed target");
  const size_t q = out.target.find('?');
  out.path = out.target.substr(0, q);
  out.query = q == std::string::npos ? "" : out.target.substr(q + 1);

  out.headers.clear();
  while (eol != std::string_view::npos) {
    const size_t start = eol + 2;
    eol = head.find("\r\n", start);
    const std::string_view field = head.substr(start, eol == std::string_view::npos ? std::string_view::npos : eol - start);
    if (field.empty()) continue;
    const size_t colon = field.find(':');
    if (colon == std::string_view::npos || colon == 0) return fail("malformed header field");
    std::string name(field.substr(0, colon));
    for (char& c : name) {
      if (!is_token_char(static_cast<unsigned char>(c))) return fail("malformed header name");
      c = char(std::tolower(static_cast<unsigned char>(c)));
    }
    const std::string_view value = trim(field.substr(colon + 1));
    for (unsigned char c : value)
      if ((c < 0x20 && c != '\t') || c == 0x7f) return fail("malformed header value");
    out.headers.emplace_back(std::move(name), std::string(value));
  }
  return true;
}

}  // namespace ac::server
