#include "agentcompile/tokenizer/added_tokens.h"

#include <algorithm>
#include <unordered_set>

#include "agentcompile/core/error.h"
#include "agentcompile/tokenizer/utf8.h"

namespace ac {

int32_t AddedTokens::child(int32_t node, uint8_t b) const {
  const auto& c = trie_[size_t(node)].children;
  auto it = std::lower_bound(c.begin(), c.end(), std::make_pair(b, int32_t(-1)));
  return it != c.end() && it->first == b ? it->second : -1;
}

void AddedTokens::insert(const std::string& content, int32_t index) {
  int32_t node = 0;
  for (char ch : content) {
    const auto b = static_cast<uint8_t>(ch);
    int32_t next = child(node, b);
    if (next < 0) {
      next = static_cast<int32_t>(trie_.size());
      trie_.emplace_back();
      auto& c = trie_[size_t(node)].children;
      c.insert(std::lower_bound(c.begin(), c.end(), std::make_pair(b, int32_t(-1))), {b, next});
    }
    node = next;
  }
  // Two entries with the same content: the later one wins, as in the reference's maps.
  trie_[size_t(node)].token = index;
  trie_[size_t(node)].plain_token = tokens_[size_t(index)].special ? -1 : index;
  first_byte_[static_cast<uint8_t>(content[0])] = true;
}

AddedTokens AddedTokens::from_json(const Json& j, const std::string& subject) {
  AddedTokens a;
  if (j.is_null()) return a;
  if (!j.is_array()) throw_input(subject, "expected an array");
  std::unordered_set<int32_t> ids;
  for (size_t k = 0; k < j.size(); ++k) {
    const std::string where = subject + "[" + std::to_string(k) + "]";
    const Json& e = j[k];
    if (!e.is_object()) throw_input(where, "expected an object");
    AddedToken t;
    t.id = static_cast<int32_t>(json_int(e, where, "id", 0, (int64_t(1) << 24) - 1));
    t.content = json_string(e, where, "content");
    if (t.content.empty()) throw_input(where, "content: empty");
    if (!utf8_valid(t.content)) throw_input(where, "content: not valid UTF-8");
    t.special = json_opt_bool(e, where, "special").value_or(false);
    t.lstrip = json_opt_bool(e, where, "lstrip").value_or(false);
    t.rstrip = json_opt_bool(e, where, "rstrip").value_or(false);
    if (!ids.insert(t.id).second) throw_input(where, "id: " + std::to_string(t.id) + " is used by another added token");
    a.tokens_.push_back(std::move(t));
    a.insert(a.tokens_.back().content, static_cast<int32_t>(k));
  }
  return a;
}

void AddedTokens::split(std::string_view text, bool allow_special, std::vector<TextSection>& out) const {
  split(text, allow_special, {}, out);
}

void AddedTokens::split(std::string_view text, bool allow_special, const std::vector<ByteSpan>& plain,
                        std::vector<TextSection>& out) const {
  const size_t first = out.size();
  size_t start = 0;  // start of the pending text
  size_t i = 0;
  size_t p = 0;  // the first plain span that ends after i
  while (i < text.size()) {
    while (p < plain.size() && plain[p].second <= i) ++p;
    // A special token may match only where it overlaps no plain span.
    const size_t plain_from = p < plain.size() ? plain[p].first : std::string_view::npos;
    int32_t match = -1;
    size_t match_len = 0;
    if (first_byte_[static_cast<uint8_t>(text[i])]) {
      int32_t node = 0;
      for (size_t j = i; j < text.size(); ++j) {
        node = child(node, static_cast<uint8_t>(text[j]));
        if (node < 0) break;
        const bool special_here = allow_special && j < plain_from;
        int32_t t = special_here ? trie_[size_t(node)].token : trie_[size_t(node)].plain_token;
        if (t >= 0) {
          match = t;  // keep the longest
          match_len = j + 1 - i;
        }
      }
    }
    if (match < 0) {
      ++i;
      continue;
    }
    if (i > start) out.push_back({text.substr(start, i - start), -1});
    out.push_back({text.substr(i, match_len), match});
    i += match_len;
    start = i;
  }
  if (start < text.size()) out.push_back({text.substr(start), -1});

  // Stripping around tokens that ask for it, then dropping text that became empty.
  for (size_t k = first; k < out.size(); ++k) {
    if (out[k].token < 0) continue;
    const AddedToken& t = tokens_[size_t(out[k].token)];
    if (t.lstrip && k > first && out[k - 1].token < 0) out[k - 1].text = js_trim_end(out[k - 1].text);
    if (t.rstrip && k + 1 < out.size() && out[k + 1].token < 0) out[k + 1].text = js_trim_start(out[k + 1].text);
  }
  out.erase(std::remove_if(out.begin() + std::ptrdiff_t(first), out.end(),
                           [](const TextSection& s) { return s.token < 0 && s.text.empty(); }),
            out.end());
}

}  // namespace ac
