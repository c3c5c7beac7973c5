#pragma once
// Runtime values, modelled on the reference's: numbers are doubles tagged integer or float,
// lists and tuples, dicts that keep insertion order, namespaces, functions, none, undefined,
// and "missing" (the raw JavaScript undefined that |first of an empty list yields, which breaks
// most operations). Containers, functions and scopes live in the render's Heap and are freed
// together when the render ends (macros capture scopes, namespaces may hold themselves: cycles
// are normal); strings are shared and immutable.
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "agentcompile/jinja/template.h"
#include "jinja/ast.h"

namespace ac::jinja {

enum class Kind : uint8_t { Missing, Undefined, Null, Bool, Int, Float, Str, Array, Object, Namespace, Func };

struct ArrayObj;
struct ObjectObj;
struct FuncObj;
using StrPtr = std::shared_ptr<const std::string>;

struct Value {
  Kind kind = Kind::Undefined;
  double num = 0;        // Bool (0 or 1), Int, Float
  void* obj = nullptr;   // ArrayObj (Array), ObjectObj (Object, Namespace), FuncObj (Func)
  StrPtr str;            // Str

  static Value make(Kind k, double n = 0, void* o = nullptr) {
    Value v;
    v.kind = k;
    v.num = n;
    v.obj = o;
    return v;
  }
  static Value missing() { return make(Kind::Missing); }
  static Value undefined() { return make(Kind::Undefined); }
  static Value null() { return make(Kind::Null); }
  static Value boolean(bool b) { return make(Kind::Bool, b ? 1.0 : 0.0); }
  static Value integer(double v) { return make(Kind::Int, v); }
  static Value floating(double v) { return make(Kind::Float, v); }
  static Value string(StrPtr s) {
    Value v = make(Kind::Str);
    v.str = std::move(s);
    return v;
  }
  static Value array(ArrayObj* a) { return make(Kind::Array, 0, a); }
  static Value object(ObjectObj* o) { return make(Kind::Object, 0, o); }
  static Value ns(ObjectObj* o) { return make(Kind::Namespace, 0, o); }
  static Value func(FuncObj* f) { return make(Kind::Func, 0, f); }

  bool is(Kind k) const { return kind == k; }
  bool is_number() const { return kind == Kind::Int || kind == Kind::Float; }
  bool is_numeric_like() const { return is_number() || kind == Kind::Bool; }
  // ObjectValue or NamespaceValue: what has attributes
  bool is_container() const { return kind == Kind::Object || kind == Kind::Namespace; }
  bool truth_bool() const { return num != 0; }
  const std::string& s() const { return *str; }
  ArrayObj& arr() const { return *static_cast<ArrayObj*>(obj); }
  ObjectObj& map() const { return *static_cast<ObjectObj*>(obj); }
  FuncObj& fn() const { return *static_cast<FuncObj*>(obj); }
};

struct ArrayObj {
  std::vector<Value> items;
  bool tuple = false;
};

// A dict (plain, keyword arguments, or a loop variable) or a namespace: keys in insertion order.
struct ObjectObj {
  enum class Sub : uint8_t { Plain, Kwargs, Loop };
  Sub sub = Sub::Plain;

  size_t size() const;
  // The value under `key`, or false when there is none.
  bool get(std::string_view key, Value& out) const;
  // Sets (or replaces, keeping its place) one entry.
  void set(std::string_view key, Value v);
  // The entries in order (a loop variable builds its own first).
  const std::vector<std::pair<std::string, Value>>& entries() const;

  // A loop variable computes its entries only when they are listed, like the reference.
  void make_loop(double index0, double length, Value prev, Value next);

 private:
  void materialize() const;
  mutable std::vector<std::pair<std::string, Value>> entries_;
  mutable std::unordered_map<std::string, size_t> index_;  // built once the dict grows
  mutable bool lazy_loop_ = false;
  double loop_i_ = 0, loop_n_ = 0;
  Value loop_prev_, loop_next_;
};

struct Env;

enum class Fn : uint8_t { Range, StrftimeNow, RaiseException, Namespace, StrMethod, DictMethod, Macro, Caller };

struct FuncObj {
  Fn kind = Fn::Range;
  std::string method;     // StrMethod, DictMethod: the method's name
  Value self;             // StrMethod, DictMethod: the receiver
  const Node* node = nullptr;  // Macro, Caller: the definition
  Env* env = nullptr;          // Macro, Caller: where it was defined
};

// A scope. Every scope also answers `namespace` with the builtin unless it set that name itself.
struct Env {
  Env* parent = nullptr;
  bool call_block = false;  // the scope a {% call %} block passes its macro (it holds `caller`)
  std::vector<std::pair<std::string, Value>> vars;

