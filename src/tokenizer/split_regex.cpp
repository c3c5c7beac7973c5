#include "agentcompile/tokenizer/split_regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <new>

#include "agentcompile/core/error.h"
#include "agentcompile/core/json.h"
#include "agentcompile/tokenizer/utf8.h"

namespace ac {

namespace {

// JavaScript's \s as class members (see utf8.h, is_js_space).
constexpr const char* kJsSpaceMembers =
    "\\t\\n\\x{0B}\\f\\r \\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}";
constexpr const char* kDigitMembers = "0-9";
constexpr const char* kWordMembers = "A-Za-z0-9_";

// Per-position limits: the supported patterns are linear, so hitting these means a pattern from a
// tokenizer.json is pathological, which is reported instead of hanging. The match limit is tried
// small first and raised fourfold while a position needs more (real patterns need a few units a
// position), each try charged to the call's MatchBudget in full: PCRE2 does not say how much of a
// limit a match used, and this keeps the charge within four times the work done.
constexpr uint64_t kMatchLimit = 50'000'000;
constexpr uint64_t kFirstLimit = 32;
constexpr uint32_t kHeapLimitKiB = 256 * 1024;
constexpr size_t kJitStackMax = 8u << 20;

std::string hex_escape(char32_t cp) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "\\x{%X}", static_cast<unsigned>(cp));
  return buf;
}

class Translator {
 public:
  Translator(std::string_view p, const std::string& subject) : p_(p), subject_(subject) {}

  std::string run() {
    while (i_ < p_.size()) {
      char c = p_[i_];
      if (c == '\\') {
        escape_outside();
      } else if (c == '[') {
        char_class();
      } else if (c == '(') {
        group_open();
      } else if (c == '.') {
        ++i_;
        out_ += "[^\\n\\r\\x{2028}\\x{2029}]";
      } else {
        copy_char();
      }
    }
    return out_;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw_input(subject_, why + " at offset " + std::to_string(i_) + " of the pattern");
  }

  void copy_char() {
    size_t j = i_;
    utf8_next(p_, j);
    out_.append(p_.substr(i_, j - i_));
    i_ = j;
  }

