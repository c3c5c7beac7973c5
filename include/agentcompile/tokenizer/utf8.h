#pragma once
// UTF-8 helpers shared by the tokenizer: decoding with replacement exactly as the WHATWG
// TextDecoder does (what the reference tokenizer and every browser do with bad bytes), and the
// whitespace set of JavaScript's String.prototype.trim, which the reference's templates and
// added-token stripping use.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ac {

// Incremental UTF-8 decoder (WHATWG "UTF-8 decode" with replacement): valid sequences pass
// through unchanged, each maximal invalid subpart becomes U+FFFD. Output only ever holds whole
// characters; an incomplete sequence waits for more bytes, and finish() turns it into U+FFFD.
class Utf8Decoder {
 public:
  void push(std::string_view bytes, std::string& out);
  void finish(std::string& out);
  bool pending() const { return needed_ != 0; }

 private:
  void reset() {
    needed_ = seen_ = 0;
    lower_ = 0x80;
    upper_ = 0xBF;
  }
  uint8_t buf_[4] = {};
  int needed_ = 0;  // continuation bytes still expected
  int seen_ = 0;    // continuation bytes seen
  uint8_t lower_ = 0x80, upper_ = 0xBF;
};

// True when `s` is valid UTF-8 (no surrogates, no overlongs, nothing above U+10FFFF).
bool utf8_valid(std::string_view s);

// `s` with every invalid subpart replaced by U+FFFD (unchanged when already valid).
std::string utf8_sanitize(std::string_view s);

// Decodes the code point at s[i] of valid UTF-8 and advances i past it.
char32_t utf8_next(std::string_view s, size_t& i);

// Appends the UTF-8 encoding of cp (cp must be a scalar value).
void utf8_append(std::string& out, char32_t cp);

// JavaScript's WhiteSpace and LineTerminator set (what \s and trim() mean in JavaScript): tab,
// LF, VT, FF, CR, space, U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029, U+202F, U+205F,
// U+3000, U+FEFF. Unlike Unicode's White_Space it excludes U+0085 and includes U+FEFF.
bool is_js_space(char32_t cp);

// JavaScript trimStart / trimEnd / trim on valid UTF-8.
std::string_view js_trim_start(std::string_view s);
std::string_view js_trim_end(std::string_view s);
std::string_view js_trim(std::string_view s);

}  // namespace ac
