// Templates are untrusted: every way to make one run long, grow large or recurse deeply ends
// quickly with a one-line BadInput error, never a crash or unbounded memory.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "agentcompile/core/error.h"
#include "agentcompile/jinja/template.h"

namespace ac::jinja {
namespace {

// Parses and renders; returns the error's text, or "" if it rendered. Fails the test if the
// error is not BadInput or if it took long.
std::string failure_of(const std::string& source, const Json& context = Json::object(), Limits limits = {}) {
  const auto start = std::chrono::steady_clock::now();
  std::string what;
  try {
    Template t = Template::parse(source, "tpl", {}, limits);
    t.render(context);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadInput) << e.what();
    what = e.what();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 10.0) << source.substr(0, 100);
  EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  return what;
}

std::string repeat(const std::string& s, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) out += s;
  return out;
}

TEST(JinjaLimits, HugeRangeFailsAtOnce) {
  EXPECT_NE(failure_of("{% for i in range(1000000000) %}x{% endfor %}").find("too long"), std::string::npos);
  EXPECT_NE(failure_of("{% for i in range(0, 10 ** 300, 1) %}x{% endfor %}").find("range() is too long"), std::string::npos);
  EXPECT_NE(failure_of("{{ range(1000000000)|length }}"), "");
  // A loop that never ends in the reference (the string "b" plus "" stays above "a").
  EXPECT_NE(failure_of("{{ range('b', 'a', '') }}").find("never ends"), std::string::npos);
  EXPECT_NE(failure_of("{{ range(2, 0, '') }}").find("never ends"), std::string::npos);
  EXPECT_NE(failure_of("{{ range(10 ** 20, 10 ** 20 + 10 ** 6) }}").find("never ends"), std::string::npos);
  EXPECT_NE(failure_of("{{ range('z', 'a', 'a') }}"), "");  // "z", "za", "zaa"... stay above "a"
  EXPECT_NE(failure_of("{{ range(0, 10 ** 400) }}"), "");
}

TEST(JinjaLimits, StringRepetitionIsNotAnOperator) {
  EXPECT_NE(failure_of("{{ 'x' * 1000000000 }}").find("operator '*'"), std::string::npos);
}

TEST(JinjaLimits, StringsCannotGrowPastTheLimit) {
  const std::string doubling =
      "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}";
  EXPECT_NE(failure_of(doubling).find("exceed the limit"), std::string::npos);
  Limits small;
  small.max_output_bytes = 1000;
  EXPECT_NE(failure_of("{% for i in range(2000) %}x{% endfor %}", Json::object(), small).find("exceed the limit"),
            std::string::npos);
  EXPECT_EQ(failure_of("{% for i in range(999) %}x{% endfor %}", Json::object(), small), "");
  EXPECT_NE(failure_of("{{ 'x'|indent(2000) ~ 'a\\nb'|indent(2000) }}", Json::object(), small), "");
  EXPECT_NE(failure_of("{{ [1, [2]]|tojson(indent=600) }}", Json::object(), small), "");
  EXPECT_NE(failure_of("{{ 'ab'|replace('', 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx') * 2 }}",
                       Json::object(), small), "");
}

TEST(JinjaLimits, StepsBoundLoops) {
  EXPECT_NE(failure_of("{% set r = range(100000) %}{% for i in r %}{% for j in r %}{% endfor %}{% endfor %}")
                .find("ran too long"),
            std::string::npos);
  Limits few;
  few.max_steps = 1000;
  EXPECT_NE(failure_of("{% for i in range(500) %}{{ i }}{% endfor %}", Json::object(), few).find("ran too long"),
            std::string::npos);
  // Quadratic list building is charged per element copied.
  EXPECT_NE(failure_of("{% set ns = namespace(l=[]) %}{% for i in range(1000000) %}{% set ns.l = ns.l + [i] %}{% endfor %}"),
            "");
}

TEST(JinjaLimits, MemoryIsBounded) {
  Limits small;
  small.max_memory_bytes = 8 << 20;
  // Many large strings kept alive in a list.
  const std::string hoard =
      "{% set ns = namespace(l=[], s='" + std::string(100000, 'x') +
      "') %}{% for i in range(1000) %}{% set ns.l = ns.l + [ns.s ~ i] %}{% endfor %}{{ ns.l|length }}";
  EXPECT_NE(failure_of(hoard, Json::object(), small).find("memory"), std::string::npos);
  // The same strings, dropped as they go, stay within the limit.
  const std::string churn = "{% set ns = namespace(s='" + std::string(100000, 'x') +
                            "') %}{% for i in range(1000) %}{% set t = ns.s ~ i %}{% endfor %}ok";
  EXPECT_EQ(failure_of(churn, Json::object(), small), "");
}

