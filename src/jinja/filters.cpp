// Filters, with the reference's coverage: which filters exist depends on the operand's type
// (trim on a string, first on a list...), a filter written without parentheses is looked up
// apart from one written with them (|default fails, |default() works), and anything the
// reference lacks fails.
#include <cmath>

#include "jinja/error.h"
#include "jinja/interpreter.h"
#include "jinja/js_number.h"
#include "jinja/unicode.h"

namespace ac::jinja {

namespace {

std::string what(const Value& v) { return v.is(Kind::Missing) ? "a missing value" : type_name(v); }

[[noreturn]] void no_filter(const std::string& name, const Value& operand) {
  fail("no filter '" + one_line(name, 60) + "' for " + what(operand));
}

// |indent: every line but the first and the empty ones (unless asked) gets `pad` in front.
std::string indent_text(const std::string& s, const std::string& pad, bool first, bool blank, State& st) {
  std::string out;
  size_t start = 0, line = 0;
  while (true) {
    size_t nl = s.find('\n', start);
    std::string_view part = std::string_view(s).substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    if (line > 0) out.push_back('\n');
    if (!((!first && line == 0) || (!blank && part.empty()))) out += pad;
    out.append(part);
    st.check_size(out.size());
    st.step();
    if (nl == std::string::npos) break;
    start = nl + 1;
    ++line;
  }
  return out;
}

// Array.prototype.join over the items' raw values: none and undefined give empty strings.
std::string join_values(const std::vector<Value>& items, const std::string& sep, State& st) {
  std::string out;
  for (size_t k = 0; k < items.size(); ++k) {
    if (items[k].is(Kind::Missing)) fail("|join: the list holds a missing value");
    if (k) out += sep;
    if (!items[k].is(Kind::Null) && !items[k].is(Kind::Undefined)) append_raw(out, items[k], st);
    st.check_size(out.size());
    st.step();
  }
  return out;
}

}  // namespace

Value Interpreter::apply_filter(Value operand, const Node& filter, Env* env) {
  st_.step();
  if (filter.kind == NodeKind::Name) return filter_plain(operand, filter.name);
  if (filter.kind == NodeKind::Call) {
    if (filter.a->kind != NodeKind::Name) fail("a filter must be named");
    return filter_call(operand, filter.a->name, filter, env);
  }
  fail(std::string("a ") + node_kind_name(filter.kind) + " is not a filter");
}

Value Interpreter::filter_plain(const Value& v, const std::string& name) {
  if (name == "safe") return v;
  if (name == "tojson") {
    std::string out;
    append_json(out, v, JsonFormat{}, st_);
    return st_.str(std::move(out));
  }
  if (v.is(Kind::Array)) {
    const auto& items = v.arr().items;
    if (name == "list") return v;
    if (name == "first") return items.empty() ? Value::missing() : items.front();
    if (name == "last") return items.empty() ? Value::missing() : items.back();
    if (name == "length") return Value::integer(double(items.size()));
    if (name == "reverse") return st_.array(std::vector<Value>(items.rbegin(), items.rend()));
    if (name == "sort") {
      std::vector<Value> sorted = items;
      stable_sort(sorted, [](const Value& a, const Value& b) { return compare_values(a, b, false); }, st_);
      return st_.array(std::move(sorted));
    }
    if (name == "join") return st_.str(join_values(items, "", st_));
    if (name == "string") {
      std::string out;
      append_json(out, v, JsonFormat{}, st_, /*undefined_as_null=*/false);
      return st_.str(std::move(out));
    }
    if (name == "unique") {
      std::vector<Value> out;
      for (const Value& x : items) {
        if (x.is(Kind::Missing)) fail("|unique: the list holds a missing value");
        bool seen = false;
        for (const Value& y : out) {
          st_.step();
          if (same_value_zero(x, y)) {
            seen = true;
            break;
          }
        }
        if (!seen) out.push_back(x);
      }
      return st_.array(std::move(out));
    }
    no_filter(name, v);
  }
  if (v.is(Kind::Str)) {
    const std::string& s = v.s();
    if (name == "length") return Value::integer(double(utf16_length(s)));
    if (name == "upper") return st_.str(js_upper(s));
    if (name == "lower") return st_.str(js_lower(s));
    if (name == "title") return st_.str(js_title(s));
    if (name == "capitalize") return st_.str(js_capitalize(s));
    if (name == "trim") return st_.str(js_trim(s));
    if (name == "indent") return st_.str(indent_text(s, "    ", false, false, st_));
    if (name == "join" || name == "string") return v;
    if (name == "int") {
      double n = js_parse_int(s);
      return Value::integer(std::isnan(n) ? 0 : n);
    }
    if (name == "float") {
      double n = js_parse_float(s);
      return Value::floating(std::isnan(n) ? 0 : n);
    }
    no_filter(name, v);
  }
  if (v.is_number()) {
    if (name == "abs") return v.is(Kind::Int) ? Value::integer(std::fabs(v.num)) : Value::floating(std::fabs(v.num));
    if (name == "int") return Value::integer(std::trunc(v.num) + 0.0);
    if (name == "float") return Value::floating(v.num);
    if (name == "string") {
      std::string out;
      append_display(out, v, st_);
      return st_.str(std::move(out));
    }
    no_filter(name, v);
  }
  if (v.is(Kind::Object)) {
    if (name == "items") {
      std::vector<Value> out;
      for (auto& [k, x] : v.map().entries()) out.push_back(st_.array({st_.str(k), x}));
      return st_.array(std::move(out));
    }
    if (name == "length") return Value::integer(double(v.map().size()));
    Value method = dict_method(st_, v, name);
    if (method.is(Kind::Func)) {
      std::vector<Value> none;
      return call_dict_method(v, name, none);
    }
    no_filter(name, v);
  }
  if (v.is(Kind::Bool)) {
    if (name == "bool") return v;
    if (name == "int") return Value::integer(v.num);
    if (name == "float") return Value::floating(v.num);
    if (name == "string") return st_.str(v.truth_bool() ? "true" : "false");
    no_filter(name, v);
  }
  no_filter(name, v);
}

Value Interpreter::tojson_filter(const Value& v, const Node& call, Env* env) {
  auto [args, kw] = split_args(call.list, env);
  JsonFormat f;
  const Value* indent = kwarg(kw, "indent");
  if (indent && !indent->is(Kind::Int) && !indent->is(Kind::Null)) fail("tojson(): indent must be an integer");
  const Value* ascii = kwarg(kw, "ensure_ascii");
  if (ascii && !ascii->is(Kind::Bool)) fail("tojson(): ensure_ascii must be a boolean");
  const Value* sort = kwarg(kw, "sort_keys");
  if (sort && !sort->is(Kind::Bool)) fail("tojson(): sort_keys must be a boolean");
  const Value* seps = kwarg(kw, "separators");
  if (seps && !seps->is(Kind::Null)) {
    if (!seps->is(Kind::Array) || seps->arr().items.size() != 2 || !seps->arr().items[0].is(Kind::Str) ||
        !seps->arr().items[1].is(Kind::Str))
      fail("tojson(): separators must be a pair of strings");
    f.item_sep = seps->arr().items[0].s();
    f.key_sep = seps->arr().items[1].s();
  }
  if (indent && indent->is(Kind::Int) && indent->num != 0 && !std::isnan(indent->num)) {
    if (indent->num < 0 || std::isinf(indent->num)) fail("tojson(): indent must not be negative");
    st_.check_size(size_t(std::min(indent->num, 1e15)));
    f.indent = true;
    f.indent_unit.assign(size_t(indent->num), ' ');
    if (!seps || seps->is(Kind::Null)) f.item_sep = ",";
  }
  f.ensure_ascii = ascii && ascii->truth_bool();
  f.sort_keys = sort && sort->truth_bool();
  std::string out;
  append_json(out, v, f, st_);
  return st_.str(std::move(out));
}

Value Interpreter::filter_call(const Value& v, const std::string& name, const Node& call, Env* env) {
  if (name == "tojson") return tojson_filter(v, call, env);
  if (name == "join") {
    std::vector<std::string> parts;
    if (!v.is(Kind::Str) && !v.is(Kind::Array)) no_filter(name, v);
    auto [args, kw] = split_args(call.list, env);
    const Value* sep = arg_at(args, 0);
    if (!sep) sep = kwarg(kw, "separator");
    if (sep && !sep->is(Kind::Str)) fail("join(): the separator must be a string");
    const std::string d = sep ? sep->s() : "";
    if (v.is(Kind::Array)) return st_.str(join_values(v.arr().items, d, st_));
    std::string out;
    bool first = true;
    for (std::string_view c : code_points(v.s())) {
      if (!first) out += d;
      first = false;
      out.append(c);
      st_.check_size(out.size());
      st_.step();
    }
    return st_.str(std::move(out));
  }
  if (name == "int" || name == "float") {
    const bool as_int = name == "int";
    auto [args, kw] = split_args(call.list, env);
    const Value* def = arg_at(args, 0);
    if (!def) def = kwarg(kw, "default");
    const Value fallback = def ? *def : as_int ? Value::integer(0) : Value::floating(0);
    if (v.is(Kind::Str)) {
      double n = as_int ? js_parse_int(v.s()) : js_parse_float(v.s());
      if (std::isnan(n)) return fallback;
      return as_int ? Value::integer(n) : Value::floating(n);
    }
    if (v.is_number()) return as_int ? Value::integer(std::trunc(v.num) + 0.0) : Value::floating(v.num);
    if (v.is(Kind::Bool)) return as_int ? Value::integer(v.num) : Value::floating(v.num);
    no_filter(name, v);
  }
  if (name == "default") {
    auto [args, kw] = split_args(call.list, env);
    const Value* def = arg_at(args, 0);
    const Value* flag = arg_at(args, 1);
    if (!flag) flag = kwarg(kw, "boolean");
    if (flag && !flag->is(Kind::Bool)) fail("default(): the second argument must be a boolean");
    if (v.is(Kind::Undefined) || (flag && flag->truth_bool() && !truthy(v))) return def ? *def : st_.str("");
    return v;
  }
  if (v.is(Kind::Array)) {
    if (name == "sort") return sort_filter(v, call, env);
    if (name == "selectattr" || name == "rejectattr") return select_attr(v, name == "selectattr", call, env);
    if (name == "map") return map_filter(v, call, env);
    no_filter(name, v);
  }
  if (v.is(Kind::Str)) {
    if (name == "indent") {
      auto [args, kw] = split_args(call.list, env);
      const Value* width = arg_at(args, 0);
      if (!width) width = kwarg(kw, "width");
      if (width && !width->is(Kind::Int) && !width->is(Kind::Str)) fail("indent(): width must be an integer or a string");
      const Value* first = arg_at(args, 1);
      if (!first) first = kwarg(kw, "first");
      const Value* blank = arg_at(args, 2);
      if (!blank) blank = kwarg(kw, "blank");
      std::string pad = "    ";
      if (width && width->is(Kind::Str)) {
        pad = width->s();
      } else if (width) {
        const double n = std::isnan(width->num) ? 0 : std::max(0.0, width->num);
        if (std::isinf(n)) fail("indent(): width is too large");
        st_.check_size(size_t(std::min(n, 1e15)));
        pad.assign(size_t(n), ' ');
      }
      return st_.str(indent_text(v.s(), pad, first && raw_truthy(*first), blank && raw_truthy(*blank), st_));
    }
    if (name == "replace") {
      auto [args, kw] = split_args(call.list, env);
      args.push_back(Value::undefined());
      ObjectObj* o = st_.object(ObjectObj::Sub::Kwargs);
      for (auto& [k, x] : kw) o->set(k, x);
      args.back() = Value::object(o);
      return call_str_method(v.s(), "replace", args);
    }
    no_filter(name, v);
  }
  if (v.is(Kind::Object)) {
    Value method = dict_method(st_, v, name);
    if (method.is(Kind::Func)) {
      std::vector<Value> args = call_args(call.list, env);
      return call_dict_method(v, name, args);
    }
    no_filter(name, v);
  }
  no_filter(name, v);
}

Value Interpreter::sort_filter(const Value& v, const Node& call, Env* env) {
  auto [args, kw] = split_args(call.list, env);
  const Value* rev = arg_at(args, 0);
  if (!rev) rev = kwarg(kw, "reverse");
  if (rev && !rev->is(Kind::Bool)) fail("sort(): reverse must be a boolean");
  const Value* cs = arg_at(args, 1);
  if (!cs) cs = kwarg(kw, "case_sensitive");
  if (cs && !cs->is(Kind::Bool)) fail("sort(): case_sensitive must be a boolean");
  const Value* attr = arg_at(args, 2);
  if (!attr) attr = kwarg(kw, "attribute");
  if (attr && !attr->is(Kind::Str) && !attr->is(Kind::Int) && !attr->is(Kind::Null))
    fail("sort(): attribute must be a string, an integer or none");
  const bool reverse = rev && rev->truth_bool(), case_sensitive = cs && cs->truth_bool();
  std::string path;
  const bool by_attr = attr && !attr->is(Kind::Null);
  if (by_attr) path = attr->is(Kind::Str) ? attr->s() : js_number(attr->num);
  std::vector<Value> items = v.arr().items;
  stable_sort(items, [&](const Value& a, const Value& b) {
    int r = by_attr ? compare_values(attribute_path(a, path), attribute_path(b, path), case_sensitive)
                    : compare_values(a, b, case_sensitive);
    return reverse ? -r : r;
  }, st_);
  return st_.array(std::move(items));
}

Value Interpreter::select_attr(const Value& v, bool select, const Node& call, Env* env) {
  const char* fname = select ? "selectattr" : "rejectattr";
  for (const Value& item : v.arr().items)
    if (!item.is_container()) fail(std::string(fname) + "() works on a list of dicts, not on one holding " + what(item));
  for (const NodePtr& a : call.list)
    if (a->kind != NodeKind::Str) fail_at(a->pos, std::string(fname) + "() takes string literals only");
  std::vector<Value> args;
  for (const NodePtr& a : call.list) args.push_back(eval(*a, env));
  if (args.empty()) fail(std::string(fname) + "() needs an attribute name");
  const std::string& attr = args[0].s();
  const std::string test = args.size() > 1 ? args[1].s() : "";
  if (args.size() > 1 && !has_test(test)) fail("unknown test '" + one_line(test, 60) + "'");
  const Value* operand2 = args.size() > 2 ? &args[2] : nullptr;
  std::vector<Value> out;
  for (const Value& item : v.arr().items) {
    st_.step();
    Value a;
    bool result = false;
    if (item.map().get(attr, a) && !a.is(Kind::Missing))
      result = args.size() > 1 ? run_test(test, a, operand2) : truthy(a);
    if (result == select) out.push_back(item);
  }
  return st_.array(std::move(out));
}

Value Interpreter::map_filter(const Value& v, const Node& call, Env* env) {
  auto [args, kw] = split_args(call.list, env);
  const Value* attr = kwarg(kw, "attribute");
  bool has_attr = false;
  for (auto& [k, x] : kw) has_attr = has_attr || k == "attribute";
  if (!has_attr) fail("map() is supported with attribute= only");
  if (!attr || !attr->is(Kind::Str)) fail("map(): attribute must be a string");
  const Value* def = kwarg(kw, "default");
  std::vector<Value> out;
  for (const Value& item : v.arr().items) {
    st_.step();
    if (!item.is_container()) fail("map() works on a list of dicts, not on one holding " + what(item));
    Value x = attribute_path(item, attr->s());
    out.push_back(x.is(Kind::Undefined) ? (def ? *def : Value::undefined()) : x);
  }
  return st_.array(std::move(out));
}

}  // namespace ac::jinja
