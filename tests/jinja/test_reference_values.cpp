// How values print and serialize, and how the context's JSON becomes values: key order
// (integer-like keys first, as JavaScript orders them), integers and floats, Unicode.
#include "snippets.h"

namespace ac::test::jinja {
namespace {

TEST(JinjaReference, ContextValues) {
  expect_same_as_reference({
      {"{{ x }}|{{ x|tojson }}|{% for k in x %}{{ k }},{% endfor %}|{{ x|items }}",
       R"({"x": {"b": 1, "10": 2, "a": 3, "2": 4, "-1": 5, "01": 6, "4294967294": 7, "4294967295": 8, "1.5": 9}})"},
      {"{{ a }}|{{ b }}|{{ c }}|{{ d }}|{{ e }}|{{ f }}|{{ g }}|{{ a|tojson }}|{{ c is integer }}|{{ d is number }}",
       R"({"a": 1.0, "b": -0.0, "c": 1e2, "d": 123456789012345678901234567890, "e": 1.5e-10, "f": -0, "g": 5e-324})"},
      {"{{ u }}|{{ u|tojson }}|{{ u|length }}|{{ u[0] }}|{{ u[1] }}", R"({"u": "😀é\u0000\u001f\u2028</script>"})"},
      {"{{ v }}|{{ v|tojson }}|{{ v|string }}", R"({"v": [1, 2.5, "s", true, false, null, [], {}, {"k": [null]}]})"},
      {"{{ __proto__ }}|{{ constructor }}|{{ toString }}|{{ hasOwnProperty }}", R"({"__proto__": {"x": 1}})"},
      {"{{ o.constructor }}|{{ o.__proto__ }}|{{ o.toString }}|{{ 'x'.constructor }}|{{ l.map }}|{{ l.push }}",
       R"({"o": {}, "l": []})"},
      {"{{ x }}", R"({"x": "dup"})"},
      {"{{ namespace }}", R"({"namespace": 1})"},
      {"{{ range }}", R"({"range": 1})"},
      {"{{ true }}", R"({"true": 1})"},
      {"{{ None }}", R"({"None": 1})"},
      {"{{ raise_exception }}", R"({"raise_exception": "x"})"},
      {"{{ loop }}|{{ caller }}", R"({"loop": 1, "caller": 2})"},
      {"{% for x in l %}{{ loop.index }}{% endfor %}", R"({"loop": "outer", "l": [1, 2]})"},
  });
}

TEST(JinjaReference, Printing) {
  expect_same_as_reference(with_context({
      "{{ l }}|{{ ls }}|{{ mixed }}|{{ d }}|{{ nested }}|{{ el }}|{{ ed }}|{{ messages[2] }}",
      "{{ [undefined_name, none] }}|{{ {'a': undefined_name} }}|{{ [1.0, -0.0, 1/0, 0/0] }}",
      "{{ [(1, 2)] }}",
      "{{ {'t': (1,)} }}",
      "{{ [s.upper] }}",
      "{{ {'a': 1}.items() }}|{{ {'a': 1}|items|first }}|{{ d.keys()|first }}",
      "{{ 1.0 }}|{{ 100.0 }}|{{ 1e21 }}|{{ 1.0e21 }}|{{ 123456789.0 }}|{{ 0.1 }}|{{ 1e-7 * 1 }}|{{ 2.5e-8 }}",
      "{{ 1e300 * 1e10 }}|{{ -1e300 * 1e10 }}|{{ 4503599627370496.5 }}|{{ 9007199254740993.0 }}",
      "{{ 3 / 3 }}|{{ 10 / 4 }}|{{ 2 ** 64 }}|{{ 2.0 ** 64 }}|{{ 2 ** 70 }}|{{ 1e20 }}|{{ 123456789012345680000.0 }}",
      "{{ 0.1 * 3 }}|{{ 1 / 3 }}|{{ 2 / 3 * 3 }}|{{ 5e-7 }}|{{ 5e-6 }}|{{ 123e-20 }}",
  }));
}

}  // namespace
}  // namespace ac::test::jinja
