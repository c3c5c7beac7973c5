#include "jinja/parser.h"

#include <algorithm>
#include <cstdlib>
#include <initializer_list>
#include <set>
#include <string_view>

#include "jinja/error.h"
#include "jinja/unicode.h"

namespace ac::jinja {

namespace {

const char* tok_name(Tok t) {
  switch (t) {
    case Tok::Text: return "text";
    case Tok::Number: return "a number";
    case Tok::String: return "a string";
    case Tok::Name: return "a name";
    case Tok::Equals: return "'='";
    case Tok::OpenParen: return "'('";
    case Tok::CloseParen: return "')'";
    case Tok::OpenStatement: return "'{%'";
    case Tok::CloseStatement: return "'%}'";
    case Tok::OpenExpression: return "'{{'";
    case Tok::CloseExpression: return "'}}'";
    case Tok::OpenBracket: return "'['";
    case Tok::CloseBracket: return "']'";
    case Tok::OpenBrace: return "'{'";
    case Tok::CloseBrace: return "'}'";
    case Tok::Comma: return "','";
    case Tok::Dot: return "'.'";
    case Tok::Colon: return "':'";
    case Tok::Pipe: return "'|'";
    case Tok::Additive: case Tok::Multiplicative: case Tok::Power: case Tok::Comparison: case Tok::Unary:
      return "an operator";
    case Tok::Comment: return "a comment";
    case Tok::End: return "the end of the template";
  }
  return "?";
}

Op binary_op(std::string_view v) {
  static const std::pair<std::string_view, Op> ops[] = {
      {"and", Op::And}, {"or", Op::Or}, {"==", Op::Eq}, {"!=", Op::Ne}, {"<", Op::Lt}, {"<=", Op::Le},
      {">", Op::Gt}, {">=", Op::Ge}, {"in", Op::In}, {"+", Op::Add}, {"-", Op::Sub}, {"~", Op::Concat},
      {"*", Op::Mul}, {"/", Op::Div}, {"//", Op::FloorDiv}, {"%", Op::Mod}, {"**", Op::Pow},
  };
  for (auto& [s, op] : ops)
    if (s == v) return op;
  return Op::None;
}

class Parser {
 public:
  Parser(const std::vector<Token>& t, int max_depth) : t_(t), max_depth_(max_depth) {}

  std::vector<NodePtr> program() {
    std::vector<NodePtr> body;
    while (t_[cur_].type != Tok::End) body.push_back(any());
    return body;
  }

 private:
  // ---- helpers
  const Token& tok() const { return t_[cur_]; }
  const Token& peek(size_t k) const { return t_[std::min(cur_ + k, t_.size() - 1)]; }
  [[noreturn]] void error(std::string what) const { fail_at(tok().pos, std::move(what)); }
  [[noreturn]] void unexpected(std::string_view wanted) const {
    std::string got = tok_name(tok().type);
    if (tok().type == Tok::Name || tok().type == Tok::Additive || tok().type == Tok::Multiplicative ||
        tok().type == Tok::Power || tok().type == Tok::Comparison || tok().type == Tok::Unary)
      got = "'" + one_line(tok().value, 40) + "'";
    error("expected " + std::string(wanted) + ", got " + got);
  }

  bool is(Tok t) const { return tok().type == t; }
  bool is_name(std::string_view n) const { return tok().type == Tok::Name && tok().value == n; }
  bool is_names(std::string_view a, std::string_view b) const {
    return is_name(a) && peek(1).type == Tok::Name && peek(1).value == b;
  }
  bool is_statement(std::initializer_list<std::string_view> names) const {
    if (tok().type != Tok::OpenStatement || peek(1).type != Tok::Name) return false;
    return std::find(names.begin(), names.end(), peek(1).value) != names.end();
  }
  const Token& expect(Tok t, std::string_view what) {
    if (tok().type != t) unexpected(what);
    return t_[cur_++];
  }
  void expect_name(std::string_view n) {
    if (!is_name(n)) unexpected("'" + std::string(n) + "'");
    ++cur_;
  }
  void expect_end_tag(std::string_view n) {
    expect(Tok::OpenStatement, "'{% " + std::string(n) + " %}'");
    expect_name(n);
    expect(Tok::CloseStatement, "'%}'");
  }

  struct Nest {
    Parser& p;
    explicit Nest(Parser& parser) : p(parser) {
      if (++p.depth_ > p.max_depth_)
        p.error("template nested too deeply (more than " + std::to_string(p.max_depth_) + " levels)");
    }
    ~Nest() { --p.depth_; }
  };

