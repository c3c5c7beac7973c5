#include "agentcompile/core/text.h"

#include <algorithm>
#include <cstdio>
#include <ctime>

namespace ac {

std::string human_count(double n, const char* sep) {
  char buf[48];
  if (n >= 1e9) std::snprintf(buf, sizeof buf, "%.2f%sB", n / 1e9, sep);
  else if (n >= 1e6) std::snprintf(buf, sizeof buf, "%.2f%sM", n / 1e6, sep);
  else if (n >= 1e3) std::snprintf(buf, sizeof buf, "%.1f%sK", n / 1e3, sep);
  else std::snprintf(buf, sizeof buf, "%.0f", n);
  return buf;
}

std::string utc_now_iso() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

namespace {
// Optimal string alignment distance: insertions, deletions, substitutions and adjacent
// transpositions ("genreate" is one edit from "generate").
size_t edit_distance(const std::string& a, const std::string& b) {
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1));
  for (size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (size_t i = 1; i <= n; ++i)
    for (size_t j = 1; j <= m; ++j) {
      const size_t sub = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + sub});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[n][m];
}
}  // namespace

std::string closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  // Long input is not a typo of a short command name; also keeps the table small.
  if (word.empty() || word.size() > 64) return "";
  std::string best;
  size_t best_d = 3;  // more than 2 edits is another word
  for (const auto& c : candidates) {
    const size_t d = edit_distance(word, c);
    if (d < best_d && 2 * d < c.size()) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

}  // namespace ac