  // Reads {HEX...} or a fixed number of hex digits after the current position.
  char32_t read_hex(size_t fixed) {
    std::string digits;
    if (i_ < p_.size() && p_[i_] == '{') {
      size_t close = p_.find('}', i_);
      if (close == std::string_view::npos) fail("unterminated \\x{...} or \\u{...}");
      digits = std::string(p_.substr(i_ + 1, close - i_ - 1));
      i_ = close + 1;
    } else {
      if (i_ + fixed > p_.size()) fail("truncated hex escape");
      digits = std::string(p_.substr(i_, fixed));
      i_ += fixed;
    }
    if (digits.empty() || digits.size() > 6) fail("bad hex escape");
    char32_t cp = 0;
    for (char d : digits) {
      if (!std::isxdigit(static_cast<unsigned char>(d))) fail("bad hex escape");
      cp = cp * 16 + static_cast<char32_t>(std::isdigit(static_cast<unsigned char>(d)) ? d - '0'
                                                                                        : (std::tolower(d) - 'a' + 10));
    }
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) fail("escape is not a Unicode scalar value");
    return cp;
  }

  // \p{...} / \P{...}: copied; PCRE2 reports names it does not know.
  void property(char kind) {
    if (i_ >= p_.size() || p_[i_] != '{') fail("\\" + std::string(1, kind) + " needs {...}");
    size_t close = p_.find('}', i_);
    if (close == std::string_view::npos) fail("unterminated \\p{...}");
    out_ += '\\';
    out_ += kind;
    out_.append(p_.substr(i_, close - i_ + 1));
    i_ = close + 1;
  }

  // Escapes valid both inside and outside classes; returns false when `c` is not one of them.
  bool common_escape(char c) {
    switch (c) {
      case 'n': out_ += "\\n"; return true;
      case 'r': out_ += "\\r"; return true;
      case 't': out_ += "\\t"; return true;
      case 'f': out_ += "\\f"; return true;
      case 'v': out_ += "\\x{0B}"; return true;  // PCRE2's \v is a class of vertical space
      case '0':
        if (i_ < p_.size() && std::isdigit(static_cast<unsigned char>(p_[i_]))) fail("octal escapes are not supported");
        out_ += "\\x{0}";
        return true;
      case 'x': out_ += hex_escape(read_hex(2)); return true;
      case 'u': out_ += hex_escape(read_hex(4)); return true;
      case 'p':
      case 'P': property(c); return true;
      default: break;
    }
    if (static_cast<unsigned char>(c) < 0x80 && !std::isalnum(static_cast<unsigned char>(c))) {
      out_ += '\\';  // an escaped ASCII symbol is that symbol in both dialects
      out_ += c;
      return true;
    }
    return false;
  }

  void escape_outside() {
    if (i_ + 1 >= p_.size()) fail("pattern ends with a backslash");
    char c = p_[i_ + 1];
    i_ += 2;
    switch (c) {
      case 's': out_ += std::string("[") + kJsSpaceMembers + "]"; return;
      case 'S': out_ += std::string("[^") + kJsSpaceMembers + "]"; return;
      case 'd': out_ += std::string("[") + kDigitMembers + "]"; return;
      case 'D': out_ += std::string("[^") + kDigitMembers + "]"; return;
      case 'w': out_ += std::string("[") + kWordMembers + "]"; return;
      case 'W': out_ += std::string("[^") + kWordMembers + "]"; return;
      default: break;
    }
    if (common_escape(c)) return;
    if (static_cast<unsigned char>(c) >= 0x80) {
      --i_;  // an escaped non-ASCII character is itself
      copy_char();
      return;
    }
    fail(std::string("unsupported escape \\") + c);
  }

  void char_class() {
    ++i_;  // [
    bool negated = i_ < p_.size() && p_[i_] == '^';
    if (negated) ++i_;
    if (i_ < p_.size() && p_[i_] == ']') {
      ++i_;  // JavaScript: [] matches nothing, [^] matches any character
      out_ += negated ? "[\\x{0}-\\x{10FFFF}]" : "(?!)";
      return;
    }
    out_ += negated ? "[^" : "[";
    while (true) {
      if (i_ >= p_.size()) fail("unterminated character class");
      char c = p_[i_];
      if (c == ']') {
        ++i_;
        out_ += ']';
        return;
      }
      if (c == '\\') {
        if (i_ + 1 >= p_.size()) fail("pattern ends with a backslash");
        char e = p_[i_ + 1];
        i_ += 2;
        if (e == 's') out_ += kJsSpaceMembers;
        else if (e == 'd') out_ += kDigitMembers;
        else if (e == 'w') out_ += kWordMembers;
        else if (e == 'b') out_ += "\\x{8}";  // backspace inside a class
        else if (e == 'S' || e == 'D' || e == 'W') fail(std::string("\\") + e + " inside a character class is not supported");
        else if (!common_escape(e)) {
          if (static_cast<unsigned char>(e) >= 0x80) {
            --i_;
            copy_char();
          } else {
            fail(std::string("unsupported escape \\") + e + " in a character class");
          }
        }
        continue;
      }
      if (c == '-' || std::isalnum(static_cast<unsigned char>(c)) || static_cast<unsigned char>(c) >= 0x80) {
        copy_char();
      } else {
        out_ += '\\';  // '[', ':' and other symbols are literal in a JavaScript class
        out_ += c;
        ++i_;
      }
    }
  }

  void group_open() {
    std::string_view rest = p_.substr(i_);
    if (rest.substr(0, 4) == "(?i:") {
      case_insensitive_group();
      return;
    }
    if (rest.size() >= 2 && rest[1] == '*') fail("PCRE2 (*...) items are not supported");
    if (rest.size() >= 2 && rest[1] == '?') {
      static constexpr std::string_view kAllowed[] = {"(?:", "(?=", "(?!", "(?<=", "(?<!"};
      for (auto a : kAllowed) {
        if (rest.substr(0, a.size()) == a) {
          out_.append(a);
          i_ += a.size();
          return;
        }
      }
      if (rest.size() >= 3 && rest[2] == '<') {  // named group: its name is copied with it
        size_t close = rest.find('>');
        if (close == std::string_view::npos) fail("unterminated group name");
        out_.append(rest.substr(0, close + 1));
        i_ += close + 1;
        return;
      }
      fail("unsupported group syntax");
    }
    out_ += '(';
    ++i_;
  }

  // (?i:...) holding only literal text and '|': ASCII letters become [xX].
  void case_insensitive_group() {
    size_t close = p_.find(')', i_);
    if (close == std::string_view::npos) fail("unterminated (?i: group");
    std::string_view body = p_.substr(i_ + 4, close - i_ - 4);
    if (body.find_first_of("\\[](){}*+?.^$") != std::string_view::npos)
      fail("(?i: groups are supported only for literal alternatives");
    out_ += "(?:";
    for (size_t k = 0; k < body.size();) {
      char c = body[k];
      if (std::isalpha(static_cast<unsigned char>(c))) {
        out_ += '[';
        out_ += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        out_ += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        out_ += ']';
        ++k;
      } else {
        size_t j = k;
        utf8_next(body, j);
        out_.append(body.substr(k, j - k));
        k = j;
      }
    }
    out_ += ')';
    i_ = close + 1;
  }

  std::string_view p_;
  const std::string& subject_;
  size_t i_ = 0;
  std::string out_;
};

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  if (pcre2_get_error_message(code, buf, sizeof buf) < 0) return "PCRE2 error " + std::to_string(code);
  return reinterpret_cast<const char*>(buf);
}

