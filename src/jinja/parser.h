#pragma once
// Builds the syntax tree from tokens with the reference parser's grammar and precedence (which
// differ from Python Jinja in places: `is` binds tighter than `*`, `**` is left-associative,
// comparisons do not chain). Throws TemplateError with a position.
#include <vector>

#include "jinja/ast.h"
#include "jinja/lexer.h"

namespace ac::jinja {

// `max_depth` bounds both the parser's recursion and the height of the tree.
std::vector<NodePtr> parse(const std::vector<Token>& tokens, int max_depth);

// Which of caller, kwargs and varargs a macro (or call block) body reads before it defines them
// itself: only those are bound when it is called (Special bits).
uint8_t special_names_read(const std::vector<NodePtr>& params, const std::vector<NodePtr>& body);

}  // namespace ac::jinja
