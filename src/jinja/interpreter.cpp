#include "jinja/interpreter.h"

#include <cmath>

#include "jinja/error.h"
#include "jinja/unicode.h"

namespace ac::jinja {

namespace {

[[noreturn]] void missing_operand() {
  fail("a missing value (|first or |last of an empty list) cannot be used here");
}

const char* op_text(Op op) {
  switch (op) {
    case Op::And: return "and";
    case Op::Or: return "or";
    case Op::Not: return "not";
    case Op::Eq: return "==";
    case Op::Ne: return "!=";
    case Op::Lt: return "<";
    case Op::Gt: return ">";
    case Op::Le: return "<=";
    case Op::Ge: return ">=";
    case Op::In: return "in";
    case Op::NotIn: return "not in";
    case Op::Add: return "+";
    case Op::Sub: return "-";
    case Op::Concat: return "~";
    case Op::Mul: return "*";
    case Op::Div: return "/";
    case Op::FloorDiv: return "//";
    case Op::Mod: return "%";
    case Op::Pow: return "**";
    case Op::Neg: return "-";
    case Op::Pos: return "+";
    case Op::None: break;
  }
  return "?";
}

}  // namespace

Interpreter::MacroFrame::MacroFrame(Interpreter& i) : in(i) {
  if (++in.macro_depth_ > in.st_.limits.max_depth) {
    --in.macro_depth_;
    fail("macro calls nested more than " + std::to_string(in.st_.limits.max_depth) + " deep (runaway recursion?)");
  }
}

Interpreter::Nesting::Nesting(Interpreter& i) : in(i) {
  // Each level costs a few stack frames; four per syntax level leaves room for macro calls.
  if (++in.depth_ > in.st_.limits.max_depth * 4)
    fail("the template nests too deeply while rendering (runaway recursion?)");
}

void Interpreter::append(std::string& out, std::string_view s) {
  st_.step(s.size() / 16);
  out.append(s);
  st_.check_size(out.size());
}

std::string Interpreter::run(const std::vector<NodePtr>& program, Env* globals) {
  std::string out;
  Flow f;
  try {
    f = render(program, globals, out);
  } catch (const LoopSignal& s) {
    fail_at(s.pos, std::string("'") + (s.is_break ? "break" : "continue") + "' outside a for loop");
  }
  if (f != Flow::Normal) fail(std::string("'") + (f == Flow::Break ? "break" : "continue") + "' outside a for loop");
  return out;
}

Value Interpreter::lookup(std::string_view name, Env* env) {
  // Every scope has its own `namespace` unless it assigned that name itself.
  if (name == "namespace") {
    if (Value* v = env->find_local(name)) return v->is(Kind::Missing) ? Value::undefined() : *v;
    return st_.builtin_namespace;
  }
  for (Env* e = env; e; e = e->parent) {
    if (Value* v = e->find_local(name)) return v->is(Kind::Missing) ? Value::undefined() : *v;
  }
  return Value::undefined();
}

// ---- statements

Flow Interpreter::render(const std::vector<NodePtr>& body, Env* env, std::string& out) {
  Nesting nest(*this);
  for (const NodePtr& p : body) {
    const Node& n = *p;
    st_.step();
    try {
      switch (n.kind) {
        case NodeKind::Text: append(out, *n.str); break;
        case NodeKind::Comment: break;
        case NodeKind::If: {
          const bool yes = truthy(eval(*n.a, env));
          Flow f = render(yes ? n.list : n.list2, env, out);
          if (f != Flow::Normal) return f;
          break;
        }
        case NodeKind::For: {
          Flow f = render_for(n, env, out);
          if (f != Flow::Normal) return f;
          break;
        }
        case NodeKind::Set: exec_set(n, env); break;
        case NodeKind::Break: loop_pos_ = n.pos; return Flow::Break;
        case NodeKind::Continue: loop_pos_ = n.pos; return Flow::Continue;
        case NodeKind::Macro: define_macro(n, env); break;
        default: {
          Value v = eval(n, env);
          if (v.is(Kind::Null) || v.is(Kind::Undefined)) break;
          std::string s;
          append_display(s, v, st_);
          append(out, s);
        }
      }
    } catch (TemplateError& e) {
      if (e.pos == kNoPos) e.pos = n.pos;
      throw;
    }
  }
  return Flow::Normal;
}

Value Interpreter::render_value(const std::vector<NodePtr>& body, Env* env) {
  std::string out;
  Flow f = render(body, env, out);
  if (f != Flow::Normal) throw LoopSignal{f == Flow::Break, loop_pos_};
  return st_.str(std::move(out));
}

void Interpreter::bind_loop_var(const Node& target, const Value& item, Env* scope) {
  if (target.kind == NodeKind::Name) {
    scope->set(target.name, item);
    return;
  }
  const auto& values = item.arr().items;
  for (size_t j = 0; j < target.list.size(); ++j) {
    const Node& t = *target.list[j];
    if (t.kind != NodeKind::Name) fail_at(t.pos, "a loop variable must be a name");
    scope->set(t.name, values[j]);
  }
}

Flow Interpreter::render_for(const Node& n, Env* env, std::string& out) {
  Env* scope = st_.env(env);
  const Node* test = nullptr;
  Value iterable;
  if (n.b->kind == NodeKind::Select) {
    iterable = eval(*n.b->a, scope);
    test = n.b->b.get();
  } else {
    iterable = eval(*n.b, scope);
  }
  std::vector<Value> candidates;
  if (iterable.is(Kind::Array)) {
    candidates = iterable.arr().items;
  } else if (iterable.is(Kind::Object)) {
    for (auto& [k, v] : iterable.map().entries()) candidates.push_back(st_.str(k));
  } else {
    fail_at(n.b->pos, std::string("cannot loop over ") + (iterable.is(Kind::Missing) ? "a missing value" : type_name(iterable)) +
                          " (a list or a dict is needed)");
  }

  const Node& target = *n.a;
  std::vector<Value> items;
  if (target.kind == NodeKind::Name && !test) {
    items = std::move(candidates);
  } else {
    for (Value& c : candidates) {
      st_.step();
      if (target.kind == NodeKind::Tuple) {
        if (!c.is(Kind::Array) || c.arr().tuple)
          fail_at(target.pos, std::string("cannot unpack ") + (c.is(Kind::Missing) ? "a missing value" : type_name(c)) +
                                  " into the loop variables");
        const size_t want = target.list.size(), have = c.arr().items.size();
        if (want != have) fail_at(target.pos, want > have ? "too few items to unpack" : "too many items to unpack");
      }
      if (test) {
        Env* probe = st_.env(scope);
        bind_loop_var(target, c, probe);
        if (!truthy(eval(*test, probe))) continue;
      }
      items.push_back(std::move(c));
    }
  }

  bool iterated = false;
  const double length = double(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    st_.step();
    ObjectObj* loop = st_.object(ObjectObj::Sub::Loop);
    auto neighbour = [&](size_t k) { return items[k].is(Kind::Missing) ? Value::undefined() : items[k]; };
    loop->make_loop(double(i), length, i > 0 ? neighbour(i - 1) : Value::undefined(),
                    i + 1 < items.size() ? neighbour(i + 1) : Value::undefined());
    scope->set("loop", Value::object(loop));
    bind_loop_var(target, items[i], scope);
    const size_t mark = out.size();
    Flow f;
    try {
      f = render(n.list, scope, out);
    } catch (const LoopSignal& s) {
      f = s.is_break ? Flow::Break : Flow::Continue;
    }
    // An iteration left by break or continue contributes nothing (the reference drops its text).
    if (f == Flow::Break) {
      out.resize(mark);
      break;
    }
    if (f == Flow::Continue) {
      out.resize(mark);
      continue;
    }
    iterated = true;
  }
  if (!iterated) return render(n.list2, scope, out);
  return Flow::Normal;
}

void Interpreter::exec_set(const Node& n, Env* env) {
  Value rhs = n.b ? eval(*n.b, env) : render_value(n.list, env);
  const Node& target = *n.a;
  switch (target.kind) {
    case NodeKind::Name: env->set(target.name, std::move(rhs)); return;
    case NodeKind::Tuple: {
      if (!rhs.is(Kind::Array))
        fail_at(target.pos, std::string("cannot unpack ") + (rhs.is(Kind::Missing) ? "a missing value" : type_name(rhs)));
      const auto& items = rhs.arr().items;
      if (items.size() != target.list.size())
        fail_at(target.pos, target.list.size() > items.size() ? "too few items to unpack" : "too many items to unpack");
      for (size_t i = 0; i < items.size(); ++i) {
        const Node& t = *target.list[i];
        if (t.kind != NodeKind::Name) fail_at(t.pos, "can only unpack into names");
        env->set(t.name, items[i]);
      }
      return;
    }
    case NodeKind::Member: {
      Value object = eval(*target.a, env);
      if (!object.is(Kind::Namespace)) fail_at(target.pos, "attributes can only be set on a namespace");
      if (target.b->kind != NodeKind::Name) fail_at(target.b->pos, "the attribute to set must be a name");
      object.map().set(target.b->name, std::move(rhs));
      st_.account(sizeof(std::pair<std::string, Value>) + target.b->name.size());
      return;
    }
    default: fail_at(target.pos, "cannot assign to this expression");
  }
}

void Interpreter::define_macro(const Node& n, Env* env) {
  FuncObj* f = st_.func(Fn::Macro);
  f->node = &n;
  f->env = env;
  env->set(n.name, Value::func(f));
}

// ---- expressions

Value Interpreter::eval(const Node& n, Env* env) {
  Nesting nest(*this);
  st_.step();
  try {
    switch (n.kind) {
      case NodeKind::Name: return lookup(n.name, env);
      case NodeKind::Int: return Value::integer(n.num);
      case NodeKind::Float: return Value::floating(n.num);
      case NodeKind::Str: case NodeKind::Text: return Value::string(n.str);
      case NodeKind::Binary: return eval_binary(n, env);
      case NodeKind::Member: return eval_member(n, env);
      case NodeKind::Call: return eval_call(n, env);
      case NodeKind::Filter: {
        Value operand = eval(*n.a, env);
        return apply_filter(std::move(operand), *n.b, env);
      }
      case NodeKind::Test: return eval_test(n, env);
      case NodeKind::Ternary: return truthy(eval(*n.a, env)) ? eval(*n.b, env) : eval(*n.c, env);
      case NodeKind::Unary: return eval_unary(n, env);
      case NodeKind::List: case NodeKind::Tuple: {
        std::vector<Value> items;
        items.reserve(n.list.size());
        for (auto& e : n.list) items.push_back(eval(*e, env));
        return st_.array(std::move(items), n.kind == NodeKind::Tuple);
      }
      case NodeKind::Dict: {
        ObjectObj* o = st_.object();
        for (auto& [k, v] : n.pairs) {
          Value key = eval(*k, env);
          if (!key.is(Kind::Str)) fail_at(k->pos, std::string("dict keys must be strings, not ") + type_name(key));
          Value value = eval(*v, env);
          st_.account(sizeof(std::pair<std::string, Value>) + key.s().size());
          o->set(key.s(), std::move(value));
        }
        return Value::object(o);
      }
      case NodeKind::Select: return truthy(eval(*n.b, env)) ? eval(*n.a, env) : Value::undefined();
      case NodeKind::Comment: return Value::null();
      case NodeKind::Macro: define_macro(n, env); return Value::null();
      case NodeKind::CallBlock: return eval_call_block(n, env);
      case NodeKind::FilterBlock: {
        Value rendered = render_value(n.list, env);
        return apply_filter(std::move(rendered), *n.a, env);
      }
      case NodeKind::Break: case NodeKind::Continue:
        throw LoopSignal{n.kind == NodeKind::Break, n.pos};
      default: fail(std::string("a ") + node_kind_name(n.kind) + " cannot stand here");
    }
  } catch (TemplateError& e) {
    if (e.pos == kNoPos) e.pos = n.pos;
    throw;
  }
}

Value Interpreter::eval_unary(const Node& n, Env* env) {
  Value v = eval(*n.a, env);
  if (n.op == Op::Not) return Value::boolean(!truthy(v));
  if (!v.is_numeric_like())
    fail(std::string("unary ") + op_text(n.op) + " cannot apply to " + (v.is(Kind::Missing) ? "a missing value" : type_name(v)));
  const double r = (n.op == Op::Neg ? -1.0 : 1.0) * v.num;
  return v.is(Kind::Float) ? Value::floating(r) : Value::integer(r);
}

Value Interpreter::eval_binary(const Node& n, Env* env) {
  const Op op = n.op;
  Value left = eval(*n.a, env);
  if (op == Op::And) return truthy(left) ? eval(*n.b, env) : left;
  if (op == Op::Or) return truthy(left) ? left : eval(*n.b, env);
  Value right = eval(*n.b, env);
  if (op == Op::Eq) return Value::boolean(loose_equal(left, right, st_));
  if (op == Op::Ne) return Value::boolean(!loose_equal(left, right, st_));
  if (left.is(Kind::Missing) || right.is(Kind::Missing)) missing_operand();

  auto unknown = [&]() -> Value {
    fail(std::string("operator '") + op_text(op) + "' does not apply to " + type_name(left) + " and " + type_name(right));
  };

  if (left.is_number() && right.is_number() && op != Op::Concat && op != Op::Pow) {
    const double a = left.num, b = right.num;
    const bool fl = left.is(Kind::Float) || right.is(Kind::Float);
    auto num = [&](double r) { return fl ? Value::floating(r) : Value::integer(r); };
    switch (op) {
      case Op::Add: return num(a + b);
      case Op::Sub: return num(a - b);
      case Op::Mul: return num(a * b);
      case Op::Div: return Value::floating(a / b);
      case Op::FloorDiv: return num(std::floor(a / b));
      case Op::Mod: return num(std::fmod(a, b));
      case Op::Lt: return Value::boolean(a < b);
      case Op::Gt: return Value::boolean(a > b);
      case Op::Ge: return Value::boolean(a >= b);
      case Op::Le: return Value::boolean(a <= b);
      default: return unknown();
    }
  }
  if (left.is(Kind::Undefined) || right.is(Kind::Undefined)) {
    if (right.is(Kind::Undefined) && (op == Op::In || op == Op::NotIn)) return Value::boolean(op == Op::NotIn);
    if (op == Op::Concat && !left.is(Kind::Null) && !right.is(Kind::Null)) {
      std::string s;
      if (!left.is(Kind::Undefined)) append_raw(s, left, st_);
      if (!right.is(Kind::Undefined)) append_raw(s, right, st_);
      return st_.str(std::move(s));
    }
    fail(std::string("operator '") + op_text(op) + "' does not apply to undefined values");
  }
  if (left.is(Kind::Null) || right.is(Kind::Null))
    fail(std::string("operator '") + op_text(op) + "' does not apply to none");
  if (op == Op::Concat) {
    std::string s;
    append_raw(s, left, st_);
    append_raw(s, right, st_);
    return st_.str(std::move(s));
  }
  if (op == Op::Pow && left.is_numeric_like() && right.is_numeric_like()) {
    const double a = left.num, b = right.num;
    if (a == 0 && b < 0) fail("0 cannot be raised to a negative power");
    double r = std::pow(a, b);
    // JavaScript: 1 ** Infinity and x ** NaN are NaN.
    if (std::isnan(b) || (std::fabs(a) == 1 && std::isinf(b))) r = NAN;
    if (!std::isfinite(r)) fail("the result of '**' is not a finite real number");
    const bool fl = left.is(Kind::Float) || right.is(Kind::Float) || b < 0;
    return fl ? Value::floating(r) : Value::integer(r);
  }
  if (left.is(Kind::Array) && right.is(Kind::Array)) {
    if (op == Op::Add) {
      std::vector<Value> items = left.arr().items;
      const auto& more = right.arr().items;
      st_.step(more.size());
      items.insert(items.end(), more.begin(), more.end());
      return st_.array(std::move(items));
    }
  } else if (right.is(Kind::Array)) {
    if (op == Op::In || op == Op::NotIn) {
      bool found = false;
      for (const Value& x : right.arr().items) {
        st_.step();
        if (strict_equal(x, left)) {
          found = true;
          break;
        }
      }
      return Value::boolean(found == (op == Op::In));
    }
  }
  if ((left.is(Kind::Str) || right.is(Kind::Str)) && op == Op::Add) {
    std::string s;
    append_raw(s, left, st_);
    append_raw(s, right, st_);
    return st_.str(std::move(s));
  }
  if (left.is(Kind::Str) && right.is(Kind::Str) && (op == Op::In || op == Op::NotIn)) {
    st_.step(right.s().size() / 16);
    return Value::boolean((right.s().find(left.s()) != std::string::npos) == (op == Op::In));
  }
  if (left.is(Kind::Str) && right.is(Kind::Object) && (op == Op::In || op == Op::NotIn)) {
    Value ignored;
    return Value::boolean(right.map().get(left.s(), ignored) == (op == Op::In));
  }
  return unknown();
}

Value Interpreter::eval_member(const Node& n, Env* env) {
  Value object = eval(*n.a, env);
  Value property;
  if (n.flag) {
    if (n.b->kind == NodeKind::Slice) return eval_slice(object, *n.b, env);
    property = eval(*n.b, env);
  } else if (n.b->kind == NodeKind::Int) {
    property = Value::integer(n.b->num);
  } else {
    property = st_.str(n.b->name);
  }

  if (object.is_container()) {
    if (!property.is(Kind::Str))
      fail(std::string("a ") + type_name(object) + " is indexed with strings, not " +
           (property.is(Kind::Missing) ? "a missing value" : type_name(property)));
    Value v;
    if (object.map().get(property.s(), v) && !v.is(Kind::Missing)) return v;
    if (object.is(Kind::Object)) return dict_method(st_, object, property.s());
    return Value::undefined();
  }
  if (object.is(Kind::Array) || object.is(Kind::Str)) {
    if (property.is(Kind::Int)) {
      if (object.is(Kind::Str)) {
        auto c = js_char_at(object.s(), property.num);
        return c ? st_.str(std::move(*c)) : Value::undefined();
      }
      const auto& items = object.arr().items;
      const double len = double(items.size());
      double k = std::isnan(property.num) ? 0 : std::trunc(property.num);
      if (k < 0) k += len;
      if (k < 0 || k >= len) return Value::undefined();
      const Value& v = items[size_t(k)];
      return v.is(Kind::Missing) ? Value::undefined() : v;
    }
    if (property.is(Kind::Str)) {
      if (object.is(Kind::Str)) return str_method(st_, object, property.s());
      if (property.s() == "length") return Value::integer(double(object.arr().items.size()));
      return Value::undefined();
    }
    fail(std::string("a ") + type_name(object) + " is indexed with integers or method names, not " +
         (property.is(Kind::Missing) ? "a missing value" : type_name(property)));
  }
  if (object.is(Kind::Missing)) missing_operand();
  if (!property.is(Kind::Str))
    fail(std::string("cannot index ") + type_name(object) + " with " +
         (property.is(Kind::Missing) ? "a missing value" : type_name(property)));
  return Value::undefined();  // attributes of none, numbers, undefined...: undefined, as in the reference
}

Value Interpreter::eval_slice(const Value& object, const Node& slice, Env* env) {
  if (!object.is(Kind::Array) && !object.is(Kind::Str)) fail("only lists and strings can be sliced");
  auto part = [&](const NodePtr& p, const char* what, bool& given) {
    Value v = p ? eval(*p, env) : Value::undefined();
    given = !v.is(Kind::Undefined);
    if (!v.is(Kind::Int) && !v.is(Kind::Undefined))
      fail(std::string("the slice ") + what + " must be an integer, not " + (v.is(Kind::Missing) ? "a missing value" : type_name(v)));
    return v.num;
  };
  bool has_start, has_stop, has_step;
  double start = part(slice.a, "start", has_start);
  double stop = part(slice.b, "stop", has_stop);
  double step = part(slice.c, "step", has_step);
  if (!has_step) step = 1;

  std::vector<std::string_view> chars;
  if (object.is(Kind::Str)) chars = code_points(object.s());
  const double len = object.is(Kind::Str) ? double(chars.size()) : double(object.arr().items.size());
  // Python's slice rules as the reference computes them (in doubles: NaN and infinities included).
  const double dir = std::isnan(step) ? NAN : step > 0 ? 1 : step < 0 ? -1 : 0;
  if (dir >= 0) {
    start = !has_start ? 0 : start < 0 ? std::max(len + start, 0.0) : std::min(start, len);
    stop = !has_stop ? len : stop < 0 ? std::max(len + stop, 0.0) : std::min(stop, len);
  } else {
    start = !has_start ? len - 1 : start < 0 ? std::max(len + start, -1.0) : std::min(start, len - 1);
    stop = !has_stop ? -1 : stop < -1 ? std::max(len + stop, -1.0) : std::min(stop, len - 1);
  }
  std::vector<size_t> picks;
  if (!std::isnan(dir) && dir != 0 && !std::isnan(start) && !std::isnan(stop)) {
    for (double i = start; dir * i < dir * stop; i += step) {
      st_.step();
      picks.push_back(size_t(i));
    }
  }
  if (object.is(Kind::Str)) {
    std::string s;
    for (size_t i : picks) s.append(chars[i]);
    return st_.str(std::move(s));
  }
  std::vector<Value> items;
  items.reserve(picks.size());
  for (size_t i : picks) items.push_back(object.arr().items[i]);
  return st_.array(std::move(items));
}

std::pair<std::vector<Value>, Kwargs> Interpreter::split_args(const std::vector<NodePtr>& args, Env* env) {
  std::vector<Value> positional;
  Kwargs kw;
  for (const NodePtr& a : args) {
    if (a->kind == NodeKind::Spread) {
      Value v = eval(*a->a, env);
      if (!v.is(Kind::Array)) fail_at(a->pos, std::string("cannot unpack ") + (v.is(Kind::Missing) ? "a missing value" : type_name(v)) + " with '*'");
      st_.step(v.arr().items.size());
      positional.insert(positional.end(), v.arr().items.begin(), v.arr().items.end());
    } else if (a->kind != NodeKind::KwArg && a->kind != NodeKind::KwSpread) {
      positional.push_back(eval(*a, env));
    }
  }
  auto add = [&](const std::string& key, Value v, uint32_t pos) {
    for (auto& [k, old] : kw)
      if (k == key) fail_at(pos, "keyword argument '" + one_line(key, 60) + "' given twice");
    kw.emplace_back(key, std::move(v));
  };
  for (const NodePtr& a : args) {
    if (a->kind == NodeKind::KwArg) {
      add(a->name, eval(*a->a, env), a->pos);
    } else if (a->kind == NodeKind::KwSpread) {
      Value v = eval(*a->a, env);
      if (!v.is(Kind::Object)) fail_at(a->pos, std::string("'**' needs a dict, not ") + (v.is(Kind::Missing) ? "a missing value" : type_name(v)));
      for (auto& [k, x] : v.map().entries()) add(k, x, a->pos);
    }
  }
  return {std::move(positional), std::move(kw)};
}

namespace {

Value kwargs_value(State& st, Kwargs kw) {
  ObjectObj* o = st.object(ObjectObj::Sub::Kwargs);
  for (auto& [k, v] : kw) o->set(k, std::move(v));
  st.account(kw.size() * sizeof(std::pair<std::string, Value>));
  return Value::object(o);
}

}  // namespace

std::vector<Value> Interpreter::call_args(const std::vector<NodePtr>& args, Env* env) {
  for (const NodePtr& a : args) {
    if (a->kind == NodeKind::KwArg || a->kind == NodeKind::Spread || a->kind == NodeKind::KwSpread) {
      auto [positional, kw] = split_args(args, env);
      if (!kw.empty()) positional.push_back(kwargs_value(st_, std::move(kw)));
      return positional;
    }
  }
  std::vector<Value> out;
  out.reserve(args.size());
  for (const NodePtr& a : args) out.push_back(eval(*a, env));
  return out;
}

Value Interpreter::eval_call(const Node& n, Env* env) {
  std::vector<Value> args = call_args(n.list, env);
  Value fn = eval(*n.a, env);
  if (!fn.is(Kind::Func))
    fail_at(n.pos, std::string("cannot call ") + (fn.is(Kind::Missing) ? "a missing value" : type_name(fn)) +
                       (n.a->kind == NodeKind::Name ? " '" + one_line(n.a->name, 60) + "'" : std::string()));
  return call(fn, std::move(args), env);
}

Value Interpreter::call(const Value& fn, std::vector<Value> args, Env* call_site) {
  FuncObj& f = fn.fn();
  switch (f.kind) {
    case Fn::Macro: return call_macro(f, std::move(args), call_site);
    case Fn::Caller: return call_caller(f, std::move(args));
    case Fn::Namespace: return make_namespace(std::move(args));
    case Fn::StrMethod: return call_str_method(f.self.s(), f.method, args);
    case Fn::DictMethod: return call_dict_method(f.self, f.method, args);
    default: return call_global(f, args);
  }
}

void Interpreter::bind_params(const std::string& display, const std::vector<NodePtr>& params, uint8_t special,
                              std::vector<Value> args, Env* scope) {
  Kwargs kw;
  if (!args.empty() && args.back().is(Kind::Object) && args.back().map().sub == ObjectObj::Sub::Kwargs) {
    for (auto& e : args.back().map().entries()) kw.push_back(e);
    args.pop_back();
  }
  std::vector<const Node*> pending;
  for (size_t i = 0; i < params.size(); ++i) {
    const Node& p = *params[i];
    const Value* value = arg_at(args, i);
    Value from_kw;
    if (!value) {
      for (auto it = kw.begin(); it != kw.end(); ++it) {
        if (it->first == p.name) {
          from_kw = it->second;
          kw.erase(it);
          if (!from_kw.is(Kind::Missing)) value = &from_kw;
          break;
        }
      }
    }
    if (!value && p.kind == NodeKind::KwArg) pending.push_back(&p);
    scope->set(p.name, value ? *value : Value::undefined());
  }
  if (special & kKwargs) {
    ObjectObj* o = st_.object();
    for (auto& [k, v] : kw) o->set(k, v);
    scope->set("kwargs", Value::object(o));
  } else if (!kw.empty()) {
    fail("macro " + display + " takes no keyword argument '" + one_line(kw.front().first, 60) + "'");
  }
  if (special & kVarargs) {
    std::vector<Value> rest;
    if (args.size() > params.size()) rest.assign(args.begin() + std::ptrdiff_t(params.size()), args.end());
    scope->set("varargs", st_.array(std::move(rest)));
  } else if (args.size() > params.size()) {
    fail("macro " + display + " takes at most " + std::to_string(params.size()) + " argument(s), got " +
         std::to_string(args.size()));
  }
  for (const Node* p : pending) scope->set(p->name, eval(*p->a, scope));
}

Value Interpreter::call_macro(FuncObj& f, std::vector<Value> args, Env* call_site) {
  MacroFrame frame(*this);
  const Node& m = *f.node;
  Env* parent = f.env;
  if (m.special & kCaller) {
    Value caller = Value::undefined();
    if (call_site->call_block)
      if (Value* c = call_site->find_local("caller")) caller = *c;
    parent = st_.env(f.env);
    parent->set("caller", caller);
  }
  Env* scope = st_.env(parent);
  bind_params("'" + one_line(m.name, 60) + "'", m.list, m.special, std::move(args), scope);
  return render_value(m.list2, scope);
}

Value Interpreter::call_caller(FuncObj& f, std::vector<Value> args) {
  MacroFrame frame(*this);
  const Node& block = *f.node;
  Env* scope = st_.env(f.env);
  bind_params("None", block.list, block.special, std::move(args), scope);
  return render_value(block.list2, scope);
}

Value Interpreter::eval_call_block(const Node& n, Env* env) {
  FuncObj* caller = st_.func(Fn::Caller);
  caller->node = &n;
  caller->env = env;
  const Node& call_node = *n.a;
  auto [args, kw] = split_args(call_node.list, env);
  args.push_back(kwargs_value(st_, std::move(kw)));
  Value fn = eval(*call_node.a, env);
  if (!fn.is(Kind::Func))
    fail_at(call_node.pos, std::string("cannot call ") + (fn.is(Kind::Missing) ? "a missing value" : type_name(fn)));
  Env* site = st_.env(env);
  site->call_block = true;
  site->set("caller", Value::func(caller));
  return call(fn, std::move(args), site);
}

Value Interpreter::eval_test(const Node& n, Env* env) {
  Value operand = eval(*n.a, env);
  if (!has_test(n.name)) fail("unknown test '" + one_line(n.name, 60) + "'");
  const bool r = run_test(n.name, operand, nullptr);
  return Value::boolean(n.flag ? !r : r);
}

}  // namespace ac::jinja
