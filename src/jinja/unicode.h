#pragma once
// Text operations with the semantics of JavaScript strings (the reference engine runs on them),
// over our UTF-8 strings: lengths and indexes count UTF-16 code units, whitespace is JS's \s,
// case mapping is String.prototype.toUpperCase/toLowerCase (full Unicode mappings), comparison
// is UTF-16 code-unit order.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ac::jinja {

// Decodes the code point at s[i] (valid UTF-8 assumed) and advances i past it.
char32_t next_cp(std::string_view s, size_t& i);
// The byte length of the UTF-8 sequence that starts with byte `lead`.
size_t cp_len(unsigned char lead);
void append_cp(std::string& out, char32_t cp);
bool valid_utf8(std::string_view s);
// The offset of the first byte that is not valid UTF-8, or npos.
size_t first_invalid_utf8(std::string_view s);

// JavaScript's WhiteSpace + LineTerminator (the /\s/ class, String.prototype.trim).
bool is_js_space(char32_t cp);
// The length in bytes of the JS whitespace character at s[i], or 0.
size_t js_space_at(std::string_view s, size_t i);
// The start of the JS whitespace run that ends at `end` (going back no further than `floor`).
size_t js_space_back(std::string_view s, size_t end, size_t floor = 0);

std::string_view js_trim(std::string_view s);
std::string_view js_trim_start(std::string_view s);
std::string_view js_trim_end(std::string_view s);

size_t utf16_length(std::string_view s);
// s.at(index) in UTF-16 code units (negative counts from the end): the character there, nullopt
// when out of range. Fails when the index falls inside a surrogate pair (a lone surrogate cannot
// be written as UTF-8).
std::optional<std::string> js_char_at(std::string_view s, double index);
// The code points of s, each as its UTF-8 bytes (Array.from(s)).
std::vector<std::string_view> code_points(std::string_view s);

std::string js_upper(std::string_view s);
std::string js_lower(std::string_view s);
// /\b\w/g upper-cased: the first ASCII word character after a non-word one.
std::string js_title(std::string_view s);
// charAt(0).toUpperCase() + slice(1): only the first UTF-16 unit changes.
std::string js_capitalize(std::string_view s);

// JS `<` on strings: -1, 0 or 1 in UTF-16 code-unit order.
int compare_utf16(std::string_view a, std::string_view b);
// String.prototype.localeCompare for the en-US locale, exact for ASCII text (root collation:
// punctuation, digits, letters with lower case first) and in code-point order beyond it.
int locale_compare(std::string_view a, std::string_view b);

}  // namespace ac::jinja
