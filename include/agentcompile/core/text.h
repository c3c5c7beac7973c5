#pragma once
// Small text helpers shared by the CLI, the reports and the tuning database.
#include <string>

namespace ac {

// 1234567 -> "1.23M" (sep "" ) or "1.23 M" (sep " "): B, M, K suffixes, plain below 1000.
std::string human_count(double n, const char* sep = "");

// The current UTC time as "2026-11-30T02:03:52Z".
std::string utc_now_iso();

}  // namespace ac
