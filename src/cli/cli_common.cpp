#include "cli/cli_common.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "agentcompile/compiler/advisor.h"
#include "agentcompile/core/error.h"

namespace ac::cli {

namespace {
std::string number_text(long double v) {
  char buf[64];
  if (v == std::floor(v) && std::fabs(v) < 1e20L)
    std::snprintf(buf, sizeof buf, "%.0Lf", v);  // 18446744073709551615, not 1.84467440737096e+19
  else
    std::snprintf(buf, sizeof buf, "%.15Lg", v);
  return buf;
}
}  // namespace

CLI::Validator in_range(long double lo, long double hi) {
  const std::string range = "[" + number_text(lo) + ", " + number_text(hi) + "]";
  return CLI::Validator(
      [lo, hi, range](std::string& text) -> std::string {
        const char* b = text.c_str();
        char* end = nullptr;
        errno = 0;
        const long double v = std::strtold(b, &end);
        if (text.empty() || end != b + text.size() || !std::isfinite(v) || errno == ERANGE)
          return "\"" + text + "\" is not a number";
        if (v < lo || v > hi) return text + " is outside " + range;
        return "";
      },
      range);
}

std::vector<int32_t> parse_id_list(const std::string& text, const std::string& flag) {
  std::vector<int32_t> ids;
  size_t i = 0;
  while (i <= text.size()) {
    size_t j = text.find(',', i);
    if (j == std::string::npos) j = text.size();
    std::string item = text.substr(i, j - i);
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    int64_t v = -1;
    auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || p != item.data() + item.size() || v < 0 || v > INT32_MAX)
      throw_input(flag, "\"" + item + "\" is not a token id (expected comma-separated non-negative integers)");
    ids.push_back(int32_t(v));
    i = j + 1;
  }
  return ids;
}

void add_advisor_flags(CLI::App* app, AdvisorFlags& f) {
  std::string keys;
  for (const char* var : kApiKeyVariables) keys += std::string(keys.empty() ? "$" : ", else $") + var;
  app->add_option("--advisor", f.advisor,
                  "heuristic (default), openai, replay:FILE or none; openai sends the API key from " + keys +
                      " (as a Bearer token)");
  app->add_option("--llm-url", f.llm_url, "OpenAI-compatible endpoint (or $AGENTCOMPILE_LLM_URL)");
  app->add_option("--llm-model", f.llm_model, "model name for the endpoint (or $AGENTCOMPILE_LLM_MODEL)");
}

std::string join_ids(const std::vector<int32_t>& ids, const std::string& sep) {
  std::string s;
  for (size_t k = 0; k < ids.size(); ++k) {
    if (k) s += sep;
    s += std::to_string(ids[k]);
  }
  return s;
}

std::string read_text_input(const std::string& path, size_t max_bytes, const std::string& limit_note) {
  const bool is_stdin = path == "-";
  const std::string name = is_stdin ? "stdin" : path;
  const int fd = is_stdin ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw_input(name, std::string("cannot open: ") + std::strerror(errno));
  auto fail = [&](const std::string& why) {
    if (!is_stdin) ::close(fd);
    throw_input(name, why);
  };
  auto too_long = [&]() {
    fail("more than " + std::to_string(max_bytes) + " bytes (" + limit_note + ")");
  };
  struct stat st {};
  if (::fstat(fd, &st) == 0) {
    if (S_ISDIR(st.st_mode)) fail("is a folder, not a file");
    if (S_ISREG(st.st_mode) && uint64_t(st.st_size) > max_bytes) too_long();  // before reading any of it
  }
  std::string out;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(std::string("read failed: ") + std::strerror(errno));
    if (n == 0) break;
    if (out.size() + size_t(n) > max_bytes) too_long();
    out.append(buf, size_t(n));
  }
  if (!is_stdin) ::close(fd);
  return out;
}

}  // namespace ac::cli
