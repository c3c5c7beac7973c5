#include "jinja/lexer.h"

#include <array>
#include <string_view>

#include "jinja/error.h"
#include "jinja/unicode.h"

namespace ac::jinja {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_word(char c) { return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

struct Rule {
  std::string_view seq;
  Tok type;
};
// Tried in this order at each position (the longer spelling of a prefix first).
constexpr std::array kRules = {
    Rule{"{%", Tok::OpenStatement}, Rule{"%}", Tok::CloseStatement}, Rule{"{{", Tok::OpenExpression},
    Rule{"}}", Tok::CloseExpression}, Rule{"(", Tok::OpenParen}, Rule{")", Tok::CloseParen},
    Rule{"{", Tok::OpenBrace}, Rule{"}", Tok::CloseBrace}, Rule{"[", Tok::OpenBracket},
    Rule{"]", Tok::CloseBracket}, Rule{",", Tok::Comma}, Rule{".", Tok::Dot}, Rule{":", Tok::Colon},
    Rule{"|", Tok::Pipe}, Rule{"<=", Tok::Comparison}, Rule{">=", Tok::Comparison}, Rule{"==", Tok::Comparison},
    Rule{"!=", Tok::Comparison}, Rule{"<", Tok::Comparison}, Rule{">", Tok::Comparison},
    Rule{"+", Tok::Additive}, Rule{"-", Tok::Additive}, Rule{"~", Tok::Additive}, Rule{"**", Tok::Power},
    Rule{"*", Tok::Multiplicative}, Rule{"//", Tok::Multiplicative}, Rule{"/", Tok::Multiplicative},
    Rule{"%", Tok::Multiplicative}, Rule{"=", Tok::Equals},
};

class Lexer {
 public:
  explicit Lexer(const SourceText& src) : src_(src), s_(src.text) {}

  std::vector<Token> run() {
    while (cur_ < s_.size()) step();
    tokens_.push_back({Tok::End, "", pos_of(s_.size())});
    return std::move(tokens_);
  }

 private:
  uint32_t pos_of(size_t i) const { return src_.origin[std::min(i, s_.size())]; }
  [[noreturn]] void error(std::string what) const { fail_at(pos_of(cur_), std::move(what)); }
  char at(size_t i) const { return i < s_.size() ? s_[i] : '\0'; }
  bool last_is(Tok t) const { return !tokens_.empty() && tokens_.back().type == t; }
  void push(Tok t, std::string v, size_t start) { tokens_.push_back({t, std::move(v), pos_of(start)}); }

  // Consumes while `pred` holds; like the reference, running into the end of the text is an error.
  template <class Pred>
  std::string_view consume_while(Pred pred) {
    size_t start = cur_;
    while (cur_ < s_.size() && pred(cur_)) {
      cur_ += width(cur_);
      if (cur_ >= s_.size()) error("unexpected end of template");
    }
    return std::string_view(s_).substr(start, cur_ - start);
  }
  size_t width(size_t i) const { return cp_len(static_cast<unsigned char>(s_[i])); }

  void strip_trailing_whitespace() {
    if (!last_is(Tok::Text)) return;
    std::string& v = tokens_.back().value;
    v.resize(js_trim_end(v).size());
    if (v.empty()) tokens_.pop_back();
  }
  void skip_leading_whitespace() {
    while (size_t n = js_space_at(s_, cur_)) cur_ += n;
  }

