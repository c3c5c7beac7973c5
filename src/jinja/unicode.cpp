#include "jinja/unicode.h"

#include <utf8proc.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "jinja/error.h"

namespace ac::jinja {

size_t cp_len(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead < 0xe0) return 2;
  if (lead < 0xf0) return 3;
  return 4;
}

char32_t next_cp(std::string_view s, size_t& i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  unsigned char c = b(0);
  char32_t cp;
  size_t n = cp_len(c);
  if (i + n > s.size()) n = 1;  // never read past the end, even on bad input
  switch (n) {
    case 1: cp = c; break;
    case 2: cp = (char32_t(c & 0x1f) << 6) | (b(1) & 0x3f); break;
    case 3: cp = (char32_t(c & 0x0f) << 12) | (char32_t(b(1) & 0x3f) << 6) | (b(2) & 0x3f); break;
    default:
      cp = (char32_t(c & 0x07) << 18) | (char32_t(b(1) & 0x3f) << 12) | (char32_t(b(2) & 0x3f) << 6) | (b(3) & 0x3f);
  }
  i += n;
  return cp;
}

void append_cp(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(char(cp));
  } else if (cp < 0x800) {
    out.push_back(char(0xc0 | (cp >> 6)));
    out.push_back(char(0x80 | (cp & 0x3f)));
  } else if (cp < 0x10000) {
    out.push_back(char(0xe0 | (cp >> 12)));
    out.push_back(char(0x80 | ((cp >> 6) & 0x3f)));
    out.push_back(char(0x80 | (cp & 0x3f)));
  } else {
    out.push_back(char(0xf0 | (cp >> 18)));
    out.push_back(char(0x80 | ((cp >> 12) & 0x3f)));
    out.push_back(char(0x80 | ((cp >> 6) & 0x3f)));
    out.push_back(char(0x80 | (cp & 0x3f)));
  }
}

bool valid_utf8(std::string_view s) { return first_invalid_utf8(s) == std::string_view::npos; }

size_t first_invalid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t n;
    char32_t cp, min;
    if ((c & 0xe0) == 0xc0) n = 2, cp = c & 0x1f, min = 0x80;
    else if ((c & 0xf0) == 0xe0) n = 3, cp = c & 0x0f, min = 0x800;
    else if ((c & 0xf8) == 0xf0) n = 4, cp = c & 0x07, min = 0x10000;
    else return i;
    if (i + n > s.size()) return i;
    for (size_t k = 1; k < n; ++k) {
      unsigned char d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xc0) != 0x80) return i;
      cp = (cp << 6) | (d & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp < 0xe000)) return i;
    i += n;
  }
  return std::string_view::npos;
}

bool is_js_space(char32_t c) {
  if (c <= 32) return c == 32 || (c >= 9 && c <= 13);
  return c == 0xa0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f ||
         c == 0x205f || c == 0x3000 || c == 0xfeff;
}

size_t js_space_at(std::string_view s, size_t i) {
  if (i >= s.size()) return 0;
  size_t j = i;
  return is_js_space(next_cp(s, j)) ? j - i : 0;
}

size_t js_space_back(std::string_view s, size_t end, size_t floor) {
  while (end > floor) {
    size_t start = end - 1;
    while (start > floor && (static_cast<unsigned char>(s[start]) & 0xc0) == 0x80) --start;
    size_t j = start;
    if (!is_js_space(next_cp(s, j))) break;
    end = start;
  }
  return end;
}

std::string_view js_trim_start(std::string_view s) {
  size_t i = 0;
  while (size_t n = js_space_at(s, i)) i += n;
  return s.substr(i);
}

std::string_view js_trim_end(std::string_view s) { return s.substr(0, js_space_back(s, s.size())); }

std::string_view js_trim(std::string_view s) { return js_trim_end(js_trim_start(s)); }

size_t utf16_length(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) {
    if ((c & 0xc0) != 0x80) n += c >= 0xf0 ? 2 : 1;
  }
  return n;
}