  NodePtr make(NodeKind k, uint32_t pos) {
    auto n = std::make_unique<Node>();
    n->kind = k;
    n->pos = pos;
    return n;
  }
  // Records the subtree's height once its children are in place.
  NodePtr done(NodePtr n) {
    uint32_t h = 0;
    auto see = [&](const NodePtr& c) {
      if (c) h = std::max(h, c->height);
    };
    see(n->a), see(n->b), see(n->c);
    for (auto& c : n->list) see(c);
    for (auto& c : n->list2) see(c);
    for (auto& [k, v] : n->pairs) see(k), see(v);
    n->height = h + 1;
    if (n->height > uint32_t(max_depth_))
      fail_at(n->pos, "template nested too deeply (more than " + std::to_string(max_depth_) + " levels)");
    return n;
  }
  NodePtr binary(Op op, uint32_t pos, NodePtr l, NodePtr r) {
    auto n = make(NodeKind::Binary, pos);
    n->op = op;
    n->a = std::move(l);
    n->b = std::move(r);
    return done(std::move(n));
  }

  // ---- statements
  NodePtr any() {
    switch (tok().type) {
      case Tok::Comment: {
        auto n = make(NodeKind::Comment, tok().pos);
        ++cur_;
        return done(std::move(n));
      }
      case Tok::Text: {
        auto n = make(NodeKind::Text, tok().pos);
        n->str = std::make_shared<const std::string>(tok().value);
        ++cur_;
        return done(std::move(n));
      }
      case Tok::OpenStatement: return statement();
      case Tok::OpenExpression: {
        ++cur_;
        NodePtr e = expression();
        expect(Tok::CloseExpression, "'}}'");
        return e;
      }
      default: unexpected("text, '{{' or '{%'");
    }
  }

  std::vector<NodePtr> body_until(std::initializer_list<std::string_view> ends) {
    std::vector<NodePtr> body;
    while (!is_statement(ends)) body.push_back(any());
    return body;
  }

  NodePtr statement() {
    Nest nest(*this);
    const uint32_t pos = tok().pos;
    ++cur_;  // {%
    if (!is(Tok::Name)) unexpected("a statement name");
    const std::string name = tok().value;
    ++cur_;
    if (name == "set") return set_statement(pos);
    if (name == "if") {
      NodePtr n = if_statement(pos);
      expect_end_tag("endif");
      return n;
    }
    if (name == "macro") {
      auto n = make(NodeKind::Macro, pos);
      NodePtr id = primary();
      if (id->kind != NodeKind::Name) fail_at(id->pos, "expected a macro name");
      n->name = id->name;
      n->list = arguments(true);
      expect(Tok::CloseStatement, "'%}'");
      n->list2 = body_until({"endmacro"});
      expect_end_tag("endmacro");
      n->special = special_names_read(n->list, n->list2);
      return done(std::move(n));
    }
    if (name == "for") {
      NodePtr n = for_statement(pos);
      expect_end_tag("endfor");
      return n;
    }
    if (name == "call") {
      auto n = make(NodeKind::CallBlock, pos);
      if (is(Tok::OpenParen)) {
        n->list = arguments(true);
        n->flag = true;
      }
      NodePtr callee = primary();
      if (callee->kind != NodeKind::Name) fail_at(callee->pos, "expected a macro name after 'call'");
      auto call = make(NodeKind::Call, tok().pos);
      call->a = std::move(callee);
      call->list = arguments(false);
      n->a = done(std::move(call));
      expect(Tok::CloseStatement, "'%}'");
      n->list2 = body_until({"endcall"});
      expect_end_tag("endcall");
      n->special = special_names_read(n->list, n->list2);
      return done(std::move(n));
    }
    if (name == "break" || name == "continue") {
      expect(Tok::CloseStatement, "'%}'");
      return done(make(name == "break" ? NodeKind::Break : NodeKind::Continue, pos));
    }
    if (name == "filter") {
      auto n = make(NodeKind::FilterBlock, pos);
      NodePtr f = primary();
      if (f->kind == NodeKind::Name && is(Tok::OpenParen)) f = call_expression(std::move(f));
      n->a = std::move(f);
      expect(Tok::CloseStatement, "'%}'");
      n->list = body_until({"endfilter"});
      expect_end_tag("endfilter");
      return done(std::move(n));
    }
    fail_at(pos, "unknown statement '" + one_line(name, 40) + "'");
  }

