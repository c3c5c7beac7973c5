#pragma once
// Builds the syntax tree from tokens with the reference parser's grammar and precedence (which
// differ from Python Jinja in places: `is` binds tighter than `*`, `**` is left-associative,
// comparisons do not chain). Throws TemplateError with a position.
#include <string_view>
#include <vector>

#include "jinja/ast.h"
#include "jinja/lexer.h"

namespace ac::jinja {

// `max_depth` bounds both the parser's recursion and the height of the tree.
std::vector<NodePtr> parse(const std::vector<Token>& tokens, int max_depth);

// Which of caller, kwargs and varargs a macro (or call block) body reads before it defines them
// itself: only those are bound when it is called (Special bits).
uint8_t special_names_read(const std::vector<NodePtr>& params, const std::vector<NodePtr>& body);

// Whether any node under `a` or `b` is the name `name` (a for loop makes its `loop` variable
// only when its body or else branch can read it).
bool mentions_name(const std::vector<NodePtr>& a, const std::vector<NodePtr>& b, std::string_view name);

}  // namespace ac::jinja