std::optional<std::string> js_char_at(std::string_view s, double index) {
  double len = double(utf16_length(s));
  double k = std::isnan(index) ? 0 : std::trunc(index);
  if (k < 0) k += len;
  if (k < 0 || k >= len) return std::nullopt;
  size_t target = size_t(k), unit = 0, i = 0;
  while (i < s.size()) {
    size_t start = i;
    char32_t cp = next_cp(s, i);
    size_t units = cp >= 0x10000 ? 2 : 1;
    if (target < unit + units) {
      if (units == 2) fail("string index " + std::to_string(target) + " falls inside a surrogate pair");
      return std::string(s.substr(start, i - start));
    }
    unit += units;
  }
  return std::nullopt;
}

std::vector<std::string_view> code_points(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    size_t start = i;
    next_cp(s, i);
    out.push_back(s.substr(start, i - start));
  }
  return out;
}

namespace {

// Code points whose upper case is more than one code point (SpecialCasing.txt, unconditional
// entries), as JavaScript's toUpperCase maps them.
struct Special {
  char32_t cp;
  char32_t to[3];
};
constexpr Special kSpecialUpper[] = {
    {0xdf, {0x53, 0x53}}, {0x149, {0x2bc, 0x4e}}, {0x1f0, {0x4a, 0x30c}}, {0x390, {0x399, 0x308, 0x301}},
    {0x3b0, {0x3a5, 0x308, 0x301}}, {0x587, {0x535, 0x552}}, {0x1e96, {0x48, 0x331}}, {0x1e97, {0x54, 0x308}},
    {0x1e98, {0x57, 0x30a}}, {0x1e99, {0x59, 0x30a}}, {0x1e9a, {0x41, 0x2be}}, {0x1f50, {0x3a5, 0x313}},
    {0x1f52, {0x3a5, 0x313, 0x300}}, {0x1f54, {0x3a5, 0x313, 0x301}}, {0x1f56, {0x3a5, 0x313, 0x342}},
    {0x1f80, {0x1f08, 0x399}}, {0x1f81, {0x1f09, 0x399}}, {0x1f82, {0x1f0a, 0x399}}, {0x1f83, {0x1f0b, 0x399}},
    {0x1f84, {0x1f0c, 0x399}}, {0x1f85, {0x1f0d, 0x399}}, {0x1f86, {0x1f0e, 0x399}}, {0x1f87, {0x1f0f, 0x399}},
    {0x1f88, {0x1f08, 0x399}}, {0x1f89, {0x1f09, 0x399}}, {0x1f8a, {0x1f0a, 0x399}}, {0x1f8b, {0x1f0b, 0x399}},
    {0x1f8c, {0x1f0c, 0x399}}, {0x1f8d, {0x1f0d, 0x399}}, {0x1f8e, {0x1f0e, 0x399}}, {0x1f8f, {0x1f0f, 0x399}},
    {0x1f90, {0x1f28, 0x399}}, {0x1f91, {0x1f29, 0x399}}, {0x1f92, {0x1f2a, 0x399}}, {0x1f93, {0x1f2b, 0x399}},
    {0x1f94, {0x1f2c, 0x399}}, {0x1f95, {0x1f2d, 0x399}}, {0x1f96, {0x1f2e, 0x399}}, {0x1f97, {0x1f2f, 0x399}},
    {0x1f98, {0x1f28, 0x399}}, {0x1f99, {0x1f29, 0x399}}, {0x1f9a, {0x1f2a, 0x399}}, {0x1f9b, {0x1f2b, 0x399}},
    {0x1f9c, {0x1f2c, 0x399}}, {0x1f9d, {0x1f2d, 0x399}}, {0x1f9e, {0x1f2e, 0x399}}, {0x1f9f, {0x1f2f, 0x399}},
    {0x1fa0, {0x1f68, 0x399}}, {0x1fa1, {0x1f69, 0x399}}, {0x1fa2, {0x1f6a, 0x399}}, {0x1fa3, {0x1f6b, 0x399}},
    {0x1fa4, {0x1f6c, 0x399}}, {0x1fa5, {0x1f6d, 0x399}}, {0x1fa6, {0x1f6e, 0x399}}, {0x1fa7, {0x1f6f, 0x399}},
    {0x1fa8, {0x1f68, 0x399}}, {0x1fa9, {0x1f69, 0x399}}, {0x1faa, {0x1f6a, 0x399}}, {0x1fab, {0x1f6b, 0x399}},
    {0x1fac, {0x1f6c, 0x399}}, {0x1fad, {0x1f6d, 0x399}}, {0x1fae, {0x1f6e, 0x399}}, {0x1faf, {0x1f6f, 0x399}},
    {0x1fb2, {0x1fba, 0x399}}, {0x1fb3, {0x391, 0x399}}, {0x1fb4, {0x386, 0x399}}, {0x1fb6, {0x391, 0x342}},
    {0x1fb7, {0x391, 0x342, 0x399}}, {0x1fbc, {0x391, 0x399}}, {0x1fc2, {0x1fca, 0x399}}, {0x1fc3, {0x397, 0x399}},
    {0x1fc4, {0x389, 0x399}}, {0x1fc6, {0x397, 0x342}}, {0x1fc7, {0x397, 0x342, 0x399}}, {0x1fcc, {0x397, 0x399}},
    {0x1fd2, {0x399, 0x308, 0x300}}, {0x1fd3, {0x399, 0x308, 0x301}}, {0x1fd6, {0x399, 0x342}},
    {0x1fd7, {0x399, 0x308, 0x342}}, {0x1fe2, {0x3a5, 0x308, 0x300}}, {0x1fe3, {0x3a5, 0x308, 0x301}},
    {0x1fe4, {0x3a1, 0x313}}, {0x1fe6, {0x3a5, 0x342}}, {0x1fe7, {0x3a5, 0x308, 0x342}}, {0x1ff2, {0x1ffa, 0x399}},
    {0x1ff3, {0x3a9, 0x399}}, {0x1ff4, {0x38f, 0x399}}, {0x1ff6, {0x3a9, 0x342}}, {0x1ff7, {0x3a9, 0x342, 0x399}},
    {0x1ffc, {0x3a9, 0x399}}, {0xfb00, {0x46, 0x46}}, {0xfb01, {0x46, 0x49}}, {0xfb02, {0x46, 0x4c}},
    {0xfb03, {0x46, 0x46, 0x49}}, {0xfb04, {0x46, 0x46, 0x4c}}, {0xfb05, {0x53, 0x54}}, {0xfb06, {0x53, 0x54}},
    {0xfb13, {0x544, 0x546}}, {0xfb14, {0x544, 0x535}}, {0xfb15, {0x544, 0x53b}}, {0xfb16, {0x54e, 0x546}},
    {0xfb17, {0x544, 0x53d}},
};

// Case pairs newer than the Unicode version of utf8proc (Unicode 16 and 17, which the
// reference's JavaScript runtime knows): code point, its upper case, its lower case.
struct CasePair {
  char32_t cp, upper, lower;
};
constexpr CasePair kNewerCases[] = {
    {0x19b, 0xa7dc, 0x19b}, {0x264, 0xa7cb, 0x264}, {0x1c89, 0x1c89, 0x1c8a}, {0x1c8a, 0x1c89, 0x1c8a},
    {0xa7cb, 0xa7cb, 0x264}, {0xa7cc, 0xa7cc, 0xa7cd}, {0xa7cd, 0xa7cc, 0xa7cd},
    {0xa7ce, 0xa7ce, 0xa7cf}, {0xa7cf, 0xa7ce, 0xa7cf}, {0xa7d2, 0xa7d2, 0xa7d3},
    {0xa7d3, 0xa7d2, 0xa7d3}, {0xa7d4, 0xa7d4, 0xa7d5}, {0xa7d5, 0xa7d4, 0xa7d5},
    {0xa7da, 0xa7da, 0xa7db}, {0xa7db, 0xa7da, 0xa7db}, {0xa7dc, 0xa7dc, 0x19b},
    {0x10d50, 0x10d50, 0x10d70}, {0x10d51, 0x10d51, 0x10d71}, {0x10d52, 0x10d52, 0x10d72},
    {0x10d53, 0x10d53, 0x10d73}, {0x10d54, 0x10d54, 0x10d74}, {0x10d55, 0x10d55, 0x10d75},
    {0x10d56, 0x10d56, 0x10d76}, {0x10d57, 0x10d57, 0x10d77}, {0x10d58, 0x10d58, 0x10d78},
    {0x10d59, 0x10d59, 0x10d79}, {0x10d5a, 0x10d5a, 0x10d7a}, {0x10d5b, 0x10d5b, 0x10d7b},
    {0x10d5c, 0x10d5c, 0x10d7c}, {0x10d5d, 0x10d5d, 0x10d7d}, {0x10d5e, 0x10d5e, 0x10d7e},
    {0x10d5f, 0x10d5f, 0x10d7f}, {0x10d60, 0x10d60, 0x10d80}, {0x10d61, 0x10d61, 0x10d81},
    {0x10d62, 0x10d62, 0x10d82}, {0x10d63, 0x10d63, 0x10d83}, {0x10d64, 0x10d64, 0x10d84},
    {0x10d65, 0x10d65, 0x10d85}, {0x10d70, 0x10d50, 0x10d70}, {0x10d71, 0x10d51, 0x10d71},
    {0x10d72, 0x10d52, 0x10d72}, {0x10d73, 0x10d53, 0x10d73}, {0x10d74, 0x10d54, 0x10d74},
    {0x10d75, 0x10d55, 0x10d75}, {0x10d76, 0x10d56, 0x10d76}, {0x10d77, 0x10d57, 0x10d77},
    {0x10d78, 0x10d58, 0x10d78}, {0x10d79, 0x10d59, 0x10d79}, {0x10d7a, 0x10d5a, 0x10d7a},
    {0x10d7b, 0x10d5b, 0x10d7b}, {0x10d7c, 0x10d5c, 0x10d7c}, {0x10d7d, 0x10d5d, 0x10d7d},
    {0x10d7e, 0x10d5e, 0x10d7e}, {0x10d7f, 0x10d5f, 0x10d7f}, {0x10d80, 0x10d60, 0x10d80},
    {0x10d81, 0x10d61, 0x10d81}, {0x10d82, 0x10d62, 0x10d82}, {0x10d83, 0x10d63, 0x10d83},
    {0x10d84, 0x10d64, 0x10d84}, {0x10d85, 0x10d65, 0x10d85}, {0x16ea0, 0x16ea0, 0x16ebb},
    {0x16ea1, 0x16ea1, 0x16ebc}, {0x16ea2, 0x16ea2, 0x16ebd}, {0x16ea3, 0x16ea3, 0x16ebe},
    {0x16ea4, 0x16ea4, 0x16ebf}, {0x16ea5, 0x16ea5, 0x16ec0}, {0x16ea6, 0x16ea6, 0x16ec1},
    {0x16ea7, 0x16ea7, 0x16ec2}, {0x16ea8, 0x16ea8, 0x16ec3}, {0x16ea9, 0x16ea9, 0x16ec4},
    {0x16eaa, 0x16eaa, 0x16ec5}, {0x16eab, 0x16eab, 0x16ec6}, {0x16eac, 0x16eac, 0x16ec7},
    {0x16ead, 0x16ead, 0x16ec8}, {0x16eae, 0x16eae, 0x16ec9}, {0x16eaf, 0x16eaf, 0x16eca},
    {0x16eb0, 0x16eb0, 0x16ecb}, {0x16eb1, 0x16eb1, 0x16ecc}, {0x16eb2, 0x16eb2, 0x16ecd},
    {0x16eb3, 0x16eb3, 0x16ece}, {0x16eb4, 0x16eb4, 0x16ecf}, {0x16eb5, 0x16eb5, 0x16ed0},
    {0x16eb6, 0x16eb6, 0x16ed1}, {0x16eb7, 0x16eb7, 0x16ed2}, {0x16eb8, 0x16eb8, 0x16ed3},
    {0x16ebb, 0x16ea0, 0x16ebb}, {0x16ebc, 0x16ea1, 0x16ebc}, {0x16ebd, 0x16ea2, 0x16ebd},
    {0x16ebe, 0x16ea3, 0x16ebe}, {0x16ebf, 0x16ea4, 0x16ebf}, {0x16ec0, 0x16ea5, 0x16ec0},
    {0x16ec1, 0x16ea6, 0x16ec1}, {0x16ec2, 0x16ea7, 0x16ec2}, {0x16ec3, 0x16ea8, 0x16ec3},
    {0x16ec4, 0x16ea9, 0x16ec4}, {0x16ec5, 0x16eaa, 0x16ec5}, {0x16ec6, 0x16eab, 0x16ec6},
    {0x16ec7, 0x16eac, 0x16ec7}, {0x16ec8, 0x16ead, 0x16ec8}, {0x16ec9, 0x16eae, 0x16ec9},
    {0x16eca, 0x16eaf, 0x16eca}, {0x16ecb, 0x16eb0, 0x16ecb}, {0x16ecc, 0x16eb1, 0x16ecc},
    {0x16ecd, 0x16eb2, 0x16ecd}, {0x16ece, 0x16eb3, 0x16ece}, {0x16ecf, 0x16eb4, 0x16ecf},
    {0x16ed0, 0x16eb5, 0x16ed0}, {0x16ed1, 0x16eb6, 0x16ed1}, {0x16ed2, 0x16eb7, 0x16ed2},
    {0x16ed3, 0x16eb8, 0x16ed3}
};

const CasePair* newer_case(char32_t cp) {
  auto it = std::lower_bound(std::begin(kNewerCases), std::end(kNewerCases), cp,
                             [](const CasePair& p, char32_t c) { return p.cp < c; });
  return it != std::end(kNewerCases) && it->cp == cp ? it : nullptr;
}

char32_t simple_upper(char32_t cp) {
  if (const CasePair* p = newer_case(cp)) return p->upper;
  return char32_t(utf8proc_toupper(utf8proc_int32_t(cp)));
}

char32_t simple_lower(char32_t cp) {
  if (const CasePair* p = newer_case(cp)) return p->lower;
  return char32_t(utf8proc_tolower(utf8proc_int32_t(cp)));
}

const Special* special_upper(char32_t cp) {
  auto it = std::lower_bound(std::begin(kSpecialUpper), std::end(kSpecialUpper), cp,
                             [](const Special& s, char32_t c) { return s.cp < c; });
  return it != std::end(kSpecialUpper) && it->cp == cp ? it : nullptr;
}

bool is_cased(char32_t cp) {
  auto cat = utf8proc_category(utf8proc_int32_t(cp));
  return cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL || cat == UTF8PROC_CATEGORY_LT ||
         simple_upper(cp) != cp || simple_lower(cp) != cp;
}

bool is_case_ignorable(char32_t cp) {
  switch (cp) {
    case 0x27: case 0x2e: case 0x3a: case 0x5e: case 0x60: case 0xa8: case 0xad: case 0xaf: case 0xb4:
    case 0xb7: case 0xb8: case 0x2018: case 0x2019: case 0x2024: case 0x2027: case 0xfe13: case 0xfe52:
    case 0xfe55: case 0xff07: case 0xff0e: case 0xff1a:
      return true;
    default:
      break;
  }
  auto cat = utf8proc_category(utf8proc_int32_t(cp));
  return cat == UTF8PROC_CATEGORY_MN || cat == UTF8PROC_CATEGORY_ME || cat == UTF8PROC_CATEGORY_CF ||
         cat == UTF8PROC_CATEGORY_LM || cat == UTF8PROC_CATEGORY_SK;
}

// Final_Sigma (Unicode 3.13): a capital sigma lowers to final sigma when a cased letter precedes
// it and none follows (case-ignorable characters in between are skipped).
bool final_sigma(const std::vector<char32_t>& cps, size_t k) {
  bool before = false;
  for (size_t j = k; j-- > 0;) {
    if (is_case_ignorable(cps[j])) continue;
    before = is_cased(cps[j]);
    break;
  }
  if (!before) return false;
  for (size_t j = k + 1; j < cps.size(); ++j) {
    if (is_case_ignorable(cps[j])) continue;
    return !is_cased(cps[j]);
  }
  return true;
}

std::vector<char32_t> decode(std::string_view s) {
  std::vector<char32_t> cps;
  size_t i = 0;
  while (i < s.size()) cps.push_back(next_cp(s, i));
  return cps;
}

}  // namespace