  NodePtr set_statement(uint32_t pos) {
    auto n = make(NodeKind::Set, pos);
    n->a = expression_sequence(false);
    if (is(Tok::Equals)) {
      ++cur_;
      n->b = expression_sequence(false);
    } else {
      expect(Tok::CloseStatement, "'=' or '%}'");
      n->list = body_until({"endset"});
      expect(Tok::OpenStatement, "'{% endset %}'");
      expect_name("endset");
    }
    expect(Tok::CloseStatement, "'%}'");
    return done(std::move(n));
  }

  NodePtr if_statement(uint32_t pos) {
    Nest nest(*this);
    auto n = make(NodeKind::If, pos);
    n->a = expression();
    expect(Tok::CloseStatement, "'%}'");
    n->list = body_until({"elif", "else", "endif"});
    if (is_statement({"elif"})) {
      uint32_t elif_pos = tok().pos;
      cur_ += 2;
      n->list2.push_back(if_statement(elif_pos));
    } else if (is_statement({"else"})) {
      cur_ += 2;
      expect(Tok::CloseStatement, "'%}'");
      n->list2 = body_until({"endif"});
    }
    return done(std::move(n));
  }

  NodePtr for_statement(uint32_t pos) {
    auto n = make(NodeKind::For, pos);
    n->a = expression_sequence(true);
    if (n->a->kind != NodeKind::Name && n->a->kind != NodeKind::Tuple)
      fail_at(n->a->pos, "expected a name or a tuple of names as the loop variable");
    if (!is_name("in")) unexpected("'in'");
    ++cur_;
    n->b = expression();
    expect(Tok::CloseStatement, "'%}'");
    n->list = body_until({"endfor", "else"});
    if (is_statement({"else"})) {
      cur_ += 2;
      expect(Tok::CloseStatement, "'%}'");
      n->list2 = body_until({"endfor"});
    }
    return done(std::move(n));
  }

  // ---- expressions, lowest precedence first
  NodePtr expression() { return if_expression(); }

  NodePtr expression_sequence(bool primary_only) {
    const uint32_t pos = tok().pos;
    auto next = [&] { return primary_only ? primary() : expression(); };
    NodePtr first = next();
    if (!is(Tok::Comma)) return first;
    auto n = make(NodeKind::Tuple, pos);
    n->list.push_back(std::move(first));
    while (true) {
      ++cur_;
      n->list.push_back(next());
      if (!is(Tok::Comma)) break;
    }
    return done(std::move(n));
  }

  NodePtr if_expression() {
    Nest nest(*this);
    NodePtr a = or_expression();
    if (!is_name("if")) return a;
    const uint32_t pos = tok().pos;
    ++cur_;
    NodePtr test = or_expression();
    if (is_name("else")) {
      ++cur_;
      auto n = make(NodeKind::Ternary, pos);
      n->a = std::move(test);
      n->b = std::move(a);
      n->c = if_expression();
      return done(std::move(n));
    }
    auto n = make(NodeKind::Select, pos);
    n->a = std::move(a);
    n->b = std::move(test);
    return done(std::move(n));
  }

  NodePtr or_expression() {
    NodePtr left = and_expression();
    while (is_name("or")) {
      uint32_t pos = tok().pos;
      ++cur_;
      left = binary(Op::Or, pos, std::move(left), and_expression());
    }
    return left;
  }

  NodePtr and_expression() {
    NodePtr left = not_expression();
    while (is_name("and")) {
      uint32_t pos = tok().pos;
      ++cur_;
      left = binary(Op::And, pos, std::move(left), not_expression());
    }
    return left;
  }

  NodePtr not_expression() {
    Nest nest(*this);
    NodePtr result;
    // As in the reference, a second "not" after a complete operand starts over ("not a not b" is "not b").
    while (is_name("not")) {
      auto n = make(NodeKind::Unary, tok().pos);
      n->op = Op::Not;
      ++cur_;
      n->a = not_expression();
      result = done(std::move(n));
    }
    return result ? std::move(result) : comparison();
  }

  NodePtr comparison() {
    NodePtr left = additive();
    while (true) {
      const uint32_t pos = tok().pos;
      Op op;
      if (is_names("not", "in")) {
        op = Op::NotIn;
        cur_ += 2;
      } else if (is_name("in")) {
        op = Op::In;
        ++cur_;
      } else if (is(Tok::Comparison)) {
        op = binary_op(tok().value);
        ++cur_;
      } else {
        break;
      }
      left = binary(op, pos, std::move(left), additive());
    }
    return left;
  }

