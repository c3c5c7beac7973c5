#include "agentcompile/core/text.h"

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

}  // namespace ac
