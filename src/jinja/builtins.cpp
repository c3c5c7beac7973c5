// The builtin functions (range, namespace, raise_exception, strftime_now) and the methods of
// strings and dicts, with the reference's argument conventions: keyword arguments reach a
// builtin as one trailing dict, which most builtins take for a positional argument.
#include <chrono>
#include <cmath>
#include <ctime>

#include "jinja/error.h"
#include "jinja/interpreter.h"
#include "jinja/js_number.h"
#include "jinja/unicode.h"

namespace ac::jinja {

const Value* arg_at(const std::vector<Value>& args, size_t i) {
  if (i >= args.size() || args[i].is(Kind::Missing)) return nullptr;
  return &args[i];
}

const Value* kwarg(const Kwargs& kw, std::string_view name) {
  for (auto& [k, v] : kw)
    if (k == name) return v.is(Kind::Missing) ? nullptr : &v;
  return nullptr;
}

Value attribute_path(const Value& item, const std::string& path) {
  Value v = item;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (v.is_container()) {
      Value next;
      v = v.map().get(part, next) && !next.is(Kind::Missing) ? next : Value::undefined();
    } else if (v.is(Kind::Array)) {
      double index = js_parse_int(part);
      const auto& items = v.arr().items;
      if (std::isnan(index) || index < 0 || index >= double(items.size())) return Value::undefined();
      v = items[size_t(index)];
    } else {
      return Value::undefined();
    }
    if (dot == std::string::npos) return v;
    start = dot + 1;
  }
}

namespace {

const char* const kStrMethods[] = {"upper", "lower", "strip", "title", "capitalize", "rstrip",
                                   "lstrip", "startswith", "endswith", "split", "replace"};
const char* const kDictMethods[] = {"get", "items", "keys", "values", "dictsort"};

std::string what(const Value* v) { return v ? type_name(*v) : "nothing"; }


}  // namespace

namespace {

// A bound method value: `self`'s method `name` if it is among `names`, else undefined.
template <size_t N>
Value bound_method(State& st, Fn kind, const Value& self, const std::string& name, const char* const (&names)[N]) {
  for (const char* m : names) {
    if (name == m) {
      FuncObj* f = st.func(kind);
      f->method = name;
      f->self = self;
      return Value::func(f);
    }
  }
  return Value::undefined();
}

// A JavaScript primitive, for range()'s loop over raw values.
struct JsPrim {
  enum Type { Undef, Bool, Num, Str } type = Undef;
  double num = 0;
  std::string str;
};

JsPrim js_prim(const Value& v, State& st) {
  switch (v.kind) {
    case Kind::Int: case Kind::Float: return {JsPrim::Num, v.num, {}};
    case Kind::Bool: return {JsPrim::Bool, v.num, {}};
    case Kind::Str: return {JsPrim::Str, 0, v.s()};
    case Kind::Null: case Kind::Undefined: return {};
    default: return {JsPrim::Str, 0, raw_string(v, st)};  // objects become their String()
  }
}

double js_number_of(const JsPrim& p) {
  switch (p.type) {
    case JsPrim::Num: case JsPrim::Bool: return p.num;
    case JsPrim::Str: return js_to_number(p.str);
    default: return NAN;
  }
}

std::string js_string_of(const JsPrim& p) {
  switch (p.type) {
    case JsPrim::Num: return js_number(p.num);
    case JsPrim::Bool: return p.num ? "true" : "false";
    case JsPrim::Str: return p.str;
    default: return "undefined";
  }
}

// a < b: strings compare as strings, anything else as numbers (NaN: false).
bool js_less(const JsPrim& a, const JsPrim& b) {
  if (a.type == JsPrim::Str && b.type == JsPrim::Str) return compare_utf16(a.str, b.str) < 0;
  return js_number_of(a) < js_number_of(b);
}

// a + b: a string on either side concatenates.
JsPrim js_add(const JsPrim& a, const JsPrim& b, State& st) {
  if (a.type == JsPrim::Str || b.type == JsPrim::Str) {
    std::string s = js_string_of(a) + js_string_of(b);
    st.check_size(s.size());
    return {JsPrim::Str, 0, std::move(s)};
  }
  return {JsPrim::Num, js_number_of(a) + js_number_of(b), {}};
}

Value js_value(const JsPrim& p, State& st) {
  switch (p.type) {
    case JsPrim::Num:
      return std::isfinite(p.num) && std::trunc(p.num) == p.num ? Value::integer(p.num) : Value::floating(p.num);
    case JsPrim::Bool: return Value::boolean(p.num != 0);
    case JsPrim::Str: return st.str(p.str);
    default: return Value::undefined();
  }
}

}  // namespace

