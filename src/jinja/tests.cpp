// The `is` tests the reference knows. Unknown names fail; so do several tests on values they
// were not written for (odd on a float), as in the reference.
#include <cmath>
#include <string_view>

#include "jinja/error.h"
#include "jinja/interpreter.h"
#include "jinja/unicode.h"

namespace ac::jinja {

namespace {

const char* const kTests[] = {"boolean", "callable", "odd",      "even",    "false",  "true",    "none",
                              "string",  "number",   "integer",  "iterable", "mapping", "sequence", "lower",
                              "upper",   "defined",  "undefined", "equalto", "eq"};

[[noreturn]] void missing(std::string_view test) {
  fail("test '" + std::string(test) + "' cannot apply to a missing value (|first or |last of an empty list)");
}

}  // namespace

bool Interpreter::has_test(std::string_view name) {
  for (const char* t : kTests)
    if (name == t) return true;
  return false;
}

bool Interpreter::run_test(std::string_view name, const Value& v, const Value* arg) {
  // These only ask "is it a ...", which a missing value is not.
  if (name == "callable") return v.is(Kind::Func);
  if (name == "number") return v.is_number();
  if (name == "integer") return v.is(Kind::Int);
  if (name == "mapping") return v.is(Kind::Object);
  if (name == "sequence") return v.is(Kind::Array) || v.is(Kind::Object) || v.is(Kind::Str);
  if (v.is(Kind::Missing)) missing(name);
  if (name == "boolean") return v.is(Kind::Bool);
  if (name == "odd" || name == "even") {
    if (!v.is(Kind::Int)) fail("test '" + std::string(name) + "' needs an integer, not " + type_name(v));
    const bool odd = std::fmod(v.num, 2) != 0;  // NaN counts as odd, as in the reference
    return name == "odd" ? odd : !odd;
  }
  if (name == "false") return v.is(Kind::Bool) && !v.truth_bool();
  if (name == "true") return v.is(Kind::Bool) && v.truth_bool();
  if (name == "none") return v.is(Kind::Null);
  if (name == "string") return v.is(Kind::Str);
  if (name == "iterable") return (v.is(Kind::Array) && !v.arr().tuple) || v.is(Kind::Str);
  if (name == "lower") return v.is(Kind::Str) && js_lower(v.s()) == v.s();
  if (name == "upper") return v.is(Kind::Str) && js_upper(v.s()) == v.s();
  if (name == "defined") return !v.is(Kind::Undefined);
  if (name == "undefined") return v.is(Kind::Undefined);
  if (name == "equalto" || name == "eq") {
    if (!arg) fail("test '" + std::string(name) + "' needs a value to compare with");
    return strict_equal(v, *arg);
  }
  fail("unknown test '" + one_line(name, 60) + "'");
}

}  // namespace ac::jinja
