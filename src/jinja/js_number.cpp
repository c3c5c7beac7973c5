#include "jinja/js_number.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "jinja/unicode.h"

namespace ac::jinja {

std::string js_number(double v) {
  if (std::isnan(v)) return "NaN";
  if (v == 0) return "0";
  if (std::isinf(v)) return v < 0 ? "-Infinity" : "Infinity";
  std::string sign = v < 0 ? "-" : "";
  // Shortest round-trip digits d1.d2...dk and exponent e: v = 0.d1...dk * 10^n with n = e + 1.
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, std::fabs(v), std::chars_format::scientific);
  std::string_view sci(buf, size_t(r.ptr - buf));
  size_t epos = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, epos))
    if (c != '.') digits.push_back(c);
  int e = std::atoi(std::string(sci.substr(epos + 1)).c_str());
  int k = int(digits.size()), n = e + 1;
  std::string out;
  if (k <= n && n <= 21) {
    out = digits + std::string(size_t(n - k), '0');
  } else if (0 < n && n <= 21) {
    out = digits.substr(0, size_t(n)) + "." + digits.substr(size_t(n));
  } else if (-6 < n && n <= 0) {
    out = "0." + std::string(size_t(-n), '0') + digits;
  } else {
    out = digits.substr(0, 1);
    if (k > 1) out += "." + digits.substr(1);
    out += (n - 1 >= 0 ? "e+" : "e-") + std::to_string(std::abs(n - 1));
  }
  return sign + out;
}

std::string js_float(double v) {
  if (v == 0 && std::signbit(v)) return "-0.0";
  if (std::isfinite(v) && std::fmod(v, 1.0) == 0) {
    if (std::fabs(v) >= 1e21) return js_number(v);  // toFixed falls back to toString there
    char buf[400];
    std::snprintf(buf, sizeof buf, "%.1f", v);  // exact decimal expansion, as toFixed(1)
    return buf;
  }
  return js_number(v);
}

std::string json_number(double v) { return std::isfinite(v) ? js_number(v) : "null"; }

namespace {

bool digit(char c) { return c >= '0' && c <= '9'; }

// The length of the longest StrDecimalLiteral (without sign) at the start of s, 0 if none;
// "Infinity" included.
size_t decimal_prefix(std::string_view s) {
  if (s.starts_with("Infinity")) return 8;
  size_t i = 0, int_digits = 0, frac_digits = 0;
  while (i < s.size() && digit(s[i])) ++i, ++int_digits;
  size_t end = i;
  if (i < s.size() && s[i] == '.') {
    size_t j = i + 1;
    while (j < s.size() && digit(s[j])) ++j, ++frac_digits;
    if (int_digits + frac_digits > 0) end = j;
  }
  if (int_digits + frac_digits == 0) return 0;
  if (end < s.size() && (s[end] == 'e' || s[end] == 'E')) {
    size_t j = end + 1;
    if (j < s.size() && (s[j] == '+' || s[j] == '-')) ++j;
    size_t exp_start = j;
    while (j < s.size() && digit(s[j])) ++j;
    if (j > exp_start) end = j;
  }
  return end;
}

// Drops a leading + or - from s and gives the sign it stood for.
double take_sign(std::string_view& s) {
  if (s.empty() || (s[0] != '+' && s[0] != '-')) return 1;
  double sign = s[0] == '-' ? -1 : 1;
  s.remove_prefix(1);
  return sign;
}

double parse_decimal(std::string_view s) {
  if (s == "Infinity") return std::numeric_limits<double>::infinity();
  return std::strtod(std::string(s).c_str(), nullptr);
}

}  // namespace

double js_to_number(std::string_view s) {
  s = js_trim(s);
  if (s.empty()) return 0;
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  if (s.size() > 2 && s[0] == '0') {
    int base = 0;
    char p = char(s[1] | 0x20);
    if (p == 'x') base = 16;
    if (p == 'o') base = 8;
    if (p == 'b') base = 2;
    if (base) {
      double v = 0;
      for (char c : s.substr(2)) {
        int d = digit(c) ? c - '0' : (c | 0x20) >= 'a' && (c | 0x20) <= 'f' ? (c | 0x20) - 'a' + 10 : 99;
        if (d >= base) return nan;
        v = v * base + d;
      }
      return v;
    }
  }
  std::string_view body = s;
  const double sign = take_sign(body);
  size_t n = decimal_prefix(body);
  if (n == 0 || n != body.size()) return nan;
  return sign * parse_decimal(body);
}

double js_parse_int(std::string_view s) {
  s = js_trim_start(s);
  const double sign = take_sign(s);
  size_t n = 0;
  while (n < s.size() && digit(s[n])) ++n;
  if (n == 0) return std::numeric_limits<double>::quiet_NaN();
  // Up to 20 digits JS computes exactly as a double; beyond, it rounds the whole decimal the same way.
  return sign * std::strtod(std::string(s.substr(0, n)).c_str(), nullptr);
}

double js_parse_float(std::string_view s) {
  s = js_trim_start(s);
  const double sign = take_sign(s);
  size_t n = decimal_prefix(s);
  if (n == 0) return std::numeric_limits<double>::quiet_NaN();
  return sign * parse_decimal(s.substr(0, n));
}

}  // namespace ac::jinja