  void step() {
    const Tok* last = tokens_.empty() ? nullptr : &tokens_.back().type;
    const bool after_tag = !last || *last == Tok::CloseStatement || *last == Tok::CloseExpression || *last == Tok::Comment;
    if (after_tag) {
      size_t end = cur_;
      while (true) {
        end = s_.find('{', end);
        if (end == std::string::npos) {
          end = s_.size();
          break;
        }
        char next = at(end + 1);
        if (next == '%' || next == '{' || next == '#') break;
        ++end;
      }
      if (end > cur_) {
        push(Tok::Text, s_.substr(cur_, end - cur_), cur_);
        cur_ = end;
        return;
      }
    }
    const Tok last_type = last ? *last : Tok::End;  // End: no token yet

    if (at(cur_) == '{') {
      char next = at(cur_ + 1);
      if (next == '#') {
        size_t start = cur_;
        cur_ += 2;
        bool strip_before = at(cur_) == '-';
        if (strip_before) ++cur_;
        size_t end = s_.find("#}", cur_);
        if (end == std::string::npos) fail_at(pos_of(start), "comment not closed (missing \"#}\")");
        std::string comment = s_.substr(cur_, end - cur_);
        bool strip_after = !comment.empty() && comment.back() == '-';
        if (strip_after) comment.pop_back();
        if (strip_before) strip_trailing_whitespace();
        push(Tok::Comment, std::move(comment), start);
        cur_ = end + 2;
        if (strip_after) skip_leading_whitespace();
        return;
      }
      if (at(cur_ + 2) == '-' && (next == '%' || next == '{')) {
        strip_trailing_whitespace();
        push(next == '%' ? Tok::OpenStatement : Tok::OpenExpression, next == '%' ? "{%" : "{{", cur_);
        if (next == '{') brace_depth_ = 0;
        cur_ += 3;
        return;
      }
    }

    consume_while([&](size_t i) { return js_space_at(s_, i) > 0; });

    const size_t start = cur_;
    const char c = at(cur_);
    if (c == '-' && at(cur_ + 2) == '}' && (at(cur_ + 1) == '%' || at(cur_ + 1) == '}')) {
      bool stmt = at(cur_ + 1) == '%';
      push(stmt ? Tok::CloseStatement : Tok::CloseExpression, stmt ? "%}" : "}}", start);
      cur_ += 3;
      skip_leading_whitespace();
      return;
    }

    if (c == '-' || c == '+') {
      if (last_type == Tok::Text || last_type == Tok::End) error(std::string("unexpected character '") + c + "'");
      switch (last_type) {
        case Tok::Name: case Tok::Number: case Tok::String: case Tok::CloseParen: case Tok::CloseBracket:
          break;  // a binary operator
        default: {
          ++cur_;
          std::string num(consume_while([&](size_t i) { return is_digit(s_[i]); }));
          if (!num.empty() && at(cur_) == '.' && is_digit(at(cur_ + 1))) {
            ++cur_;
            num += "." + std::string(consume_while([&](size_t i) { return is_digit(s_[i]); }));
          }
          if (num.empty()) push(Tok::Unary, std::string(1, c), start);
          else push(Tok::Number, std::string(1, c) + num, start);
          return;
        }
      }
    }

    for (const Rule& r : kRules) {
      if (r.seq == "}}" && brace_depth_ > 0) continue;
      if (std::string_view(s_).substr(cur_).starts_with(r.seq)) {
        push(r.type, std::string(r.seq), start);
        if (r.type == Tok::OpenExpression) brace_depth_ = 0;
        else if (r.type == Tok::OpenBrace) ++brace_depth_;
        else if (r.type == Tok::CloseBrace) --brace_depth_;
        cur_ += r.seq.size();
        return;
      }
    }

    if (c == '\'' || c == '"') {
      ++cur_;
      push(Tok::String, read_string(c, start), start);
      ++cur_;
      return;
    }
    if (is_digit(c)) {
      std::string num(consume_while([&](size_t i) { return is_digit(s_[i]); }));
      if (last_type != Tok::Dot && at(cur_) == '.' && is_digit(at(cur_ + 1))) {
        ++cur_;
        num += "." + std::string(consume_while([&](size_t i) { return is_digit(s_[i]); }));
      }
      push(Tok::Number, std::move(num), start);
      return;
    }
    if (is_word(c)) {
      push(Tok::Name, std::string(consume_while([&](size_t i) { return is_word(s_[i]); })), start);
      return;
    }
    size_t i = cur_;
    std::string ch;
    if (cur_ < s_.size()) {
      next_cp(s_, i);
      ch = s_.substr(cur_, i - cur_);
    }
    error("unexpected character " + (ch.empty() ? std::string("at the end") : "'" + one_line(ch) + "'"));
  }

  // The body of a string literal up to (not including) the closing quote, escapes resolved.
  std::string read_string(char quote, size_t start) {
    std::string out;
    std::u16string pending;  // \u escapes, joined into surrogate pairs before they become UTF-8
    auto flush = [&] {
      for (size_t k = 0; k < pending.size(); ++k) {
        char32_t u = pending[k];
        if (u >= 0xd800 && u < 0xdc00 && k + 1 < pending.size() && pending[k + 1] >= 0xdc00 && pending[k + 1] < 0xe000) {
          append_cp(out, 0x10000 + ((u - 0xd800) << 10) + (pending[k + 1] - 0xdc00));
          ++k;
        } else if (u >= 0xd800 && u < 0xe000) {
          fail_at(pos_of(start), "string literal holds a lone surrogate escape");
        } else {
          append_cp(out, u);
        }
      }
      pending.clear();
    };
    while (true) {
      if (cur_ >= s_.size()) fail_at(pos_of(start), "string literal not closed");
      char c = s_[cur_];
      if (c == quote) break;
      ++cur_;
      if (c != '\\') {
        flush();
        out.push_back(c);
        continue;
      }
      if (cur_ >= s_.size()) fail_at(pos_of(start), "string literal not closed");
      char e = s_[cur_++];
      if (e == 'x' || e == 'u') {
        size_t n = e == 'x' ? 2 : 4;
        std::string hex = s_.substr(cur_, n);
        bool ok = hex.size() == n;
        for (char h : hex) ok = ok && (is_digit(h) || ((h | 0x20) >= 'a' && (h | 0x20) <= 'f'));
        if (!ok) fail_at(pos_of(cur_ - 2), "invalid escape \\" + std::string(1, e) + one_line(hex));
        pending.push_back(char16_t(std::stoul(hex, nullptr, 16)));
        cur_ += n;
        continue;
      }
      flush();
      switch (e) {
        case 'n': out.push_back('\n'); break;
        case 't': out.push_back('\t'); break;
        case 'r': out.push_back('\r'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'v': out.push_back('\v'); break;
        case '\'': case '"': case '\\': out.push_back(e); break;
        default: {
          size_t i = cur_ - 1;
          next_cp(s_, i);
          fail_at(pos_of(cur_ - 2), "unknown escape \\" + one_line(s_.substr(cur_ - 1, i - (cur_ - 1))));
        }
      }
    }
    flush();
    return out;
  }

  const SourceText& src_;
  const std::string& s_;
  size_t cur_ = 0;
  int brace_depth_ = 0;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(const SourceText& src) { return Lexer(src).run(); }

}  // namespace ac::jinja
