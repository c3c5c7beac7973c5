#include "agentcompile/core/error.h"

namespace ac {

static std::string join_message(const std::string& subject, const std::string& reason) {
  if (subject.empty()) return reason;
  return subject + ": " + reason;
}

Error::Error(ErrorKind kind, std::string subject, std::string reason)
    : std::runtime_error(join_message(subject, reason)),
      kind_(kind),
      subject_(std::move(subject)),
      reason_(std::move(reason)) {}

void throw_input(std::string subject, std::string reason) {
  throw Error(ErrorKind::BadInput, std::move(subject), std::move(reason));
}

void throw_internal(std::string subject, std::string reason) {
  throw Error(ErrorKind::Internal, std::move(subject), std::move(reason));
}

void rethrow_with_subject(const Error& e, const std::string& prefix) {
  std::string subject = e.subject().empty() ? prefix : prefix + ": " + e.subject();
  throw Error(e.kind(), std::move(subject), e.reason());
}

}  // namespace ac
