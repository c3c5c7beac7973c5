#include "cli/cli_common.h"

#include <charconv>

#include "agentcompile/core/error.h"

namespace ac::cli {

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

std::string join_ids(const std::vector<int32_t>& ids, const std::string& sep) {
  std::string s;
  for (size_t k = 0; k < ids.size(); ++k) {
    if (k) s += sep;
    s += std::to_string(ids[k]);
  }
  return s;
}

}  // namespace ac::cli
