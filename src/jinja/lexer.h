#pragma once
// Splits preprocessed template text into tokens the way the reference lexer does: text outside
// tags, then inside {{ }} and {% %} numbers, strings, names and operators; comments and the
// whitespace-control dashes are resolved here. A unary sign directly before digits becomes part
// of the number ("-1"), as in the reference.
#include <cstdint>
#include <string>
#include <vector>

#include "jinja/preprocess.h"

namespace ac::jinja {

enum class Tok : uint8_t {
  Text, Number, String, Name, Equals, OpenParen, CloseParen, OpenStatement, CloseStatement, OpenExpression,
  CloseExpression, OpenBracket, CloseBracket, OpenBrace, CloseBrace, Comma, Dot, Colon, Pipe,
  Additive,        // + - ~
  Multiplicative,  // * / // %
  Power,           // **
  Comparison,      // < > <= >= == !=
  Unary,           // a lone - or + in operand position
  Comment, End,    // End: after the last token
};

struct Token {
  Tok type;
  std::string value;
  uint32_t pos;  // offset in the original source
};

// Throws TemplateError with a position.
std::vector<Token> tokenize(const SourceText& src);

}  // namespace ac::jinja
