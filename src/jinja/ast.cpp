#include "jinja/ast.h"

namespace ac::jinja {

const char* node_kind_name(NodeKind k) {
  switch (k) {
    case NodeKind::Text: return "text";
    case NodeKind::Comment: return "comment";
    case NodeKind::If: return "if statement";
    case NodeKind::For: return "for statement";
    case NodeKind::Set: return "set statement";
    case NodeKind::Macro: return "macro";
    case NodeKind::CallBlock: return "call block";
    case NodeKind::FilterBlock: return "filter block";
    case NodeKind::Break: return "break";
    case NodeKind::Continue: return "continue";
    case NodeKind::Int: return "integer";
    case NodeKind::Float: return "float";
    case NodeKind::Str: return "string";
    case NodeKind::Name: return "name";
    case NodeKind::List: return "list";
    case NodeKind::Tuple: return "tuple";
    case NodeKind::Dict: return "dict";
    case NodeKind::Binary: return "binary operation";
    case NodeKind::Unary: return "unary operation";
    case NodeKind::Member: return "attribute or index";
    case NodeKind::Call: return "call";
    case NodeKind::Filter: return "filter";
    case NodeKind::Test: return "test";
    case NodeKind::Select: return "conditional expression";
    case NodeKind::Ternary: return "conditional expression";
    case NodeKind::Slice: return "slice";
    case NodeKind::KwArg: return "keyword argument";
    case NodeKind::Spread: return "'*' argument";
    case NodeKind::KwSpread: return "'**' argument";
  }
  return "node";
}

}  // namespace ac::jinja
