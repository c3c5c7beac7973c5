#pragma once
// Small text helpers shared by the CLI, the reports and the tuning database.
#include <string>
#include <vector>

namespace ac {

// 1234567 -> "1.23M" (sep "" ) or "1.23 M" (sep " "): B, M, K suffixes, plain below 1000.
std::string human_count(double n, const char* sep = "");

// The current UTC time as "2026-11-30T02:03:52Z".
std::string utc_now_iso();

// The candidate closest to a mistyped `word` (edit distance, a transposition counting one), or ""
// when none is close enough to be what was meant: at most 2 edits, and fewer than half its length.
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace ac