  Value* find_local(std::string_view name);
  void set(std::string_view name, Value v);
};

// Per-render state: limits, the heap, the step count.
class State {
 public:
  State(const Limits& limits, const Options& options);
  ~State();
  State(const State&) = delete;
  State& operator=(const State&) = delete;

  const Limits& limits;
  const Options& options;

  // One unit of work; throws once the template has used up its steps.
  void step(uint64_t n = 1) {
    steps_ += n;
    if (steps_ > limits.max_steps) over_steps();
  }
  // Throws if a string of `bytes` would be larger than a value may be.
  void check_size(size_t bytes) const {
    if (bytes > limits.max_output_bytes) over_size(bytes);
  }

  Value str(std::string s);
  Value str(std::string_view s) { return str(std::string(s)); }
  Value str(const char* s) { return str(std::string(s)); }
  Value array(std::vector<Value> items, bool tuple = false);
  ObjectObj* object(ObjectObj::Sub sub = ObjectObj::Sub::Plain);
  Value ns();
  FuncObj* func(Fn kind);
  Env* env(Env* parent);
  // Counts memory taken by a container that grew (a namespace entry, an object built by hand).
  void account(size_t bytes);

  Value builtin_namespace;  // the `namespace` function every scope sees

 private:
  [[noreturn]] void over_steps() const;
  [[noreturn]] void over_size(size_t bytes) const;
  uint64_t steps_ = 0;
  std::shared_ptr<size_t> string_bytes_;  // live string bytes (shared with the strings' deleters)
  size_t heap_bytes_ = 0;
  std::deque<ArrayObj> arrays_;
  std::deque<ObjectObj> objects_;
  std::deque<FuncObj> funcs_;
  std::deque<Env> envs_;
};

// ---- semantics shared by the interpreter, filters and tests

const char* type_name(const Value& v);
// Python-ish truth: empty strings, lists and dicts are false; namespaces and functions true.
bool truthy(const Value& v);
// How {{ v }} prints v (the reference's toString): floats with ".0", lists and dicts as JSON.
void append_display(std::string& out, const Value& v, State& st, int depth = 0);
// JavaScript's String(v.value): what ~, + on strings and join use (floats print as JS numbers,
// lists join with commas, dicts are "[object Map]").
void append_raw(std::string& out, const Value& v, State& st, int depth = 0);
std::string raw_string(const Value& v, State& st);
// JavaScript ===, SameValueZero (Set membership) and == on the values.
bool strict_equal(const Value& a, const Value& b);
bool same_value_zero(const Value& a, const Value& b);
bool loose_equal(const Value& a, const Value& b, State& st);
// JavaScript truthiness of v.value (for flags the reference reads without checking their type).
bool raw_truthy(const Value& v);

// tojson: JSON text with Python's separators by default.
struct JsonFormat {
  bool indent = false;
  std::string indent_unit;
  bool ensure_ascii = false;
  bool sort_keys = false;
  std::string item_sep = ", ", key_sep = ": ";
};
void append_json(std::string& out, const Value& v, const JsonFormat& f, State& st, bool undefined_as_null = true,
                 int depth = 0);
// The JSON string literal for s (JSON.stringify), optionally with non-ASCII escaped.
void append_json_string(std::string& out, std::string_view s, bool ensure_ascii);

// The reference's comparison for sort and dictsort: numbers (and booleans) with numbers,
// strings with strings (optionally case-insensitive), none with none; anything else fails.
int compare_values(const Value& a, const Value& b, bool case_sensitive);
// A stable merge sort whose comparison may throw (JavaScript's Array.prototype.sort is stable).
void stable_sort(std::vector<Value>& v, const std::function<int(const Value&, const Value&)>& cmp, State& st);

// Context JSON (nlohmann) as values, object keys in JavaScript's order (integer-like keys first).
Value from_json(const Json& j, State& st, int depth = 0);
Value from_json(const nlohmann::ordered_json& j, State& st, int depth = 0);

}  // namespace ac::jinja
