// Expressions: literals, arithmetic (integers and floats are JavaScript doubles), comparison,
// logic, membership, concatenation, conditionals, subscripts, slices, attributes and calls.
#include "snippets.h"

namespace ac::test::jinja {
namespace {

TEST(JinjaReference, Literals) {
  expect_same_as_reference(with_context({
      "{{ 1 }}|{{ -1 }}|{{ 1.5 }}|{{ -0.0 }}|{{ 0.0 }}|{{ 2.0 }}|{{ 1e3 }}",
      "{{ 'single' }}|{{ \"double\" }}|{{ 'a' 'b' \"c\" }}",
      "{{ 'esc: \\n\\t\\\\ \\' \\\" \\x41 \\u00e9 \\ud83d\\ude00 \\b\\f\\v' }}",
      "{{ 'bad \\q escape' }}",
      "{{ 'unterminated }}",
      "{{ true }}|{{ false }}|{{ True }}|{{ False }}|{{ none }}|{{ None }}|[{{ undefined_name }}]",
      "{{ [1, 'a', none, true, 2.5] }}|{{ [] }}|{{ [[1], [2, [3]]] }}",
      "{{ [1, 2, ] }}|{{ [1 2] }}",
      "{{ {'a': 1, 'b': [1, 2], 'c': {'d': none}} }}|{{ {} }}|{{ {'a': 1, 'a': 2} }}",
      "{{ (1, 2) }}",
      "{{ (1) }}|{{ ((((2)))) }}",
      "{{ () }}",
      "{{ {1: 2} }}",
      "{{ 007 }}|{{ 1.50 }}|{{ 123456789012345678901234567890 }}|{{ 0.1 + 0.2 }}",
      "{{ 12345678901234567890 }}|{{ 9007199254740993 }}",
      "{{ [1.0, 2.50, -0.0] }}|{{ {'x': 1.0} }}",
      "{{ 'a' ~ 1.0 ~ 2 ~ true ~ none }}",
      "{{ 'x' if true }}|{{ 'x' if false }}|{{ 'y' if false else 'z' }}",
  }));
}

TEST(JinjaReference, Arithmetic) {
  expect_same_as_reference(with_context({
      "{{ 1 + 2 }}|{{ 1 - 2 }}|{{ 2 * 3 }}|{{ 7 / 2 }}|{{ 6 / 2 }}|{{ 7 // 2 }}|{{ -7 // 2 }}|{{ 7 % 3 }}|{{ -7 % 3 }}",
      "{{ 1.5 + 1 }}|{{ 1.5 + 1.5 }}|{{ 2 * 1.5 }}|{{ 7.0 // 2 }}|{{ 7 % 2.5 }}|{{ 2 ** 10 }}|{{ 2 ** -1 }}|{{ 2 ** 0.5 }}",
      "{{ 2 ** 3 ** 2 }}|{{ 2 * 3 + 4 }}|{{ 2 + 3 * 4 }}|{{ (2 + 3) * 4 }}|{{ 10 - 2 - 3 }}|{{ 2 ** 2 * 3 }}",
      "{{ 1 / 0 }}|{{ -1 / 0 }}|{{ 0 / 0 }}|{{ 1 // 0 }}|{{ 5 % 0 }}|{{ 5.0 % 0 }}",
      "{{ 0 ** -1 }}",
      "{{ (-8) ** 0.5 }}",
      "{{ 10 ** 400 }}",
      "{{ 10 ** 21 }}|{{ 10 ** 20 }}|{{ 2 ** 53 + 1 }}|{{ 1e-7 }}|{{ 0.000001 }}|{{ 1.5e300 * 10 }}",
      "{{ n + f }}|{{ n - neg }}|{{ n * z }}|{{ n / 5 }}|{{ neg // 2 }}|{{ neg % 4 }}|{{ huge }}|{{ tiny }}|{{ big }}",
      "{{ one }}|{{ one + 1 }}|{{ one / 2 }}|{{ half * 2 }}|{{ third }}|{{ one is integer }}|{{ half is float }}",
      "{{ -n }}|{{ +n }}|{{ -f }}|{{ - -3 }}|{{ -true }}|{{ +false }}|{{ -z }}|{{ -(0.0) }}",
      "{{ -'a' }}",
      "{{ true + 1 }}",
      "{{ true ** 2 }}|{{ 2 ** true }}|{{ 1.5 ** 2 }}",
      "{{ 'a' + 'b' }}|{{ 'a' + 1 }}|{{ 1 + 'a' }}|{{ 'a' + 1.0 }}|{{ 'a' + true }}|{{ 'a' + [1, 2] }}|{{ [1] + 'a' }}",
      "{{ 'a' + {'k': 1} }}",
      "{{ 'a' * 3 }}",
      "{{ [1] * 3 }}",
      "{{ [1, 2] + [3] }}|{{ [] + [] }}|{{ (1, 2) + [3] }}",
      "{{ 'a' - 1 }}",
      "{{ none + 1 }}",
      "{{ undefined_name + 1 }}",
      "{{ 'x' ~ undefined_name ~ 'y' }}|{{ undefined_name ~ undefined_name }}",
      "{{ none ~ undefined_name }}",
      "{{ 1 ~ 2 }}|{{ [1, [2, 3]] ~ '' }}|{{ {'a': 1} ~ '' }}|{{ 1.0 ~ '' }}|{{ 1.5 ~ 2.0 }}|{{ none ~ 'x' }}",
      "{{ 4 * 4 is even }}|{{ 3 * 3 is odd }}",
  }));
}

TEST(JinjaReference, Comparisons) {
  expect_same_as_reference(with_context({
      "{{ 1 == 1 }}|{{ 1 == 1.0 }}|{{ 1 == '1' }}|{{ '1' == 1 }}|{{ 0 == '' }}|{{ 0 == ' ' }}|{{ 1 == true }}|{{ 2 == true }}",
      "{{ none == none }}|{{ none == undefined_name }}|{{ none == 0 }}|{{ none == false }}|{{ undefined_name == 0 }}",
      "{{ [1] == [1] }}|{{ l == l }}|{{ [1] == 1 }}|{{ [1] == '1' }}|{{ [] == '' }}|{{ [] == 0 }}|{{ [1, 2] == '1,2' }}",
      "{{ {} == {} }}|{{ d == d }}|{{ {} == '[object Map]' }}|{{ 'abc' == 'abc' }}|{{ 'a' != 'b' }}|{{ 1 != 1.0 }}",
      "{{ '0x10' == 16 }}|{{ ' 12 ' == 12 }}|{{ '1e3' == 1000 }}|{{ 'Infinity' == 1/0 }}|{{ 'abc' == 0 }}|{{ '' == false }}",
      "{{ 1 < 2 }}|{{ 2 < 1 }}|{{ 1 <= 1 }}|{{ 1 >= 2 }}|{{ 1.5 > 1 }}|{{ 0 / 0 < 1 }}|{{ neg < z }}",
      "{{ 'a' < 'b' }}",
      "{{ 1 < 2 < 3 }}",
      "{{ true < 2 }}",
      "{{ [1] < [2] }}",
      "{{ none < 1 }}",
      "{{ 'a' in 'cat' }}|{{ 'x' in 'cat' }}|{{ 'a' not in 'cat' }}|{{ '' in 'cat' }}",
      "{{ 1 in [1, 2] }}|{{ 3 in l }}|{{ '1' in [1] }}|{{ 1.0 in [1] }}|{{ none in [none] }}|{{ [1] in [[1]] }}|{{ 5 not in l }}",
      "{{ 'a' in d }}|{{ 'z' in d }}|{{ '10' in d }}|{{ 'a' not in d }}|{{ 'get' in d }}",
      "{{ 1 in d }}",
      "{{ 'a' in none }}",
      "{{ 'a' in undefined_name }}|{{ 'a' not in undefined_name }}",
      "{{ undefined_name in [1] }}",
      "{{ 1 in 1 }}",
      "{{ 'a' in ['a', 'b'] == true }}",
      "{{ (1, 2) == (1, 2) }}|{{ l[0] == 3 }}",
      "{{ 0.1 + 0.2 == 0.3 }}|{{ 0 == -0 }}|{{ (0/0) == (0/0) }}",
  }));
}

TEST(JinjaReference, Logic) {
  expect_same_as_reference(with_context({
      "{{ true and false }}|{{ true or false }}|{{ not true }}|{{ not not 1 }}|{{ not '' }}|{{ not [] }}|{{ not {} }}",
      "{{ 1 and 2 }}|{{ 0 and 2 }}|{{ 1 or 2 }}|{{ 0 or 2 }}|{{ '' or 'x' }}|{{ [] or 'x' }}|{{ none or 'x' }}|{{ none and 'x' }}",
      "{{ 'a' and [] }}|{{ {} or d }}|{{ ed or 'empty' }}|{{ el or 'empty' }}|{{ e or 'empty' }}|{{ z or 'zero' }}",
      "{{ undefined_name or 'dflt' }}|{{ undefined_name and 1 }}|{{ not undefined_name }}",
      "{{ true or undefined_name.x.y }}|{{ false and 1 / 0 }}",
      "{{ not false not true }}",
      "{{ not 1 == 2 }}|{{ not 1 in [1] }}|{{ 1 not in [2] and 2 in [2] }}|{{ true and not false or false }}",
      "{{ 0.0 or 'f' }}|{{ (0/0) or 'nan' }}|{{ -0.0 or 'negzero' }}|{{ ' ' or 'space' }}",
      "{% set ns = namespace() %}{{ ns or 'empty ns' }}|{{ not ns }}",
      "{{ 'a' if 1 else 'b' }}|{{ 'a' if 0 else 'b' if 1 else 'c' }}|{{ 'a' if 0 else 'b' if 0 else 'c' }}",
      "{{ ('yes' if true) ~ '|' ~ ('no' if false) }}",
      "{{ [1, 2] if true else 3 }}|{{ 1 if undefined_name else 2 }}",
  }));
}

TEST(JinjaReference, SubscriptsAndAttributes) {
  expect_same_as_reference(with_context({
      "{{ l[0] }}|{{ l[-1] }}|{{ l[5] }}|{{ l[-5] }}|{{ ls[1] }}|{{ l.0 }}|{{ l.2 }}",
      "{{ s[0] }}|{{ s[-1] }}|{{ s[100] }}|{{ u[1] }}|{{ u[12] }}",
      "{{ u[15] }}",
      "{{ d['a'] }}|{{ d.a }}|{{ d['10'] }}|{{ d['zz'] }}|{{ d.zz }}|{{ d.zz.yy }}|{{ nested.a.b[1].c }}|{{ nested['a']['b'][0] }}",
      "{{ d[0] }}",
      "{{ l['a'] }}|{{ l.length }}|{{ s.length }}|{{ u.length }}|{{ e.length }}|{{ el.length }}",
      "{{ l[1.0] }}",
      "{{ none.x }}|{{ n.x }}|{{ t.x }}|{{ undefined_name.x }}|{{ undefined_name['x'] }}",
      "{{ none[0] }}",
      "{{ n[0] }}",
      "{{ messages[2].tool_calls[0].function.name }}|{{ messages[2]['tool_calls'][0]['function']['arguments'] }}",
      "{{ d.get('a') }}|{{ d.get('zz') }}|{{ d.get('zz', 'dflt') }}|{{ d.get('zz', none) }}|{{ ed.get('x', [1]) }}",
      "{{ d.get() }}",
      "{{ d.get(1) }}",
      "{{ d.get('zz', default=5) }}",
      "{{ d.keys() }}|{{ d.values() }}|{{ d.items() }}|{{ ed.items() }}",
      "{{ l[0:2] }}|{{ l[1:] }}|{{ l[:1] }}|{{ l[::-1] }}|{{ l[::2] }}|{{ l[-2:] }}|{{ l[:-1] }}|{{ l[5:] }}|{{ l[2:1] }}",
      "{{ l[::0] }}|{{ l[-100:100] }}|{{ l[3:0:-1] }}|{{ l[:-100:-1] }}|{{ l[1::-1] }}|{{ l[:] }}|{{ l[::] }}",
      "{{ s[0:5] }}|{{ s[::-1] }}|{{ u[::-1] }}|{{ u[2:9] }}|{{ e[1:] }}|{{ s[-5:] }}",
      "{{ l[1.0:] }}",
      "{{ n[1:] }}",
      "{{ l[0:2:1:1] }}",
      "{{ l[] }}",
      "{{ l[0 1] }}",
      "{{ l[undefined_name:1] }}|{{ l[none] }}",
      "{{ l[none:1] }}",
      "{{ messages[-1].role }}|{{ messages[1:][0].content }}|{{ (messages|last).content }}",
      "{{ loop }}|{{ caller }}|{{ kwargs }}",
  }));
}

TEST(JinjaReference, Calls) {
  expect_same_as_reference(with_context({
      "{{ range(3) }}|{{ range(1, 4) }}|{{ range(0, 10, 3) }}|{{ range(5, 0, -2) }}|{{ range(0) }}|{{ range(-2) }}",
      "{{ range(0, 1, 0.25) }}|{{ range(2.5) }}|{{ range(none) }}|{{ range(3, undefined_name) }}|{{ range() }}",
      "{{ range(1, 2, 0) }}",
      "{{ range('3') }}|{{ range(1, '3') }}|{{ range(1, true) }}|{{ range(1, []) }}|{{ range(1, [3]) }}",
      "{{ range(3)|length }}|{{ range(3)[1] }}",
      "{{ n() }}",
      "{{ undefined_name() }}",
      "{{ s.upper()() }}",
      "{{ s.upper().lower() }}|{{ s.split(' ')[1].upper() }}|{{ (s ~ '!').lower() }}",
      "{{ raise_exception('stop: ' ~ n) }}",
      "{{ raise_exception() }}",
      "{{ raise_exception(none) }}",
      "{{ raise_exception([1, 'a']) }}",
      "before {{ raise_exception('line\\nbreak') }}",
      "{{ strftime_now('%Y-%m-%d %H:%M %b %B %% %S %y %j') }}",
      "{{ strftime_now('%d %B %Y') }}|{{ strftime_now('') }}|{{ strftime_now('%%Y') }}|{{ strftime_now('%') }}",
      "{{ strftime_now(5) }}",
      "{{ strftime_now() }}",
      "{{ s.startswith('He', 'x') }}|{{ s.upper(1, 2, x=3) }}",
      "{{ s.split(sep=' ') }}",
      "{{ s.split(' ', maxsplit=1) }}",
      "{{ range(*[1, 4]) }}|{{ range(*(0, 6, 2)) }}",
      "{{ range(*5) }}",
      "{{ range(**{'a': 1}) }}",
      "{{ d.get(**{'x': 1}) }}",
      "{{ d.get('a', x=1, x=2) }}",
      "{{ d.get(x=1, 'a') }}",
      "{{ d.get(*['a'], *['b']) }}",
      "{{ d.get(**{'a': 1}, 'b') }}",
  }));
}

}  // namespace
}  // namespace ac::test::jinja
