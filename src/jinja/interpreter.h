#pragma once
// Evaluates a parsed template against its variables. Statements render into an output string;
// expressions give values. Filters (filters.cpp), tests (tests.cpp) and the builtin functions
// and methods (builtins.cpp) are members too, since they evaluate their own arguments.
#include <string>
#include <utility>
#include <vector>

#include "jinja/ast.h"
#include "jinja/value.h"

namespace ac::jinja {

// {% break %} / {% continue %} on its way out of an expression (a macro body, a set block) to
// the nearest loop; inside plain statements it travels as a Flow value instead.
struct LoopSignal {
  bool is_break;
  uint32_t pos;
};

enum class Flow { Normal, Break, Continue };

using Kwargs = std::vector<std::pair<std::string, Value>>;

class Interpreter {
 public:
  explicit Interpreter(State& st) : st_(st) {}

  // Renders the program in `globals`; throws TemplateError.
  std::string run(const std::vector<NodePtr>& program, Env* globals);

  State& state() { return st_; }

  Value eval(const Node& n, Env* env);
  Flow render(const std::vector<NodePtr>& body, Env* env, std::string& out);
  // A block rendered as a string value; break/continue inside it leave as a LoopSignal.
  Value render_value(const std::vector<NodePtr>& body, Env* env);

  // A call's arguments as functions receive them: the positional values, then one keyword
  // arguments dict if there are keyword arguments.
  std::vector<Value> call_args(const std::vector<NodePtr>& args, Env* env);
  // Positional values (with *spreads) and keyword arguments (with **spreads) apart.
  std::pair<std::vector<Value>, Kwargs> split_args(const std::vector<NodePtr>& args, Env* env);
  Value call(const Value& fn, std::vector<Value> args, Env* call_site);

  Value apply_filter(Value operand, const Node& filter, Env* env);
  static bool has_test(std::string_view name);
  // `arg`: the second operand some tests take (selectattr's value); null when not given.
  bool run_test(std::string_view name, const Value& operand, const Value* arg);

 private:
  struct Nesting {
    Interpreter& in;
    explicit Nesting(Interpreter& i);
    ~Nesting() { --in.depth_; }
  };
  struct MacroFrame {
    Interpreter& in;
    explicit MacroFrame(Interpreter& i);
    ~MacroFrame() { --in.macro_depth_; }
  };

  void append(std::string& out, std::string_view s);
  Value lookup(std::string_view name, Env* env);
  Value eval_binary(const Node& n, Env* env);
  Value eval_unary(const Node& n, Env* env);
  Value eval_member(const Node& n, Env* env);
  Value eval_slice(const Value& object, const Node& slice, Env* env);
  Value eval_call(const Node& n, Env* env);
  Value eval_call_block(const Node& n, Env* env);
  Value eval_test(const Node& n, Env* env);
  Flow render_for(const Node& n, Env* env, std::string& out);
  void exec_set(const Node& n, Env* env);
  void define_macro(const Node& n, Env* env);
  void bind_loop_var(const Node& target, const Value& item, Env* scope);
  void bind_params(const std::string& display, const std::vector<NodePtr>& params, uint8_t special,
                   std::vector<Value> args, Env* scope);
  Value call_macro(FuncObj& f, std::vector<Value> args, Env* call_site);
  Value call_caller(FuncObj& f, std::vector<Value> args);

  // builtins.cpp
  Value call_global(FuncObj& f, std::vector<Value>& args);
  Value call_str_method(const std::string& s, const std::string& name, std::vector<Value>& args);
  Value call_dict_method(const Value& self, const std::string& name, std::vector<Value>& args);
  Value make_namespace(std::vector<Value> args);

  // filters.cpp
  Value filter_plain(const Value& operand, const std::string& name);
  Value filter_call(const Value& operand, const std::string& name, const Node& call, Env* env);
  Value select_attr(const Value& operand, bool select, const Node& call, Env* env);
  Value map_filter(const Value& operand, const Node& call, Env* env);
  Value sort_filter(const Value& operand, const Node& call, Env* env);
  Value tojson_filter(const Value& operand, const Node& call, Env* env);

  State& st_;
  int depth_ = 0;
  int macro_depth_ = 0;
  uint32_t loop_pos_ = 0;  // where the last break/continue was
};

// Helpers the filters and builtins share.
// args[i] unless it is absent (or the raw JavaScript undefined, which the reference treats alike).
const Value* arg_at(const std::vector<Value>& args, size_t i);
const Value* kwarg(const Kwargs& kw, std::string_view name);
// The value at a dotted path ("function.name", "items.0") in dicts, namespaces and lists.
Value attribute_path(const Value& item, const std::string& path);
// The builtin method `name` of a string or dict, or undefined.
Value str_method(State& st, const Value& self, const std::string& name);
Value dict_method(State& st, const Value& self, const std::string& name);
// String.prototype.replace with a count, as the reference's replace() does it.
std::string replace_text(std::string_view s, std::string_view from, std::string_view to, double count, State& st);

}  // namespace ac::jinja
