#pragma once
// Errors carry a kind that the CLI maps to an exit code (docs/design.md, command-line contract):
// bad input (files, flags, model) exits 2, internal failures exit 1. The message is always
// "<subject>: <reason>" so the CLI can print one line: "error: <subject>: <reason>".
#include <stdexcept>
#include <string>

namespace ac {

enum class ErrorKind { BadInput = 2, Internal = 1 };

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, std::string subject, std::string reason);
  ErrorKind kind() const { return kind_; }
  const std::string& subject() const { return subject_; }
  const std::string& reason() const { return reason_; }

 private:
  ErrorKind kind_;
  std::string subject_;
  std::string reason_;
};

[[noreturn]] void throw_input(std::string subject, std::string reason);
[[noreturn]] void throw_internal(std::string subject, std::string reason);

// Re-throws `e` with `prefix: ` put in front of its subject, keeping its kind; used where a
// lower layer only knows a field name and the caller knows the file.
[[noreturn]] void rethrow_with_subject(const Error& e, const std::string& prefix);

}  // namespace ac
