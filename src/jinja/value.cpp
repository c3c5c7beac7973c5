#include "jinja/value.h"

#include <algorithm>
#include <cmath>

#include "jinja/error.h"
#include "jinja/js_number.h"
#include "jinja/unicode.h"

namespace ac::jinja {

// ---- containers

size_t ObjectObj::size() const {
  if (lazy_loop_) return 9;
  return entries_.size();
}

bool ObjectObj::get(std::string_view key, Value& out) const {
  if (lazy_loop_) {
    const double i = loop_i_, n = loop_n_;
    if (key == "index") out = Value::integer(i + 1);
    else if (key == "index0") out = Value::integer(i);
    else if (key == "revindex") out = Value::integer(n - i);
    else if (key == "revindex0") out = Value::integer(n - i - 1);
    else if (key == "first") out = Value::boolean(i == 0);
    else if (key == "last") out = Value::boolean(i == n - 1);
    else if (key == "length") out = Value::integer(n);
    else if (key == "previtem") out = loop_prev_;
    else if (key == "nextitem") out = loop_next_;
    else return false;
    return true;
  }
  if (!index_.empty()) {
    auto it = index_.find(std::string(key));
    if (it == index_.end()) return false;
    out = entries_[it->second].second;
    return true;
  }
  for (auto& [k, v] : entries_) {
    if (k == key) {
      out = v;
      return true;
    }
  }
  return false;
}

void ObjectObj::set(std::string_view key, Value v) {
  materialize();
  if (!index_.empty()) {
    auto it = index_.find(std::string(key));
    if (it != index_.end()) {
      entries_[it->second].second = std::move(v);
      return;
    }
  } else {
    for (auto& [k, old] : entries_) {
      if (k == key) {
        old = std::move(v);
        return;
      }
    }
  }
  entries_.emplace_back(std::string(key), std::move(v));
  constexpr size_t kIndexFrom = 16;
  if (entries_.size() == kIndexFrom) {
    for (size_t i = 0; i < entries_.size(); ++i) index_.emplace(entries_[i].first, i);
  } else if (entries_.size() > kIndexFrom) {
    index_.emplace(entries_.back().first, entries_.size() - 1);
  }
}

const std::vector<std::pair<std::string, Value>>& ObjectObj::entries() const {
  materialize();
  return entries_;
}

void ObjectObj::make_loop(double index0, double length, Value prev, Value next) {
  lazy_loop_ = true;
  loop_i_ = index0;
  loop_n_ = length;
  loop_prev_ = std::move(prev);
  loop_next_ = std::move(next);
}

void ObjectObj::materialize() const {
  if (!lazy_loop_) return;
  static const char* const keys[] = {"index", "index0", "revindex", "revindex0", "first",
                                     "last", "length", "previtem", "nextitem"};
  std::vector<std::pair<std::string, Value>> e;
  for (const char* k : keys) {
    Value v;
    get(k, v);
    e.emplace_back(k, std::move(v));
  }
  lazy_loop_ = false;
  entries_ = std::move(e);
}

Value* Env::find_local(std::string_view name) {
  for (auto& [k, v] : vars)
    if (k == name) return &v;
  return nullptr;
}

void Env::set(std::string_view name, Value v) {
  if (Value* old = find_local(name)) {
    *old = std::move(v);
    return;
  }
  vars.emplace_back(std::string(name), std::move(v));
}

// ---- the render's state

State::State(const Limits& l, const Options& o) : limits(l), options(o), string_bytes_(std::make_shared<size_t>(0)) {
  builtin_namespace = Value::func(func(Fn::Namespace));
}

State::~State() = default;

void State::over_steps() const {
  fail("the template ran too long (more than " + std::to_string(limits.max_steps) + " steps)");
}

void State::over_size(size_t bytes) const {
  fail("a string of " + std::to_string(bytes) + " bytes would exceed the limit of " +
       std::to_string(limits.max_output_bytes) + " bytes");
}

void State::account(size_t bytes) {
  heap_bytes_ += bytes;
  if (heap_bytes_ + *string_bytes_ > limits.max_memory_bytes)
    fail("the template uses more than " + std::to_string(limits.max_memory_bytes >> 20) + " MiB of memory");
}

Value State::str(std::string s) {
  check_size(s.size());
  step(1 + s.size() / 16);
  const size_t n = s.size();
  account(n);  // checks the total; the string's share leaves heap_bytes_ again below
  heap_bytes_ -= n;
  *string_bytes_ += n;
  std::shared_ptr<size_t> counter = string_bytes_;
  auto* p = new std::string(std::move(s));
  return Value::string(StrPtr(p, [counter, n](const std::string* q) {
    *counter -= n;
    delete q;
  }));
}

Value State::array(std::vector<Value> items, bool tuple) {
  step(1 + items.size());
  account(sizeof(ArrayObj) + items.size() * sizeof(Value));
  arrays_.push_back(ArrayObj{std::move(items), tuple});
  return Value::array(&arrays_.back());
}

ObjectObj* State::object(ObjectObj::Sub sub) {
  step();
  account(sizeof(ObjectObj));
  objects_.emplace_back();
  objects_.back().sub = sub;
  return &objects_.back();
}

Value State::ns() { return Value::ns(object()); }

FuncObj* State::func(Fn kind) {
  account(sizeof(FuncObj));
  funcs_.emplace_back();
  funcs_.back().kind = kind;
  return &funcs_.back();
}

Env* State::env(Env* parent) {
  step();
  account(sizeof(Env));
  envs_.emplace_back();
  envs_.back().parent = parent;
  return &envs_.back();
}

// ---- semantics

const char* type_name(const Value& v) {
  switch (v.kind) {
    case Kind::Missing: return "missing value";
    case Kind::Undefined: return "undefined";
    case Kind::Null: return "none";
    case Kind::Bool: return "boolean";
    case Kind::Int: return "integer";
    case Kind::Float: return "float";
    case Kind::Str: return "string";
    case Kind::Array: return v.arr().tuple ? "tuple" : "list";
    case Kind::Object:
      return v.map().sub == ObjectObj::Sub::Kwargs ? "keyword arguments" : v.map().sub == ObjectObj::Sub::Loop ? "loop" : "dict";
    case Kind::Namespace: return "namespace";
    case Kind::Func: return "function";
  }
  return "?";
}

[[noreturn]] static void missing_value() {
  fail("a missing value (|first or |last of an empty list) cannot be used here");
}

bool truthy(const Value& v) {
  switch (v.kind) {
    case Kind::Missing: missing_value();
    case Kind::Undefined: case Kind::Null: return false;
    case Kind::Bool: return v.truth_bool();
    case Kind::Int: case Kind::Float: return v.num != 0 && !std::isnan(v.num);
    case Kind::Str: return !v.s().empty();
    case Kind::Array: return !v.arr().items.empty();
    case Kind::Object: return v.map().size() > 0;
    case Kind::Namespace: case Kind::Func: return true;
  }
  return false;
}

bool raw_truthy(const Value& v) {
  // JavaScript objects are true even when empty.
  if (v.is(Kind::Array) || v.is(Kind::Object)) return true;
  return truthy(v);
}

static void check_depth(int depth, State& st) {
  if (depth > st.limits.max_depth)
    fail("a value nested more than " + std::to_string(st.limits.max_depth) + " levels deep (or holding itself)");
}

void append_display(std::string& out, const Value& v, State& st, int depth) {
  switch (v.kind) {
    case Kind::Missing: missing_value();
    case Kind::Undefined: out += "undefined"; return;
    case Kind::Null: out += "null"; return;
    case Kind::Bool: out += v.truth_bool() ? "true" : "false"; return;
    case Kind::Int: out += js_number(v.num); return;
    case Kind::Float: out += js_float(v.num); return;
    case Kind::Str: out += v.s(); return;
    case Kind::Array: case Kind::Object: case Kind::Namespace:
      append_json(out, v, JsonFormat{}, st, /*undefined_as_null=*/false, depth);
      return;
    case Kind::Func: fail("a function cannot be printed");
  }
}

void append_raw(std::string& out, const Value& v, State& st, int depth) {
  check_depth(depth, st);
  switch (v.kind) {
    case Kind::Missing: missing_value();
    case Kind::Float: out += js_number(v.num); return;
    case Kind::Array: {
      bool first = true;
      for (const Value& e : v.arr().items) {
        if (!first) out.push_back(',');
        first = false;
        if (!e.is(Kind::Missing)) append_display(out, e, st, depth + 1);
        st.check_size(out.size());
      }
      return;
    }
    case Kind::Object: case Kind::Namespace: out += "[object Map]"; return;
    case Kind::Func: fail("a function cannot be turned into a string");
    default: append_display(out, v, st, depth);
  }
}

std::string raw_string(const Value& v, State& st) {
  std::string s;
  append_raw(s, v, st);
  return s;
}

bool strict_equal(const Value& a, const Value& b) {
  if (a.is(Kind::Missing) || b.is(Kind::Missing)) missing_value();
  if (a.is_number() && b.is_number()) return a.num == b.num;
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Kind::Undefined: case Kind::Null: return true;
    case Kind::Bool: return a.num == b.num;
    case Kind::Str: return a.s() == b.s();
    default: return a.obj == b.obj;
  }
}

