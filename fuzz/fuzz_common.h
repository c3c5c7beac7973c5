#pragma once
// Shared checks of the fuzz targets: a rejected input must raise ac::Error of kind BadInput with a
// one-line, valid UTF-8 message; anything else (another exception, a crash, a sanitizer report,
// a broken invariant on an accepted input) is a finding.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "agentcompile/core/error.h"
#include "agentcompile/core/json.h"

namespace ac::fuzz {

[[noreturn]] inline void finding(const std::string& what) {
  std::fprintf(stderr, "FUZZ FINDING: %s\n", what.c_str());
  std::abort();
}

inline void require(bool ok, const std::string& what) {
  if (!ok) finding("broken invariant: " + what);
}

inline void check_rejection(const Error& e) {
  std::string msg = e.what();
  if (e.kind() != ErrorKind::BadInput) finding("internal error for bad input: " + msg);
  if (msg.empty() || e.reason().empty()) finding("empty error message");
  if (msg.find('\n') != std::string::npos || msg.find('\r') != std::string::npos) finding("multi-line message: " + msg);
  try {
    (void)Json(msg).dump();  // throws on invalid UTF-8
  } catch (const Json::exception&) {
    finding("message is not valid UTF-8: " + msg);
  }
}

}  // namespace ac::fuzz
