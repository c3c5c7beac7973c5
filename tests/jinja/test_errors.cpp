// What a failing template says: one line, the template's name, the line and column where the
// problem is (in the original text, before whitespace control moved anything), and for
// raise_exception the template's own message.
#include <gtest/gtest.h>

#include "agentcompile/core/error.h"
#include "agentcompile/jinja/template.h"

namespace ac::jinja {
namespace {

std::string error_of(const std::string& source, const Json& context = Json::object()) {
  try {
    Template::parse(source, "tokenizer_config.json: chat_template").render(context);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadInput);
    EXPECT_EQ(e.subject(), "tokenizer_config.json: chat_template");
    return e.reason();
  }
  ADD_FAILURE() << "no error for " << source;
  return "";
}

TEST(JinjaErrors, RaiseExceptionGivesTheTemplatesMessage) {
  EXPECT_EQ(error_of("{% if messages|length > 1 %}\n  {{ raise_exception('Only one message, please.') }}\n{% endif %}",
                     Json{{"messages", {1, 2}}}),
            "line 2, column 6: raise_exception: Only one message, please.");
  // Control characters would break the line: they are written out.
  EXPECT_EQ(error_of("{{ raise_exception('a\\nb\\tc\\x01d') }}"), "line 1, column 4: raise_exception: a b c\\x01d");
  EXPECT_EQ(error_of("{{ raise_exception() }}"), "line 1, column 4: raise_exception: ");
  EXPECT_EQ(error_of("{{ raise_exception(42) }}"), "line 1, column 4: raise_exception: 42");
  // From inside a macro, the position is the call inside the macro.
  EXPECT_EQ(error_of("{% macro check(m) %}\n{{ raise_exception('bad role ' ~ m) }}{% endmacro %}{{ check('x') }}"),
            "line 2, column 4: raise_exception: bad role x");
}

TEST(JinjaErrors, SyntaxErrorsPointAtTheToken) {
  EXPECT_EQ(error_of("Hello\n{{ name }\n"), "line 2, column 9: expected '}}', got '}'");
  EXPECT_EQ(error_of("{% if x %}\n  text\n"), "line 2, column 7: expected text, '{{' or '{%', got the end of the template");
  EXPECT_EQ(error_of("{% raw %}x{% endraw %}"), "line 1, column 1: unknown statement 'raw'");
  EXPECT_EQ(error_of("{{ 'abc }}"), "line 1, column 4: string literal not closed");
  EXPECT_EQ(error_of("ok {# never closed"), "line 1, column 4: comment not closed (missing \"#}\")");
  EXPECT_EQ(error_of("{{ a ! b }}"), "line 1, column 6: unexpected character '!'");
  EXPECT_EQ(error_of("{{ 'é' ~ ☃ }}"), "line 1, column 10: unexpected character '☃'");
  EXPECT_EQ(error_of("{% macro m(a, a) %}{% endmacro %}"), "line 1, column 15: duplicate parameter 'a'");
  // A message quoting text cut inside a character stays valid UTF-8.
  EXPECT_EQ(error_of("{{ '\\u15€' }}"), "line 1, column 5: invalid escape \\u15\\xe2\\x82");
  // Positions are in the text as written, before lstrip_blocks and trim_blocks removed anything.
  EXPECT_EQ(error_of("a\n    {% if x %}\n  {{ 1 + }}\n{% endif %}"), "line 3, column 10: expected an expression, got '}}'");
}

TEST(JinjaErrors, RuntimeErrorsPointAtTheExpression) {
  EXPECT_EQ(error_of("{{ 1 }}\n{{ x | trim }}", Json{{"x", 5}}), "line 2, column 6: no filter 'trim' for integer");
  EXPECT_EQ(error_of("{% for m in 5 %}{% endfor %}"), "line 1, column 13: cannot loop over integer (a list or a dict is needed)");
  EXPECT_EQ(error_of("{{ none.x + 1 }}"), "line 1, column 11: operator '+' does not apply to undefined values");
  EXPECT_EQ(error_of("{{ x() }}"), "line 1, column 4: cannot call undefined 'x'");
  EXPECT_EQ(error_of("x\n{% break %}"), "line 2, column 1: 'break' outside a for loop");
  EXPECT_EQ(error_of("{{ 'x' is nosuch }}"), "line 1, column 8: unknown test 'nosuch'");
}

TEST(JinjaErrors, BadInputIsRefusedWithAClearMessage) {
  EXPECT_EQ(error_of("ok\n\xff"), "line 2, column 1: the template is not valid UTF-8");
  EXPECT_EQ(error_of("{{ x }}", Json::array()), "the variables must be a JSON object");
  EXPECT_EQ(error_of("{{ x }}", Json{{"range", 1}}), "the variable 'range' would replace a builtin of the same name");
  EXPECT_EQ(error_of("{{ x }}", Json{{"x", "\xc3"}}), "the context holds a string that is not valid UTF-8");
  EXPECT_EQ(error_of("{{ 'a😀'[2] }}"), "line 1, column 8: string index 2 falls inside a surrogate pair");
  // The reference prints a function as its JavaScript source; there is nothing sensible to print.
  EXPECT_EQ(error_of("{{ range }}"), "line 1, column 4: a function cannot be printed");
  EXPECT_EQ(error_of("{% macro m() %}{% endmacro %}{{ 'x' ~ m }}"), "line 1, column 37: a function cannot be turned into a string");
}

TEST(JinjaErrors, OrderedContextKeepsKeyOrder) {
  auto ctx = parse_json_ordered(R"({"tool": {"name": "f", "description": "d", "2": 0, "1": 0}})", "ctx");
  EXPECT_EQ(Template::parse("{{ tool|tojson }}", "t").render_ordered(ctx), R"({"1": 0, "2": 0, "name": "f", "description": "d"})");
  EXPECT_EQ(Template::parse("{{ tool|tojson }}", "t").render(Json::parse(R"({"tool": {"name": "f", "description": "d"}})")),
            R"({"description": "d", "name": "f"})");
  EXPECT_THROW(parse_json_ordered(R"({"a": 1, "a": 2})", "ctx"), Error);
  EXPECT_THROW(parse_json_ordered(R"({"a": )", "ctx"), Error);
  EXPECT_THROW(parse_json_ordered(std::string(100, '[') + std::string(100, ']'), "ctx"), Error);
}

TEST(JinjaErrors, StrftimeUsesTheOptionsClock) {
  Options o;
  o.strftime_now = [](std::string_view f) { return "[" + std::string(f) + "]"; };
  EXPECT_EQ(Template::parse("{{ strftime_now('%d %b') }}", "t", o).render(Json::object()), "[%d %b]");
  std::tm t{};
  t.tm_year = 125;
  t.tm_mon = 0;
  t.tm_mday = 5;
  t.tm_hour = 7;
  t.tm_min = 3;
  EXPECT_EQ(format_time_like_reference("%Y-%m-%d %H:%M %b %B %% %S %", t), "2025-01-05 07:03 Jan January % %S %");
  // Without a clock in the options: the system's, in local time.
  EXPECT_EQ(Template::parse("{{ strftime_now('%Y')|length }}", "t").render(Json::object()), "4");
}

}  // namespace
}  // namespace ac::jinja