std::string js_upper(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    char32_t cp = next_cp(s, i);
    if (cp < 0x80) {
      out.push_back(cp >= 'a' && cp <= 'z' ? char(cp - 32) : char(cp));
    } else if (const Special* sp = special_upper(cp)) {
      for (char32_t c : sp->to)
        if (c) append_cp(out, c);
    } else {
      append_cp(out, simple_upper(cp));
    }
  }
  return out;
}

std::string js_lower(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  bool ascii = std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
  if (ascii) {
    for (char c : s) out.push_back(c >= 'A' && c <= 'Z' ? char(c + 32) : c);
    return out;
  }
  std::vector<char32_t> cps = decode(s);
  for (size_t k = 0; k < cps.size(); ++k) {
    char32_t cp = cps[k];
    if (cp == 0x130) {  // capital I with dot above: i + combining dot
      append_cp(out, 0x69);
      append_cp(out, 0x307);
    } else if (cp == 0x3a3) {
      append_cp(out, final_sigma(cps, k) ? 0x3c2 : 0x3c3);
    } else {
      append_cp(out, simple_lower(cp));
    }
  }
  return out;
}

std::string js_title(std::string_view s) {
  const auto word = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  };
  std::string out(s);
  for (size_t i = 0; i < out.size(); ++i) {
    if (word(out[i]) && (i == 0 || !word(out[i - 1])) && out[i] >= 'a' && out[i] <= 'z') out[i] = char(out[i] - 32);
  }
  return out;
}

