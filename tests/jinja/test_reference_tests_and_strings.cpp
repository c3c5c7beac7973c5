// `is` tests, and the methods of strings and dicts (with the reference's quirks: strip ignores
// its argument, split takes maxsplit only by position, lengths count UTF-16 units).
#include "snippets.h"

namespace ac::test::jinja {
namespace {

TEST(JinjaReference, Tests) {
  std::vector<std::string> templates;
  const char* const names[] = {"defined", "undefined", "none", "string", "number", "integer", "boolean", "mapping",
                               "iterable", "sequence", "callable", "true", "false", "lower", "upper"};
  const char* const values[] = {"s", "e", "n", "f", "one", "t", "fl", "nul", "undefined_name", "l", "el", "d",
                                "ed", "(1, 2)", "range", "s.upper", "'ABC'", "'abc'", "'aBc'", "'123'", "u",
                                "loop", "namespace()", "messages[0]"};
  for (const char* test : names) {
    std::string t;
    for (const char* v : values) t += std::string("{{ ") + v + " is " + test + " }}," + "{{ " + v + " is not " + test + " }};";
    templates.push_back(t);
  }
  for (const char* more : {
           "{{ n is odd }}|{{ n is even }}|{{ neg is odd }}|{{ z is even }}|{{ (0 % 0) is odd }}|{{ 3 is not even }}",
           "{{ f is odd }}",
           "{{ s is odd }}",
           "{{ n is eq }}",
           "{{ n is equalto }}",
           "{{ n is equalto 42 }}",
           "{{ n is equalto(42) }}",
           "{{ n is float }}",
           "{{ n is ne }}",
           "{{ n is divisibleby(3) }}",
           "{{ s is in }}",
           "{{ n is 5 }}",
           "{{ n is defined and n is number }}|{{ not n is none }}|{{ n is not none and n > 1 }}",
           "{{ (el|first) is defined }}",
           "{{ (el|first) is number }}|{{ (el|first) is callable }}|{{ (el|first) is mapping }}",
           "{{ x is defined }}{% set x = 1 %}{{ x is defined }}",
       })
    templates.push_back(more);
  expect_same_as_reference(with_context(templates));
}

TEST(JinjaReference, StringMethods) {
  expect_same_as_reference(with_context({
      "{{ s.upper() }}|{{ s.lower() }}|{{ s.title() }}|{{ 'hELLO'.capitalize() }}|{{ u.upper() }}|{{ u.lower() }}",
      "[{{ ws.strip() }}]|[{{ ws.lstrip() }}]|[{{ ws.rstrip() }}]|[{{ 'xxaxx'.strip('x') }}]|[{{ '\\n\\na\\n'.lstrip('\\n') }}]",
      "{{ s.startswith('Hell') }}|{{ s.startswith('ell') }}|{{ s.endswith('rld') }}|{{ s.startswith('') }}|{{ s.endswith(('x', 'ld')) }}",
      "{{ s.startswith(['He', 'x']) }}|{{ s.startswith(()) }}|{{ e.startswith('') }}|{{ u.endswith('Σ') }}",
      "{{ s.startswith() }}",
      "{{ s.startswith(1) }}",
      "{{ s.startswith(('a', 1)) }}",
      "{{ s.split() }}|{{ ws.split() }}|{{ '  a  b  '.split() }}|{{ ''.split() }}|{{ '   '.split() }}|{{ 'a,b,,c'.split(',') }}",
      "{{ 'a,b,c'.split(',', 1) }}|{{ 'a,b,c'.split(',', 0) }}|{{ 'a,b,c'.split(',', -1) }}|{{ 'a,b,c'.split(',', 5) }}|{{ ',a,'.split(',') }}",
      "{{ '  a b  c '.split(none, 1) }}|{{ '  a b  c '.split(none, 0) }}|{{ 'a\\u00a0b\\u2003c'.split() }}|{{ 'abab'.split('ab') }}",
      "{{ s.split('') }}",
      "{{ s.split(1) }}",
      "{{ s.split(',', 1.5) }}",
      "{{ s.replace('l', 'L') }}|{{ s.replace('l', 'L', 2) }}|{{ s.replace('l', 'L', count=1) }}|{{ s.replace('', '.') }}",
      "{{ s.replace('l', 'L', none) }}|{{ s.replace('l', 'L', 0) }}|{{ s.replace('l', '$&$1') }}|{{ 'aaa'.replace('aa', 'b') }}",
      "{{ s.replace('l') }}",
      "{{ s.replace(1, 2) }}",
      "{{ s.replace('l', 'L', 'x') }}",
      "{{ s.length }}|{{ u.length }}|{{ '😀'.length }}|{{ s.length() }}",
      "{{ s.format(1) }}",
      "{{ s.join(['a']) }}",
      "{{ s.find('o') }}",
      "{{ s.nosuch }}|{{ s.nosuch is defined }}",
      "{{ '%s'|format(1) }}",
      "{{ '%s' % 1 }}",
      "{{ 'ǅǈ'.upper() }}|{{ 'ǅǈ'.lower() }}|{{ 'ΌΣΟΣ ΣΑ'.lower() }}|{{ 'İstanbul'.lower() }}|{{ 'ﬁ ŉ ΐ'.upper() }}",
      "{{ 'Straße'.upper()|length }}|{{ 'ΣΑΣ.'.lower() }}|{{ 'aΣ'.lower() }}|{{ 'Σ'.lower() }}",
      "{{ 'x1_y z-w'.title() }}|{{ '1st 2nd'.title() }}|{{ 'ab\\u00e9cd éf'.title() }}",
  }));
}

TEST(JinjaReference, AllCasedCharactersMapLikeJavaScript) {
  // Every code point up to U+1FFFF whose case changes, upper- and lower-cased both ways.
  std::string text;
  for (char32_t cp = 0x41; cp < 0x20000; ++cp) {
    if (cp >= 0xd800 && cp < 0xe000) continue;
    std::string one;
    if (cp < 0x80) one.push_back(char(cp));
    else if (cp < 0x800) one = {char(0xc0 | (cp >> 6)), char(0x80 | (cp & 0x3f))};
    else if (cp < 0x10000) one = {char(0xe0 | (cp >> 12)), char(0x80 | ((cp >> 6) & 0x3f)), char(0x80 | (cp & 0x3f))};
    else one = {char(0xf0 | (cp >> 18)), char(0x80 | ((cp >> 12) & 0x3f)), char(0x80 | ((cp >> 6) & 0x3f)), char(0x80 | (cp & 0x3f))};
    text += one + " ";
  }
  const std::string context = "{\"text\": " + Json(text).dump() + "}";
  expect_same_as_reference({
      {"{{ text.upper() }}", context},
      {"{{ text.lower() }}", context},
      {"{{ text|title }}", context},
      {"{% for w in text.split() %}{{ w|capitalize }}{% endfor %}", context},
      {"{{ text.split()|length }}|{{ text|length }}", context},
  });
}

}  // namespace
}  // namespace ac::test::jinja
