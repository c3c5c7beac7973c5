// Which special names (caller, kwargs, varargs) a macro body reads before defining them. Only
// those are bound when the macro runs; a macro that does not read `kwargs` rejects unknown
// keyword arguments, and `caller` is seen only by macros that read it. The walk follows the
// order in which Python Jinja visits the tree (a for loop's condition after its body, a
// filter's arguments after the filtered block), since a definition counts only if it comes first.
#include <string_view>

#include "jinja/parser.h"

namespace ac::jinja {

namespace {

uint8_t special_bit(std::string_view name) {
  if (name == "caller") return kCaller;
  if (name == "kwargs") return kKwargs;
  if (name == "varargs") return kVarargs;
  return 0;
}

struct Walk {
  uint8_t declared = 0, read = 0;

  void declare(std::string_view name) { declared |= special_bit(name); }
  void declare_target(const Node* n) {
    if (!n) return;
    if (n->kind == NodeKind::Name) declare(n->name);
    if (n->kind == NodeKind::Tuple)
      for (auto& c : n->list) declare_target(c.get());
  }
  void declare_params(const std::vector<NodePtr>& params) {
    for (auto& p : params) declare(p->name);
  }
  void visit_defaults(const std::vector<NodePtr>& params) {
    for (auto& p : params)
      if (p->kind == NodeKind::KwArg) visit(p->a.get());
  }
  void visit_filter(const Node* f) {
    if (f && f->kind == NodeKind::Call) visit(f->list);
  }
  void visit(const std::vector<NodePtr>& nodes) {
    for (auto& n : nodes) visit(n.get());
  }

  void visit(const Node* n) {
    if (!n) return;
    switch (n->kind) {
      case NodeKind::For:
        declare_target(n->a.get());
        if (n->b && n->b->kind == NodeKind::Select) {
          visit(n->b->a.get());
          visit(n->list);
          visit(n->list2);
          visit(n->b->b.get());
        } else {
          visit(n->b.get());
          visit(n->list);
          visit(n->list2);
        }
        return;
      case NodeKind::Set:
        declare_target(n->a.get());
        visit(n->b.get());
        visit(n->list);
        return;
      case NodeKind::Macro:
        declare_params(n->list);
        visit_defaults(n->list);
        visit(n->list2);
        return;
      case NodeKind::CallBlock:
        visit(n->a.get());
        declare_params(n->list);
        visit_defaults(n->list);
        visit(n->list2);
        return;
      case NodeKind::FilterBlock:
        visit(n->list);
        visit_filter(n->a.get());
        return;
      case NodeKind::Name: {
        uint8_t bit = special_bit(n->name);
        if (bit && !(declared & bit)) read |= bit;
        return;
      }
      case NodeKind::Member:
        visit(n->a.get());
        if (n->flag) visit(n->b.get());
        return;
      case NodeKind::Filter:
        visit(n->a.get());
        visit_filter(n->b.get());
        return;
      case NodeKind::Test:
        visit(n->a.get());
        return;
      case NodeKind::Select:
        visit(n->b.get());
        visit(n->a.get());
        return;
      case NodeKind::KwArg:
        visit(n->a.get());
        return;
      default:
        // Every other node: its children in the order the reference declares them.
        visit(n->a.get());
        visit(n->b.get());
        visit(n->c.get());
        visit(n->list);
        visit(n->list2);
        for (auto& [k, v] : n->pairs) {
          visit(k.get());
          visit(v.get());
        }
    }
  }
};

}  // namespace

uint8_t special_names_read(const std::vector<NodePtr>& params, const std::vector<NodePtr>& body) {
  Walk w;
  w.declare_params(params);
  w.visit(body);
  return w.read;
}

}  // namespace ac::jinja