std::string js_capitalize(std::string_view s) {
  if (s.empty()) return {};
  size_t i = 0;
  char32_t cp = next_cp(s, i);
  if (cp >= 0x10000) return std::string(s);  // charAt(0) is half a surrogate pair: unchanged
  std::string out = js_upper(s.substr(0, i));
  out.append(s.substr(i));
  return out;
}

int compare_utf16(std::string_view a, std::string_view b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    char32_t x = next_cp(a, i), y = next_cp(b, j);
    if (x == y) continue;
    // The first UTF-16 unit of each: a surrogate (0xd800..) for code points beyond the BMP.
    auto unit = [](char32_t c) { return c < 0x10000 ? c : 0xd800 + ((c - 0x10000) >> 10); };
    char32_t ux = unit(x), uy = unit(y);
    if (ux != uy) return ux < uy ? -1 : 1;
    return x < y ? -1 : 1;  // same high surrogate: the low ones order as the code points
  }
  if (i < a.size()) return 1;
  if (j < b.size()) return -1;
  return 0;
}

namespace {

// The primary order of printable ASCII in the root collation (letters: lower and upper equal).
constexpr std::string_view kAsciiOrder = " _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$0123456789abcdefghijklmnopqrstuvwxyz";

struct Weights {
  std::vector<uint32_t> primary;
  std::vector<uint8_t> tertiary;
};

Weights weights(std::string_view s) {
  Weights w;
  size_t i = 0;
  while (i < s.size()) {
    char32_t cp = next_cp(s, i);
    if (cp < 0x20 || cp == 0x7f) continue;  // control characters are ignorable
    if (cp < 0x80) {
      char c = char(cp);
      bool upper = c >= 'A' && c <= 'Z';
      if (upper) c = char(c + 32);
      w.primary.push_back(uint32_t(kAsciiOrder.find(c)));
      w.tertiary.push_back(upper ? 1 : 0);
    } else {
      w.primary.push_back(0x100 + uint32_t(cp));
      w.tertiary.push_back(0);
    }
  }
  return w;
}

}  // namespace

int locale_compare(std::string_view a, std::string_view b) {
  Weights x = weights(a), y = weights(b);
  if (x.primary != y.primary) return x.primary < y.primary ? -1 : 1;
  if (x.tertiary != y.tertiary) return x.tertiary < y.tertiary ? -1 : 1;
  return 0;
}

std::string one_line(std::string_view s, size_t max_bytes) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    if (out.size() >= max_bytes) {
      out += "...";
      break;
    }
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '\n' || c == '\r' || c == '\t') {
      out.push_back(' ');
      ++i;
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
      ++i;
    } else if (c < 0x80) {
      out.push_back(char(c));
      ++i;
    } else {
      size_t start = i;
      char32_t cp = next_cp(s, i);
      // Line and paragraph separators and other invisible format characters would break the line.
      if (cp == 0x2028 || cp == 0x2029 || cp == 0x85 || (cp >= 0x80 && cp < 0xa0)) out.push_back(' ');
      else out.append(s.substr(start, i - start));
    }
  }
  return out;
}

}  // namespace ac::jinja