// Per-thread match state: match data, a match context with the limits and a JIT stack.
struct Scratch {
  pcre2_match_data* data = nullptr;
  pcre2_match_context* ctx = nullptr;
  pcre2_jit_stack* stack = nullptr;
  Scratch() {
    data = pcre2_match_data_create(1, nullptr);
    ctx = pcre2_match_context_create(nullptr);
    stack = pcre2_jit_stack_create(32 * 1024, kJitStackMax, nullptr);
    if (data == nullptr || ctx == nullptr || stack == nullptr) throw std::bad_alloc();
    pcre2_set_heap_limit(ctx, kHeapLimitKiB);
    pcre2_jit_stack_assign(ctx, nullptr, stack);
  }
  ~Scratch() {
    pcre2_jit_stack_free(stack);
    pcre2_match_context_free(ctx);
    pcre2_match_data_free(data);
  }
};

Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

}  // namespace

struct SplitRegex::Impl {
  std::string pattern;
  std::string subject;  // names the pattern in errors
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Impl() { pcre2_code_free(code); }
};

std::string translate_split_regex(std::string_view pattern, const std::string& subject) {
  if (!utf8_valid(pattern)) throw_input(subject, "pattern is not valid UTF-8");
  return Translator(pattern, subject).run();
}

SplitRegex SplitRegex::compile(std::string pcre_pattern, uint32_t extra_options, const std::string& subject) {
  auto impl = std::make_shared<Impl>();
  impl->pattern = std::move(pcre_pattern);
  impl->subject = subject;
  int err = 0;
  PCRE2_SIZE offset = 0;
  // PCRE2_LITERAL allows few other options; the rest only matter to real patterns anyway.
  // Anchored: split() tries one position at a time, so that each try's work is accounted for
  // (an unanchored search gets a fresh match limit at every position it tries).
  const uint32_t options =
      (extra_options & PCRE2_LITERAL)
          ? PCRE2_UTF | PCRE2_ANCHORED | extra_options
          : PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY | PCRE2_NEVER_BACKSLASH_C | PCRE2_ANCHORED | extra_options;
  impl->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(impl->pattern.data()), impl->pattern.size(), options, &err,
                             &offset, nullptr);
  if (impl->code == nullptr)
    throw_input(subject, "cannot compile the pattern: " + pcre2_message(err) + " (at offset " + std::to_string(offset) +
                             " of the translated pattern " + json_quote(impl->pattern, 120) + ")");
  // No JIT (e.g. an unsupported CPU) is not fatal: the interpreter gives the same matches.
  impl->jit = pcre2_jit_compile(impl->code, PCRE2_JIT_COMPLETE) == 0;
  SplitRegex r;
  r.impl_ = std::move(impl);
  return r;
}