  NodePtr additive() {
    NodePtr left = multiplicative();
    while (is(Tok::Additive)) {
      const Token& t = t_[cur_++];
      left = binary(binary_op(t.value), t.pos, std::move(left), multiplicative());
    }
    return left;
  }

  NodePtr multiplicative() {
    NodePtr left = power();
    while (is(Tok::Multiplicative)) {
      const Token& t = t_[cur_++];
      left = binary(binary_op(t.value), t.pos, std::move(left), power());
    }
    return left;
  }

  NodePtr power() {
    NodePtr left = test_expression();
    while (is(Tok::Power)) {
      const Token& t = t_[cur_++];
      left = binary(Op::Pow, t.pos, std::move(left), test_expression());
    }
    return left;
  }

  NodePtr test_expression() {
    NodePtr operand = filter_expression();
    while (is_name("is")) {
      const uint32_t pos = tok().pos;
      ++cur_;
      bool negate = is_name("not");
      if (negate) ++cur_;
      NodePtr test = primary();
      if (test->kind != NodeKind::Name) fail_at(test->pos, "expected the name of a test after 'is'");
      auto n = make(NodeKind::Test, pos);
      n->a = std::move(operand);
      n->name = test->name;
      n->flag = negate;
      operand = done(std::move(n));
    }
    return operand;
  }

  NodePtr filter_expression() {
    NodePtr operand = unary_sign();
    while (is(Tok::Pipe)) {
      const uint32_t pos = tok().pos;
      ++cur_;
      NodePtr filter = primary();
      if (filter->kind != NodeKind::Name) fail_at(filter->pos, "expected the name of a filter after '|'");
      if (is(Tok::OpenParen)) filter = call_expression(std::move(filter));
      auto n = make(NodeKind::Filter, pos);
      n->a = std::move(operand);
      n->b = std::move(filter);
      operand = done(std::move(n));
    }
    return operand;
  }

  NodePtr unary_sign() {
    if ((is(Tok::Unary) || is(Tok::Additive)) && (tok().value == "-" || tok().value == "+")) {
      Nest nest(*this);
      auto n = make(NodeKind::Unary, tok().pos);
      n->op = tok().value == "-" ? Op::Neg : Op::Pos;
      ++cur_;
      n->a = unary_sign();
      return done(std::move(n));
    }
    NodePtr member = member_expression(primary());
    if (is(Tok::OpenParen)) return call_expression(std::move(member));
    return member;
  }

  NodePtr call_expression(NodePtr callee) {
    Nest nest(*this);
    auto n = make(NodeKind::Call, tok().pos);
    n->a = std::move(callee);
    n->list = arguments(false);
    NodePtr e = member_expression(done(std::move(n)));
    if (is(Tok::OpenParen)) e = call_expression(std::move(e));
    return e;
  }

  // A call's arguments, or (parameters) a macro's parameter list with defaults.
  std::vector<NodePtr> arguments(bool parameters) {
    expect(Tok::OpenParen, "'('");
    std::vector<NodePtr> args;
    std::set<std::string> names;
    bool saw_keyword = false, saw_spread = false;
    while (!is(Tok::CloseParen)) {
      const uint32_t pos = tok().pos;
      const bool kw_spread = is(Tok::Power);
      const bool spread = is(Tok::Multiplicative) && tok().value == "*";
      if (parameters && (kw_spread || spread)) error("argument unpacking is not allowed in a parameter list");
      if (kw_spread) {
        ++cur_;
        auto n = make(NodeKind::KwSpread, pos);
        n->a = expression();
        args.push_back(done(std::move(n)));
        if (is(Tok::Comma)) ++cur_;
        if (!is(Tok::CloseParen)) error("'**' must be applied to the last argument");
        break;
      }
      NodePtr arg;
      if (spread) {
        if (saw_spread) error("only one '*' argument unpacking is allowed");
        saw_spread = true;
        ++cur_;
        auto n = make(NodeKind::Spread, pos);
        n->a = expression();
        arg = done(std::move(n));
      } else {
        arg = expression();
        if (is(Tok::Equals)) {
          ++cur_;
          if (arg->kind != NodeKind::Name)
            fail_at(arg->pos, parameters ? "expected a parameter name before '='" : "expected a keyword name before '='");
          auto kw = make(NodeKind::KwArg, arg->pos);
          kw->name = arg->name;
          kw->a = expression();
          arg = done(std::move(kw));
        }
        if (parameters) {
          if (arg->kind != NodeKind::Name && arg->kind != NodeKind::KwArg) fail_at(arg->pos, "expected a parameter name");
          if (!names.insert(arg->name).second) fail_at(arg->pos, "duplicate parameter '" + one_line(arg->name, 40) + "'");
        }
        if (arg->kind == NodeKind::KwArg) {
          saw_keyword = true;
        } else if (saw_keyword) {
          fail_at(arg->pos, parameters ? "a parameter without a default follows one with a default"
                                       : "a positional argument follows a keyword argument");
        } else if (saw_spread) {
          fail_at(arg->pos, "a positional argument follows '*' unpacking");
        }
      }
      args.push_back(std::move(arg));
      if (is(Tok::Comma)) ++cur_;
    }
    expect(Tok::CloseParen, "')'");
    return args;
  }

