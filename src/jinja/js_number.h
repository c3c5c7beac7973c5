#pragma once
// Numbers as JavaScript prints and parses them: the reference engine keeps every number, integer
// or not, as an IEEE double.
#include <string>
#include <string_view>

namespace ac::jinja {

// Number.prototype.toString(): shortest round-trip digits, exponent form below 1e-6 and from 1e21.
std::string js_number(double v);
// How the reference prints a float value: integral ones with ".0" (toFixed(1)), -0 as "-0.0".
std::string js_float(double v);
// JSON.stringify of a number: js_number, with NaN and the infinities as null.
std::string json_number(double v);

// Number(s): the whole string (trimmed) as a numeric literal, NaN when it is not one.
double js_to_number(std::string_view s);
// parseInt(s, 10) and parseFloat(s): the longest numeric prefix, NaN when there is none.
double js_parse_int(std::string_view s);
double js_parse_float(std::string_view s);

}  // namespace ac::jinja