SplitRegex SplitRegex::from_regex(std::string_view pattern, const std::string& subject) {
  return compile(translate_split_regex(pattern, subject), 0, subject);
}

SplitRegex SplitRegex::from_literal(std::string_view literal, const std::string& subject) {
  if (!utf8_valid(literal)) throw_input(subject, "pattern is not valid UTF-8");
  if (literal.empty()) throw_input(subject, "empty String pattern");
  return compile(std::string(literal), PCRE2_LITERAL, subject);
}

const std::string& SplitRegex::pcre2_pattern() const { return impl_->pattern; }

// A match starting exactly at `pos`: PCRE2's return code (the match is in the scratch match data).
int SplitRegex::match_at(std::string_view text, size_t pos, MatchBudget& budget) const {
  Scratch& s = scratch();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  auto spent = [&]() {
    throw_input(impl_->subject, "the pattern needs more matching work than a " + std::to_string(text.size()) +
                                    "-byte text allows (" + std::to_string(budget.spent()) +
                                    " match-limit units spent): it backtracks pathologically");
  };
  for (uint64_t limit = kFirstLimit;; limit *= 4) {
    const uint64_t granted = std::min({limit, kMatchLimit, budget.left()});
    if (granted == 0) spent();
    pcre2_set_match_limit(s.ctx, static_cast<uint32_t>(granted));
    const int rc = impl_->jit ? pcre2_jit_match(impl_->code, subject, text.size(), pos, 0, s.data, s.ctx)
                              : pcre2_match(impl_->code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, s.data, s.ctx);
    budget.spend(granted);
    switch (rc) {
      case PCRE2_ERROR_MATCHLIMIT:
        if (granted == kMatchLimit)
          throw_input(impl_->subject, "the pattern needs more than " + std::to_string(kMatchLimit) +
                                          " match-limit units at one position: it backtracks pathologically");
        if (budget.left() == 0) spent();
        continue;
      case PCRE2_ERROR_HEAPLIMIT:
        throw_input(impl_->subject, "the pattern needs more than " + std::to_string(kHeapLimitKiB / 1024) +
                                        " MiB of backtracking memory at one position");
      case PCRE2_ERROR_JIT_STACKLIMIT:
        throw_input(impl_->subject, "the pattern needs more than " + std::to_string(kJitStackMax >> 20) +
                                        " MiB of stack at one position");
      default:
        if (rc < 0 && rc != PCRE2_ERROR_NOMATCH) throw_internal("pre-tokenizer regex", pcre2_message(rc));
        return rc;
    }
  }
}

void SplitRegex::split(std::string_view text, std::vector<std::string_view>& out) const {
  MatchBudget budget;
  split(text, out, budget);
}

void SplitRegex::split(std::string_view text, std::vector<std::string_view>& out, MatchBudget& budget) const {
  budget.grant(text.size());
  const size_t n = text.size();
  size_t prev = 0;  // end of the last piece emitted
  size_t pos = 0;   // where the next match may start
  while (pos <= n) {
    if (match_at(text, pos, budget) == PCRE2_ERROR_NOMATCH) {
      if (pos >= n) break;
      utf8_next(text, pos);  // the next character, as an unanchored search would try
      continue;
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(scratch().data);
    size_t ms = ov[0], me = ov[1];
    if (prev < ms) out.push_back(text.substr(prev, ms - prev));
    if (me > ms) out.push_back(text.substr(ms, me - ms));
    prev = me;
    if (me > ms) {
      pos = me;
    } else {
      // An empty match: step one character, as JavaScript's matchAll does with the u flag.
      if (me >= n) break;
      size_t j = me;
      utf8_next(text, j);
      pos = j;
    }
  }
  if (prev < n) out.push_back(text.substr(prev));
}

}  // namespace ac