Value str_method(State& st, const Value& self, const std::string& name) {
  if (name == "length") return Value::integer(double(utf16_length(self.s())));
  return bound_method(st, Fn::StrMethod, self, name, kStrMethods);
}

Value dict_method(State& st, const Value& self, const std::string& name) {
  return bound_method(st, Fn::DictMethod, self, name, kDictMethods);
}

std::string replace_text(std::string_view s, std::string_view from, std::string_view to, double count, State& st) {
  if (count == 0 || std::isnan(count)) return std::string(s);
  double remaining = count < 0 ? INFINITY : count;
  std::string out;
  auto emit = [&](std::string_view part) {
    out.append(part);
    st.check_size(out.size());
  };
  if (from.empty()) {
    // An empty pattern matches at every character boundary, before the first and after the last.
    size_t i = 0;
    while (true) {
      if (remaining > 0) {
        emit(to);
        remaining -= 1;
      }
      if (i >= s.size()) break;
      size_t start = i;
      next_cp(s, i);
      emit(s.substr(start, i - start));
      st.step();
    }
    return out;
  }
  size_t pos = 0;
  while (remaining > 0) {
    size_t hit = s.find(from, pos);
    if (hit == std::string_view::npos) break;
    emit(s.substr(pos, hit - pos));
    emit(to);
    pos = hit + from.size();
    remaining -= 1;
    st.step();
  }
  emit(s.substr(pos));
  return out;
}

Value Interpreter::call_str_method(const std::string& s, const std::string& name, std::vector<Value>& args) {
  st_.step(1 + s.size() / 64);
  if (name == "upper") return st_.str(js_upper(s));
  if (name == "lower") return st_.str(js_lower(s));
  if (name == "strip") return st_.str(js_trim(s));
  if (name == "title") return st_.str(js_title(s));
  if (name == "capitalize") return st_.str(js_capitalize(s));
  if (name == "rstrip") return st_.str(js_trim_end(s));
  if (name == "lstrip") return st_.str(js_trim_start(s));
  if (name == "startswith" || name == "endswith") {
    const bool starts = name == "startswith";
    if (args.empty()) fail(name + "() needs an argument");
    auto test = [&](const std::string& p) { return starts ? std::string_view(s).starts_with(p) : std::string_view(s).ends_with(p); };
    const Value* pattern = arg_at(args, 0);
    if (pattern && pattern->is(Kind::Str)) return Value::boolean(test(pattern->s()));
    if (pattern && pattern->is(Kind::Array)) {
      for (const Value& item : pattern->arr().items) {
        if (!item.is(Kind::Str)) fail(name + "(): the tuple may only hold strings");
        if (test(item.s())) return Value::boolean(true);
      }
      return Value::boolean(false);
    }
    fail(name + "() takes a string or a tuple of strings, not " + what(pattern));
  }
  if (name == "split") {
    const Value* sep = arg_at(args, 0);
    if (sep && !sep->is(Kind::Str) && !sep->is(Kind::Null)) fail("split(): the separator must be a string or none");
    const Value* maxv = arg_at(args, 1);
    if (maxv && !maxv->is(Kind::Int)) fail("split(): maxsplit must be an integer");
    const double maxsplit = maxv ? maxv->num : -1;
    std::vector<Value> parts;
    if (!sep || sep->is(Kind::Null)) {
      // Runs of whitespace separate; no empty parts at the ends; what maxsplit leaves stays whole.
      std::string_view text = js_trim_start(s);
      size_t i = 0;
      while (i < text.size()) {
        size_t start = i;
        while (i < text.size() && !js_space_at(text, i)) i += cp_len(static_cast<unsigned char>(text[i]));
        if (maxsplit >= 0 && double(parts.size()) >= maxsplit) {
          parts.push_back(st_.str(text.substr(start)));
          break;
        }
        parts.push_back(st_.str(text.substr(start, i - start)));
        while (size_t n = js_space_at(text, i)) i += n;
      }
    } else {
      const std::string& d = sep->s();
      if (d.empty()) fail("split(): empty separator");
      std::vector<std::string_view> pieces;
      size_t pos = 0;
      while (true) {
        size_t hit = s.find(d, pos);
        if (hit == std::string::npos) break;
        pieces.push_back(std::string_view(s).substr(pos, hit - pos));
        pos = hit + d.size();
      }
      pieces.push_back(std::string_view(s).substr(pos));
      size_t keep = pieces.size();
      if (maxsplit >= 0 && double(pieces.size()) > maxsplit) keep = size_t(maxsplit);
      for (size_t k = 0; k < keep; ++k) parts.push_back(st_.str(pieces[k]));
      if (keep < pieces.size()) {
        // The rest joined back: one piece from the start of piece `keep` to the end.
        size_t offset = size_t(pieces[keep].data() - s.data());
        parts.push_back(st_.str(std::string_view(s).substr(offset)));
      }
    }
    return st_.array(std::move(parts));
  }
  if (name == "replace") {
    if (args.size() < 2) fail("replace() needs two arguments");
    const Value* from = arg_at(args, 0);
    const Value* to = arg_at(args, 1);
    if (!from || !to || !from->is(Kind::Str) || !to->is(Kind::Str)) fail("replace(): both arguments must be strings");
    Value count = Value::null();
    if (args.size() > 2) {
      const Value& third = args[2];
      if (third.is(Kind::Object) && third.map().sub == ObjectObj::Sub::Kwargs) {
        Value c;
        if (third.map().get("count", c) && !c.is(Kind::Missing)) count = c;
      } else {
        count = third;
      }
    }
    if (!count.is(Kind::Int) && !count.is(Kind::Null)) fail("replace(): count must be an integer or none");
    return st_.str(replace_text(s, from->s(), to->s(), count.is(Kind::Null) ? -1 : count.num, st_));
  }
  fail("strings have no method '" + one_line(name, 60) + "'");
}

