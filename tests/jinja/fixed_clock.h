#pragma once
// The clock both sides of the chat-template tests read: the reference scripts fix theirs with a
// request's "now" (fixed_clock.js); ours is kFixedNow formatted by the engine the way the
// reference's strftime_now formats it.
#include <ctime>
#include <string>
#include <string_view>

#include "agentcompile/jinja/template.h"

namespace ac::test {

// Not Llama 3.2's default date (26 Jul 2024), so that a template that reads the clock shows it.
inline constexpr const char* kFixedNow = "2025-03-07T09:05:00Z";

inline std::string fixed_strftime(std::string_view format) {
  static const std::tm now = [] {
    std::tm t{};
    strptime(kFixedNow, "%Y-%m-%dT%H:%M:%SZ", &t);
    const time_t seconds = timegm(&t);  // fills in the weekday and the day of the year
    gmtime_r(&seconds, &t);
    return t;
  }();
  return ac::jinja::format_time_like_reference(format, now);
}

// Engine options with that clock.
inline ac::jinja::Options fixed_clock_options() {
  ac::jinja::Options options;
  options.strftime_now = fixed_strftime;
  return options;
}

}  // namespace ac::test