  // What stands between [ and ]: an index, or a slice with up to three parts.
  NodePtr subscript(uint32_t pos) {
    std::vector<NodePtr> parts;
    bool slice = false;
    while (!is(Tok::CloseBracket)) {
      if (is(Tok::Colon)) {
        parts.push_back(nullptr);
        ++cur_;
        slice = true;
      } else {
        parts.push_back(expression());
        if (is(Tok::Colon)) {
          ++cur_;
          slice = true;
        }
      }
    }
    if (parts.empty()) error("expected an index or a slice between '[' and ']'");
    if (!slice) return std::move(parts[0]);
    if (parts.size() > 3) fail_at(pos, "a slice has at most three parts");
    auto n = make(NodeKind::Slice, pos);
    n->a = std::move(parts[0]);
    if (parts.size() > 1) n->b = std::move(parts[1]);
    if (parts.size() > 2) n->c = std::move(parts[2]);
    return done(std::move(n));
  }

  NodePtr member_expression(NodePtr object) {
    while (is(Tok::Dot) || is(Tok::OpenBracket)) {
      const bool computed = is(Tok::OpenBracket);
      const uint32_t pos = tok().pos;
      ++cur_;
      NodePtr property;
      if (computed) {
        property = subscript(pos);
        expect(Tok::CloseBracket, "']'");
      } else {
        property = primary();
        if (property->kind != NodeKind::Name && property->kind != NodeKind::Int)
          fail_at(property->pos, "expected a name or an integer after '.'");
      }
      auto n = make(NodeKind::Member, pos);
      n->a = std::move(object);
      n->b = std::move(property);
      n->flag = computed;
      object = done(std::move(n));
    }
    return object;
  }

  NodePtr primary() {
    const Token& t = tok();
    const uint32_t pos = t.pos;
    ++cur_;
    switch (t.type) {
      case Tok::Number: {
        bool is_float = t.value.find('.') != std::string::npos;
        auto n = make(is_float ? NodeKind::Float : NodeKind::Int, pos);
        n->num = std::strtod(t.value.c_str(), nullptr);
        return done(std::move(n));
      }
      case Tok::String: {
        std::string v = t.value;
        while (is(Tok::String)) v += t_[cur_++].value;
        auto n = make(NodeKind::Str, pos);
        n->str = std::make_shared<const std::string>(std::move(v));
        return done(std::move(n));
      }
      case Tok::Name: {
        auto n = make(NodeKind::Name, pos);
        n->name = t.value;
        return done(std::move(n));
      }
      case Tok::OpenParen: {
        NodePtr e = expression_sequence(false);
        expect(Tok::CloseParen, "')'");
        return e;
      }
      case Tok::OpenBracket: {
        auto n = make(NodeKind::List, pos);
        while (!is(Tok::CloseBracket)) {
          n->list.push_back(expression());
          if (is(Tok::Comma)) ++cur_;
        }
        ++cur_;
        return done(std::move(n));
      }
      case Tok::OpenBrace: {
        auto n = make(NodeKind::Dict, pos);
        while (!is(Tok::CloseBrace)) {
          NodePtr key = expression();
          expect(Tok::Colon, "':' between a key and its value");
          NodePtr value = expression();
          n->pairs.emplace_back(std::move(key), std::move(value));
          if (is(Tok::Comma)) ++cur_;
        }
        ++cur_;
        return done(std::move(n));
      }
      default:
        --cur_;
        unexpected("an expression");
    }
  }

  const std::vector<Token>& t_;
  size_t cur_ = 0;
  int depth_ = 0;
  int max_depth_;
};

}  // namespace

std::vector<NodePtr> parse(const std::vector<Token>& tokens, int max_depth) {
  return Parser(tokens, max_depth).program();
}

}  // namespace ac::jinja