Value Interpreter::call_dict_method(const Value& self, const std::string& name, std::vector<Value>& args) {
  const ObjectObj& o = self.map();
  if (name == "get") {
    const Value* key = arg_at(args, 0);
    if (!key || !key->is(Kind::Str)) fail("get(): the key must be a string, not " + what(key));
    Value v;
    if (o.get(key->s(), v) && !v.is(Kind::Missing)) return v;
    const Value* def = arg_at(args, 1);
    return def ? *def : Value::null();
  }
  if (name == "items" || name == "keys" || name == "values") {
    std::vector<Value> out;
    for (auto& [k, v] : o.entries()) {
      if (name == "items") out.push_back(st_.array({st_.str(k), v}));
      else if (name == "keys") out.push_back(st_.str(k));
      else out.push_back(v);
    }
    return st_.array(std::move(out));
  }
  if (name == "dictsort") {
    std::vector<Value> positional;
    Kwargs kw;
    for (const Value& a : args) {
      if (a.is(Kind::Object) && a.map().sub == ObjectObj::Sub::Kwargs) kw = a.map().entries();
      else positional.push_back(a);
    }
    const Value* cs = arg_at(positional, 0);
    if (!cs) cs = kwarg(kw, "case_sensitive");
    if (cs && !cs->is(Kind::Bool)) fail("dictsort(): case_sensitive must be a boolean");
    const Value* by = arg_at(positional, 1);
    if (!by) by = kwarg(kw, "by");
    if (by && !by->is(Kind::Str)) fail("dictsort(): by must be a string");
    if (by && by->s() != "key" && by->s() != "value") fail("dictsort(): by must be 'key' or 'value'");
    const Value* rev = arg_at(positional, 2);
    if (!rev) rev = kwarg(kw, "reverse");
    if (rev && !rev->is(Kind::Bool)) fail("dictsort(): reverse must be a boolean");
    const bool case_sensitive = cs && cs->truth_bool(), reverse = rev && rev->truth_bool();
    const size_t index = by && by->s() == "value" ? 1 : 0;
    std::vector<Value> items;
    for (auto& [k, v] : o.entries()) items.push_back(st_.array({st_.str(k), v}));
    stable_sort(items, [&](const Value& a, const Value& b) {
      int r = compare_values(a.arr().items[index], b.arr().items[index], case_sensitive);
      return reverse ? -r : r;
    }, st_);
    return st_.array(std::move(items));
  }
  fail("dicts have no method '" + one_line(name, 60) + "'");
}

