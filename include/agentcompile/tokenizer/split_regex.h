#pragma once
// Pre-tokenizer split patterns, matched with PCRE2 (UTF + UCP, JIT, match limits) but with the
// semantics of the reference tokenizer, which runs them as JavaScript regexes with flags "gu":
//  - \s is JavaScript's whitespace set (U+FEFF yes, U+0085 no), not Unicode's White_Space;
//  - \d and \w are ASCII-only; "." excludes \n, \r, U+2028, U+2029; $ matches only at the end;
//  - a case-insensitive group of literals, (?i:'s|'t|...), folds ASCII letters only (the reference
//    rewrites it to [sS]-style classes, so "'ſ" is not a contraction).
// Syntax with no faithful translation (\b, backreferences, other inline flags, \S inside a class,
// PCRE2's (*VERB) and (*SETTING) items) is rejected rather than approximated.
//
// Matching work is bounded per call of encode, not only per match: a pattern that backtracks
// heavily at every position of a text while staying under any per-match limit would otherwise
// take minutes on a few kilobytes. Every split pattern that one encode call runs draws from one
// MatchBudget, in PCRE2 match-limit units; running out is BadInput naming the pattern.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ac {

// Rewrites a tokenizer.json regex into a PCRE2 pattern with the JavaScript meaning above;
// throws BadInput "subject: ..." on unsupported syntax.
std::string translate_split_regex(std::string_view pattern, const std::string& subject);

// The matching work one encode call may spend: kBaseUnits plus kUnitsPerByte for each byte handed
// to a pattern. Real split patterns (Qwen3, Llama 3, GPT-2) spend at most a few units per byte
// (see test_tokenizer's SplitRegexBudget tests), so real prompts of any length stay far below it.
class MatchBudget {
 public:
  static constexpr uint64_t kBaseUnits = uint64_t(1) << 20;
  static constexpr uint64_t kUnitsPerByte = 1024;

  MatchBudget() = default;
  explicit MatchBudget(uint64_t units) : left_(units) {}
  void grant(size_t bytes) { left_ += kUnitsPerByte * bytes; }
  uint64_t left() const { return left_; }
  uint64_t spent() const { return spent_; }
  void spend(uint64_t units) {
    left_ -= units;
    spent_ += units;
  }

 private:
  uint64_t left_ = kBaseUnits;
  uint64_t spent_ = 0;
};

class SplitRegex {
 public:
  // A tokenizer.json {"Regex": ...} pattern.
  static SplitRegex from_regex(std::string_view pattern, const std::string& subject);
  // A tokenizer.json {"String": ...} pattern: the literal text.
  static SplitRegex from_literal(std::string_view literal, const std::string& subject);

  // Appends the pieces of `text` (valid UTF-8) to out: every match and every stretch between
  // matches, in order, none empty (the "Isolated" split behaviour). Grants `text` to the budget,
  // then spends from it; BadInput when it runs out or one position needs more than the
  // per-match limit.
  void split(std::string_view text, std::vector<std::string_view>& out, MatchBudget& budget) const;
  void split(std::string_view text, std::vector<std::string_view>& out) const;  // a budget of its own

  const std::string& pcre2_pattern() const;

 private:
  static SplitRegex compile(std::string pcre2_pattern, uint32_t options, const std::string& subject);
  int match_at(std::string_view text, size_t pos, MatchBudget& budget) const;
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

}  // namespace ac