bool same_value_zero(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number() && std::isnan(a.num) && std::isnan(b.num)) return true;
  return strict_equal(a, b);
}

namespace {

// A JavaScript primitive for ==: what a value's .value becomes once objects are converted.
struct Prim {
  enum Type { Undef, Null, Bool, Num, Str, Obj } type;
  double num = 0;
  std::string str;
  Prim(Type t, double n = 0, std::string s = {}) : type(t), num(n), str(std::move(s)) {}
};

Prim prim_of(const Value& v) {
  switch (v.kind) {
    case Kind::Missing: missing_value();
    case Kind::Undefined: return {Prim::Undef};
    case Kind::Null: return {Prim::Null};
    case Kind::Bool: return {Prim::Bool, v.num};
    case Kind::Int: case Kind::Float: return {Prim::Num, v.num};
    case Kind::Str: return {Prim::Str, 0, v.s()};
    default: return {Prim::Obj};
  }
}

bool loose_prims(Prim a, Prim b) {
  const bool a_nullish = a.type == Prim::Undef || a.type == Prim::Null;
  const bool b_nullish = b.type == Prim::Undef || b.type == Prim::Null;
  if (a_nullish || b_nullish) return a_nullish && b_nullish;
  if (a.type == Prim::Bool) a.type = Prim::Num;
  if (b.type == Prim::Bool) b.type = Prim::Num;
  if (a.type == b.type) return a.type == Prim::Num ? a.num == b.num : a.str == b.str;
  if (a.type == Prim::Num && b.type == Prim::Str) return a.num == js_to_number(b.str);
  if (a.type == Prim::Str && b.type == Prim::Num) return js_to_number(a.str) == b.num;
  return false;
}

}  // namespace

