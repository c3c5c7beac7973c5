#pragma once
// Pre-tokenizer split patterns, matched with PCRE2 (UTF + UCP, JIT, match limits) but with the
// semantics of the reference tokenizer, which runs them as JavaScript regexes with flags "gu":
//  - \s is JavaScript's whitespace set (U+FEFF yes, U+0085 no), not Unicode's White_Space;
//  - \d and \w are ASCII-only; "." excludes \n, \r, U+2028, U+2029; $ matches only at the end;
//  - a case-insensitive group of literals, (?i:'s|'t|...), folds ASCII letters only (the reference
//    rewrites it to [sS]-style classes, so "'ſ" is not a contraction).
// Syntax with no faithful translation (\b, backreferences, other inline flags, \S inside a class)
// is rejected rather than approximated.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ac {

// Rewrites a tokenizer.json regex into a PCRE2 pattern with the JavaScript meaning above;
// throws BadInput "subject: ..." on unsupported syntax.
std::string translate_split_regex(std::string_view pattern, const std::string& subject);

class SplitRegex {
 public:
  // A tokenizer.json {"Regex": ...} pattern.
  static SplitRegex from_regex(std::string_view pattern, const std::string& subject);
  // A tokenizer.json {"String": ...} pattern: the literal text.
  static SplitRegex from_literal(std::string_view literal, const std::string& subject);

  // Appends the pieces of `text` (valid UTF-8) to out: every match and every stretch between
  // matches, in order, none empty (the "Isolated" split behaviour).
  void split(std::string_view text, std::vector<std::string_view>& out) const;

  const std::string& pcre2_pattern() const;

 private:
  static SplitRegex compile(std::string pcre2_pattern, uint32_t options, const std::string& subject);
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

}  // namespace ac
