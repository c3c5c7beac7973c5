// JSON text as the reference's tojson writes it: JSON.stringify for strings and numbers, Python's
// json.dumps layout (", " and ": " separators; "," and newlines with an indent), keys in insertion
// order unless sorted, undefined as null (or as "undefined" when a value is printed).
#include <cstdio>

#include "jinja/error.h"
#include "jinja/js_number.h"
#include "jinja/unicode.h"
#include "jinja/value.h"

namespace ac::jinja {

void append_json_string(std::string& out, std::string_view s, bool ensure_ascii) {
  out.push_back('"');
  size_t i = 0;
  char buf[16];
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
          if (c < 0x20 || (c == 0x7f && ensure_ascii)) {
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
          } else {
            out.push_back(char(c));
          }
      }
      continue;
    }
    size_t start = i;
    char32_t cp = next_cp(s, i);
    if (!ensure_ascii) {
      out.append(s.substr(start, i - start));
    } else if (cp < 0x10000) {
      std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(cp));
      out += buf;
    } else {
      char32_t v = cp - 0x10000;
      std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", unsigned(0xd800 + (v >> 10)), unsigned(0xdc00 + (v & 0x3ff)));
      out += buf;
    }
  }
  out.push_back('"');
}

namespace {

std::string repeat(const std::string& unit, size_t n, State& st) {
  st.check_size(unit.size() * n);
  std::string s;
  s.reserve(unit.size() * n);
  for (size_t k = 0; k < n; ++k) s += unit;
  return s;
}

}  // namespace

void append_json(std::string& out, const Value& v, const JsonFormat& f, State& st, bool undefined_as_null, int depth) {
  if (depth > st.limits.max_depth)
    fail("a value nested more than " + std::to_string(st.limits.max_depth) + " levels deep (or holding itself)");
  st.step();
  switch (v.kind) {
    case Kind::Missing: fail("a missing value (|first or |last of an empty list) cannot be written as JSON");
    case Kind::Null: out += "null"; return;
    case Kind::Undefined: out += undefined_as_null ? "null" : "undefined"; return;
    case Kind::Bool: out += v.truth_bool() ? "true" : "false"; return;
    case Kind::Int: case Kind::Float: out += json_number(v.num); return;
    case Kind::Str: append_json_string(out, v.s(), f.ensure_ascii); break;
    case Kind::Func: fail("a function cannot be written as JSON");
    case Kind::Array: case Kind::Object: case Kind::Namespace: {
      if (v.is(Kind::Array) && v.arr().tuple) fail("a tuple cannot be written as JSON");
      if (v.is(Kind::Object) && v.map().sub == ObjectObj::Sub::Kwargs)
        fail("keyword arguments cannot be written as JSON");
      const std::string base = f.indent ? "\n" + repeat(f.indent_unit, size_t(depth), st) : "";
      const std::string child = f.indent ? base + f.indent_unit : "";
      const bool layout = f.indent;  // newlines only around non-empty containers
      if (v.is(Kind::Array)) {
        const auto& items = v.arr().items;
        out.push_back('[');
        for (size_t k = 0; k < items.size(); ++k) {
          if (k) out += f.item_sep;
          if (layout) out += child;
          append_json(out, items[k], f, st, undefined_as_null, depth + 1);
          st.check_size(out.size());
        }
        if (layout && !items.empty()) out += base;
        out.push_back(']');
      } else {
        const auto& entries = v.map().entries();
        std::vector<const std::pair<std::string, Value>*> order;
        order.reserve(entries.size());
        for (auto& e : entries) order.push_back(&e);
        if (f.sort_keys) {
          // Stable, like Array.prototype.sort with localeCompare.
          std::stable_sort(order.begin(), order.end(),
                           [](auto* a, auto* b) { return locale_compare(a->first, b->first) < 0; });
        }
        out.push_back('{');
        for (size_t k = 0; k < order.size(); ++k) {
          if (k) out += f.item_sep;
          if (layout) out += child;
          append_json_string(out, order[k]->first, f.ensure_ascii);
          out += f.key_sep;
          append_json(out, order[k]->second, f, st, undefined_as_null, depth + 1);
          st.check_size(out.size());
        }
        if (layout && !order.empty()) out += base;
        out.push_back('}');
      }
      break;
    }
  }
  st.check_size(out.size());
}

}  // namespace ac::jinja
