#pragma once
// The reference's text pass before lexing: one trailing newline dropped, lstrip_blocks and
// trim_blocks applied to the raw text, and the transformers-specific {% generation %} /
// {% endgeneration %} tags removed (honouring their - markers). Every byte of the result
// remembers where it came from, so that errors point into the original source.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ac::jinja {

struct SourceText {
  std::string text;
  std::vector<uint32_t> origin;  // origin[i]: offset in the source of text[i]; one extra for the end
};

SourceText preprocess(std::string_view source, bool lstrip_blocks, bool trim_blocks);

}  // namespace ac::jinja
