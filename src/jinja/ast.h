#pragma once
// The syntax tree. One node type for statements and expressions (as in the reference, any
// expression may stand where a statement does); what each field holds depends on `kind`,
// listed below. Children are owned; the tree's height is bounded when it is built.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ac::jinja {

enum class NodeKind : uint8_t {
  // statements
  Text,         // str
  Comment,      //
  If,           // a: test, list: body, list2: else branch (an If for elif)
  For,          // a: loop variable (Name or Tuple), b: iterable (a Select filters), list: body, list2: else
  Set,          // a: target, b: value or null, list: block body when b is null
  Macro,        // name, list: parameters (Name or KwArg), list2: body, special
  CallBlock,    // a: the Call, list: caller parameters, list2: body, special, flag: caller parameters given
  FilterBlock,  // a: the filter (Name or Call), list: body
  Break,
  Continue,
  // expressions
  Int,        // num
  Float,      // num
  Str,        // str
  Name,       // name
  List,       // list
  Tuple,      // list
  Dict,       // pairs
  Binary,     // op, a, b
  Unary,      // op, a
  Member,     // a: object, b: property, flag: computed (a[b] rather than a.b)
  Call,       // a: callee, list: arguments
  Filter,     // a: operand, b: filter (Name or Call)
  Test,       // a: operand, name: test, flag: negated
  Select,     // a: value, b: condition ("a if b" without else)
  Ternary,    // a: condition, b: value if true, c: value if false
  Slice,      // a, b, c: start, stop, step (each may be null)
  KwArg,      // name, a: value
  Spread,     // a  (*a in a call)
  KwSpread,   // a  (**a in a call)
};

enum class Op : uint8_t {
  None, And, Or, Not, Eq, Ne, Lt, Gt, Le, Ge, In, NotIn, Add, Sub, Concat, Mul, Div, FloorDiv, Mod, Pow, Neg, Pos,
};

// Which of a macro's special names its body reads before defining them.
enum Special : uint8_t { kCaller = 1, kKwargs = 2, kVarargs = 4 };

struct Node;
using NodePtr = std::unique_ptr<Node>;

struct Node {
  NodeKind kind;
  Op op = Op::None;
  bool flag = false;
  uint8_t special = 0;
  uint32_t pos = 0;     // offset in the original source
  uint32_t height = 1;  // of this subtree
  double num = 0;
  std::string name;
  std::shared_ptr<const std::string> str;  // text and string literals, shared with the values made of them
  NodePtr a, b, c;
  std::vector<NodePtr> list, list2;
  std::vector<std::pair<NodePtr, NodePtr>> pairs;
};

const char* node_kind_name(NodeKind k);

}  // namespace ac::jinja