bool loose_equal(const Value& a, const Value& b, State& st) {
  Prim pa = prim_of(a), pb = prim_of(b);
  if (pa.type == Prim::Obj && pb.type == Prim::Obj) return a.obj == b.obj;
  // An object against a primitive: ToPrimitive gives its String() (lists join, dicts "[object Map]").
  auto to_prim = [&](const Value& v, Prim& p, const Prim& other) {
    if (p.type != Prim::Obj) return true;
    if (other.type == Prim::Undef || other.type == Prim::Null) return false;
    p = {Prim::Str, 0, raw_string(v, st)};
    return true;
  };
  if (!to_prim(a, pa, pb) || !to_prim(b, pb, pa)) return false;
  return loose_prims(pa, pb);
}

// ---- ordering

int compare_values(const Value& a, const Value& b, bool case_sensitive) {
  if (a.is(Kind::Missing) || b.is(Kind::Missing)) missing_value();
  if (a.is(Kind::Null) && b.is(Kind::Null)) return 0;
  if (a.is(Kind::Null) || b.is(Kind::Null))
    fail(std::string("cannot compare ") + type_name(a) + " with " + type_name(b));
  if (a.is(Kind::Undefined) && b.is(Kind::Undefined)) return 0;
  if (a.is(Kind::Undefined) || b.is(Kind::Undefined))
    fail(std::string("cannot compare ") + type_name(a) + " with " + type_name(b));
  if (a.is_numeric_like() && b.is_numeric_like()) return a.num < b.num ? -1 : a.num > b.num ? 1 : 0;
  const bool same_type = a.kind == b.kind && (!a.is(Kind::Array) || a.arr().tuple == b.arr().tuple) &&
                         (!a.is(Kind::Object) || (a.map().sub == ObjectObj::Sub::Kwargs) == (b.map().sub == ObjectObj::Sub::Kwargs));
  if (!same_type) fail(std::string("cannot compare ") + type_name(a) + " with " + type_name(b));
  if (!a.is(Kind::Str)) fail(std::string("cannot compare values of type ") + type_name(a));
  if (case_sensitive) return compare_utf16(a.s(), b.s());
  return compare_utf16(js_lower(a.s()), js_lower(b.s()));
}

