#pragma once
// The engine's internal error: a message and, once known, the byte offset in the original
// template source where it happened. Template::parse/render turn it into ac::Error (BadInput)
// "<name>: line L, column C: <what>".
#include <cstddef>
#include <string>

namespace ac::jinja {

constexpr size_t kNoPos = static_cast<size_t>(-1);

struct TemplateError {
  std::string what;
  size_t pos = kNoPos;  // set by the innermost syntax node that saw the error pass
};

[[noreturn]] inline void fail(std::string what) { throw TemplateError{std::move(what), kNoPos}; }
[[noreturn]] inline void fail_at(size_t pos, std::string what) { throw TemplateError{std::move(what), pos}; }

// `s` made safe to quote in a one-line message: control characters become spaces or \xNN,
// and it is cut to about `max_bytes` bytes on a character boundary.
std::string one_line(std::string_view s, size_t max_bytes = 300);

}  // namespace ac::jinja
