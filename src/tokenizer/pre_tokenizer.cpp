#include "agentcompile/tokenizer/pre_tokenizer.h"

#include "agentcompile/core/error.h"

namespace ac {

namespace {

// The GPT-2 split pattern that a ByteLevel pre-tokenizer with use_regex applies (the reference's
// JavaScript form of it).
constexpr std::string_view kGpt2Pattern = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

bool opt_bool(const Json& j, const std::string& subject, const std::string& key, bool fallback) {
  return json_opt_bool(j, subject, key).value_or(fallback);
}

}  // namespace

PreTokenizer PreTokenizer::from_json(const Json& j, const std::string& subject) {
  if (j.is_null()) throw_input(subject, "missing (a ByteLevel pre-tokenizer is required: only byte-level BPE is supported)");
  std::vector<std::pair<const Json*, std::string>> items;
  if (!j.is_object()) throw_input(subject, "expected an object");
  if (json_string(j, subject, "type") == "Sequence") {
    const Json& list = json_require(j, subject, "pretokenizers");
    if (!list.is_array()) throw_input(subject, "pretokenizers: expected an array");
    for (size_t k = 0; k < list.size(); ++k) items.emplace_back(&list[k], subject + ".pretokenizers[" + std::to_string(k) + "]");
  } else {
    items.emplace_back(&j, subject);
  }

  PreTokenizer p;
  for (const auto& [item, where] : items) {
    if (!item->is_object()) throw_input(where, "expected an object");
    std::string type = json_string(*item, where, "type");
    if (!p.steps_.empty() && p.steps_.back().byte_level)
      throw_input(where, "type: " + json_quote(type, 60) + " after ByteLevel is not supported (ByteLevel must be the last step)");
    Step s;
    if (type == "Split") {
      const Json& pat = json_require(*item, where, "pattern");
      if (!pat.is_object()) throw_input(where, "pattern: expected an object with Regex or String");
      if (auto re = json_opt_string(pat, where + ".pattern", "Regex")) {
        s.regex = SplitRegex::from_regex(*re, where + ".pattern.Regex");
      } else if (auto lit = json_opt_string(pat, where + ".pattern", "String")) {
        s.regex = SplitRegex::from_literal(*lit, where + ".pattern.String");
      } else {
        throw_input(where, "pattern: expected Regex or String");
      }
      std::string behavior = json_opt_string(*item, where, "behavior").value_or("Isolated");
      if (behavior != "Isolated") throw_input(where, "behavior: " + json_quote(behavior, 60) + " is not supported (Isolated)");
      if (opt_bool(*item, where, "invert", false)) throw_input(where, "invert: true is not supported");
    } else if (type == "ByteLevel") {
      s.byte_level = true;
      s.add_prefix_space = opt_bool(*item, where, "add_prefix_space", false);
      s.use_regex = opt_bool(*item, where, "use_regex", true);
      if (s.use_regex) s.regex = SplitRegex::from_regex(kGpt2Pattern, where + " (GPT-2 pattern)");
    } else {
      throw_input(where, "type: " + json_quote(type, 60) + " is not supported (Split, ByteLevel, Sequence)");
    }
    p.steps_.push_back(std::move(s));
  }
  if (p.steps_.empty() || !p.steps_.back().byte_level)
    throw_input(subject, "a ByteLevel step is required (only byte-level BPE is supported)");
  return p;
}

void PreTokenizer::split(std::string_view text, std::vector<std::string_view>& out, std::deque<std::string>& arena,
                         MatchBudget& budget) const {
  std::vector<std::string_view> cur{text}, next;
  for (const Step& s : steps_) {
    if (s.byte_level && !s.add_prefix_space && !s.use_regex) continue;  // only the byte mapping: implicit
    next.clear();
    for (std::string_view piece : cur) {
      if (s.byte_level && s.add_prefix_space && (piece.empty() || piece.front() != ' ')) {
        arena.push_back(" " + std::string(piece));
        piece = arena.back();
      }
      if (!s.byte_level || s.use_regex) s.regex.split(piece, next, budget);
      else next.push_back(piece);
    }
    cur.swap(next);
  }
  out.insert(out.end(), cur.begin(), cur.end());
}

}  // namespace ac