void stable_sort(std::vector<Value>& v, const std::function<int(const Value&, const Value&)>& cmp, State& st) {
  std::vector<Value> tmp(v.size());
  for (size_t width = 1; width < v.size(); width *= 2) {
    for (size_t lo = 0; lo < v.size(); lo += 2 * width) {
      size_t mid = std::min(lo + width, v.size()), hi = std::min(lo + 2 * width, v.size());
      size_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi) {
        st.step();
        tmp[k++] = cmp(v[j], v[i]) < 0 ? v[j++] : v[i++];
      }
      while (i < mid) tmp[k++] = v[i++];
      while (j < hi) tmp[k++] = v[j++];
    }
    v.swap(tmp);
  }
}

// ---- context JSON

namespace {

// A canonical array index ("0", "17", up to 2^32 - 2): JavaScript lists such keys first, in
// numeric order, whatever order the object was written in.
bool array_index(const std::string& k, uint64_t& n) {
  if (k.empty() || k.size() > 10 || (k.size() > 1 && k[0] == '0')) return false;
  n = 0;
  for (char c : k) {
    if (c < '0' || c > '9') return false;
    n = n * 10 + uint64_t(c - '0');
  }
  return n <= 4294967294ull;
}

template <class J>
Value convert(const J& j, State& st, int depth) {
  check_depth(depth, st);
  st.step();
  switch (j.type()) {
    case nlohmann::json::value_t::null: return Value::null();
    case nlohmann::json::value_t::boolean: return Value::boolean(j.template get<bool>());
    case nlohmann::json::value_t::number_integer: return Value::integer(double(j.template get<int64_t>()));
    case nlohmann::json::value_t::number_unsigned: return Value::integer(double(j.template get<uint64_t>()));
    case nlohmann::json::value_t::number_float: {
      double d = j.template get<double>();
      return std::isfinite(d) && std::trunc(d) == d ? Value::integer(d) : Value::floating(d);
    }
    case nlohmann::json::value_t::string: {
      const std::string& s = j.template get_ref<const std::string&>();
      if (!valid_utf8(s)) fail("the context holds a string that is not valid UTF-8");
      return st.str(s);
    }
    case nlohmann::json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(convert(e, st, depth + 1));
      return st.array(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      ObjectObj* o = st.object();
      std::vector<std::pair<uint64_t, const J*>> indexed;
      std::vector<std::pair<const std::string*, const J*>> named;
      for (auto it = j.begin(); it != j.end(); ++it) {
        if (!valid_utf8(it.key())) fail("the context holds a key that is not valid UTF-8");
        uint64_t n;
        if (array_index(it.key(), n)) indexed.emplace_back(n, &it.value());
        else named.emplace_back(&it.key(), &it.value());
      }
      std::sort(indexed.begin(), indexed.end(), [](auto& x, auto& y) { return x.first < y.first; });
      for (auto& [n, v] : indexed) o->set(std::to_string(n), convert(*v, st, depth + 1));
      for (auto& [k, v] : named) o->set(*k, convert(*v, st, depth + 1));
      st.account(j.size() * (sizeof(std::pair<std::string, Value>) + 16));
      return Value::object(o);
    }
    default: fail("the context holds a value that is not JSON");
  }
}

}  // namespace

Value from_json(const Json& j, State& st, int depth) { return convert(j, st, depth); }
Value from_json(const nlohmann::ordered_json& j, State& st, int depth) { return convert(j, st, depth); }

}  // namespace ac::jinja