Value Interpreter::make_namespace(std::vector<Value> args) {
  Kwargs kw;
  if (!args.empty() && args.back().is(Kind::Object) && args.back().map().sub == ObjectObj::Sub::Kwargs) {
    kw = args.back().map().entries();
    args.pop_back();
  }
  if (args.size() > 1) fail("namespace() takes at most one positional argument, got " + std::to_string(args.size()));
  Value ns = st_.ns();
  ObjectObj& o = ns.map();
  if (args.size() == 1) {
    const Value& source = args[0];
    if (source.is(Kind::Object)) {
      for (auto& [k, v] : source.map().entries()) o.set(k, v);
    } else if (source.is(Kind::Array)) {
      for (const Value& pair : source.arr().items) {
        std::vector<Value> kv;
        if (pair.is(Kind::Array)) kv = pair.arr().items;
        else if (pair.is(Kind::Str))
          for (auto c : code_points(pair.s())) kv.push_back(st_.str(c));
        if (kv.size() != 2) fail("namespace() takes a dict or a list of [key, value] pairs");
        if (!kv[0].is(Kind::Str)) fail("namespace(): keys must be strings");
        o.set(kv[0].s(), kv[1]);
      }
    } else {
      fail(std::string("namespace() cannot take its entries from ") +
           (source.is(Kind::Missing) ? "a missing value" : type_name(source)));
    }
  }
  for (auto& [k, v] : kw) o.set(k, v);
  st_.account((o.size() + 1) * sizeof(std::pair<std::string, Value>));
  return ns;
}

Value Interpreter::call_global(FuncObj& f, std::vector<Value>& args) {
  // The reference calls these as plain JavaScript functions with the arguments' raw values.
  for (const Value& a : args)
    if (a.is(Kind::Missing)) fail("a missing value (|first or |last of an empty list) cannot be passed here");
  // none's raw value is undefined too, so it counts as an argument not given.
  auto undefined_at = [&](size_t i) { return i >= args.size() || args[i].is(Kind::Undefined) || args[i].is(Kind::Null); };
  switch (f.kind) {
    case Fn::RaiseException: {
      std::string msg = undefined_at(0) ? std::string() : raw_string(args[0], st_);
      fail("raise_exception: " + one_line(msg, 2000));
    }
    case Fn::StrftimeNow: {
      if (args.empty() || !args[0].is(Kind::Str)) fail("strftime_now() takes a format string");
      std::string out;
      if (st_.options.strftime_now) {
        out = st_.options.strftime_now(args[0].s());
        if (!valid_utf8(out)) fail("strftime_now() gave text that is not valid UTF-8");
      } else {
        std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
        std::tm local{};
        localtime_r(&now, &local);
        out = format_time_like_reference(args[0].s(), local);
      }
      return st_.str(std::move(out));
    }
    case Fn::Range: {
      // The reference runs `for (i = start; i < stop; i += step)` on the raw JavaScript values.
      const bool two = !undefined_at(1);
      JsPrim start = two ? js_prim(args[0], st_) : JsPrim{JsPrim::Num, 0, {}};
      JsPrim stop = two ? js_prim(args[1], st_) : undefined_at(0) ? JsPrim{} : js_prim(args[0], st_);
      JsPrim step = undefined_at(2) ? JsPrim{JsPrim::Num, 1, {}} : js_prim(args[2], st_);
      if (step.type == JsPrim::Num && step.num == 0) fail("range() step must not be zero");
      const bool up = js_less({JsPrim::Num, 0, {}}, step);
      if (start.type == JsPrim::Num && stop.type == JsPrim::Num && step.type == JsPrim::Num) {
        // Count first, so that a huge range fails at once instead of after filling memory.
        double count = 0;
        if (up && start.num < stop.num) count = std::ceil((stop.num - start.num) / step.num);
        if (!up && start.num > stop.num) count = std::ceil((start.num - stop.num) / -step.num);
        if (!(count < 1e12)) fail("range() is too long");
        st_.step(uint64_t(count));
        st_.account(uint64_t(count) * sizeof(Value));
      }
      std::vector<Value> items;
      for (JsPrim i = start; up ? js_less(i, stop) : js_less(stop, i);) {
        st_.step();
        st_.account(sizeof(Value));
        items.push_back(js_value(i, st_));
        JsPrim next = js_add(i, step, st_);
        // Adding "" (or a step too small to change a huge number) never gets anywhere.
        if (next.type == i.type && next.num == i.num && next.str == i.str) fail("range() never ends");
        i = std::move(next);
      }
      return st_.array(std::move(items));
    }
    default: fail("this function cannot be called here");
  }
}

}  // namespace ac::jinja