TEST(JinjaLimits, MacroRecursionIsBounded) {
  EXPECT_NE(failure_of("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}").find("nest"), std::string::npos);
  EXPECT_NE(failure_of("{% macro f(n) %}{{ n }}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"), "");
  EXPECT_NE(failure_of("{% macro f() %}{% call f() %}x{% endcall %}{% endmacro %}{{ f() }}"), "");
  EXPECT_NE(failure_of("{% macro f() %}{{ caller() }}{% endmacro %}{% call f() %}{{ f() }}{% endcall %}"), "");
  // Mutual recursion through a namespace.
  EXPECT_NE(failure_of("{% set ns = namespace() %}{% macro a() %}{{ ns.b() }}{% endmacro %}"
                       "{% macro b() %}{{ a() }}{% endmacro %}{% set ns.b = b %}{{ a() }}"),
            "");
  // Legitimate recursion a few levels deep works.
  EXPECT_EQ(failure_of("{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(50) }}"), "");
}

TEST(JinjaLimits, DeepSyntaxFailsWhileParsing) {
  EXPECT_NE(failure_of("{{ " + std::string(10000, '(') + "1" + std::string(10000, ')') + " }}").find("nested too deeply"),
            std::string::npos);
  EXPECT_NE(failure_of("{{ " + repeat("[", 10000) + repeat("]", 10000) + " }}"), "");
  EXPECT_NE(failure_of("{{ " + repeat("{'a': ", 10000) + "1" + repeat("}", 10000) + " }}"), "");
  EXPECT_NE(failure_of("{{ " + repeat("not ", 10000) + "1 }}"), "");
  EXPECT_NE(failure_of("{{ " + repeat("- ", 10000) + "1 }}"), "");
  EXPECT_NE(failure_of("{{ f" + repeat("()", 10000) + " }}"), "");
  EXPECT_NE(failure_of("{{ 1" + repeat(" + 1", 100000) + " }}").find("nested too deeply"), std::string::npos);
  EXPECT_NE(failure_of("{{ x" + repeat(".a", 100000) + " }}"), "");
  EXPECT_NE(failure_of("{{ x" + repeat("|trim", 100000) + " }}"), "");
  EXPECT_NE(failure_of("{{ 1" + repeat(" if 1 else 2", 10000) + " }}"), "");
  EXPECT_NE(failure_of(repeat("{% if true %}", 10000) + repeat("{% endif %}", 10000)), "");
  EXPECT_NE(failure_of("{% if a %}" + repeat("{% elif a %}", 10000) + "{% endif %}"), "");
  EXPECT_NE(failure_of(repeat("{% for x in y %}", 10000) + repeat("{% endfor %}", 10000)), "");
  // What real templates nest stays well inside the limit.
  EXPECT_EQ(failure_of("{{ " + std::string(40, '(') + "1" + std::string(40, ')') + " }}"), "");
  EXPECT_EQ(failure_of("{% if a %}" + repeat("{% elif a %}", 60) + "{% endif %}"), "");
}

TEST(JinjaLimits, DeepValuesFailToPrint) {
  // A namespace holding itself, and a list nested a million levels deep.
  EXPECT_NE(failure_of("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}").find("nested more than"),
            std::string::npos);
  EXPECT_NE(failure_of("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns|tojson }}"), "");
  EXPECT_NE(failure_of("{% set ns = namespace() %}{% set ns.me = [ns] %}{{ ns.me ~ '' }}"), "");
  EXPECT_NE(failure_of("{% set ns = namespace(a=[]) %}{% for i in range(1000000) %}{% set ns.a = [ns.a] %}{% endfor %}"
                       "{{ ns.a }}"),
            "");
  // Deep context values are refused before they are converted.
  Json deep = Json::array();
  for (int i = 0; i < 2000; ++i) deep = Json::array({deep});
  EXPECT_NE(failure_of("{{ x }}", Json{{"x", deep}}).find("nested more than"), std::string::npos);
}

TEST(JinjaLimits, SourceSizeIsBounded) {
  Limits small;
  small.max_source_bytes = 100;
  EXPECT_NE(failure_of(std::string(101, 'x'), Json::object(), small).find("more than the limit"), std::string::npos);
  EXPECT_EQ(failure_of(std::string(100, 'x'), Json::object(), small), "");
}

}  // namespace
}  // namespace ac::jinja
