#pragma once
// Reading tokenizer.json fast: it is mostly model.vocab (~150k entries) and model.merges
// (~300k), which a SAX pass streams into flat arrays; everything else becomes a small JSON
// tree. About ten times faster than building the whole tree, with the same strictness as
// parse_json_strict (valid UTF-8, bounded depth, no duplicate keys, nothing after the value).
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agentcompile/core/json.h"

namespace ac {

struct TokenizerJson {
  Json root;  // the file without model.vocab and model.merges
  bool has_vocab = false;
  bool has_merges = false;
  // model.vocab in file order; the id is -1 when the value is not an integer in [0, 2^31).
  std::vector<std::pair<std::string, int64_t>> vocab;
  // model.merges as (left, right); entries written "left right" are split at their one space.
  std::vector<std::pair<std::string, std::string>> merges;
};

// BadInput "subject: ..." on malformed JSON or a malformed vocab / merges entry.
TokenizerJson read_tokenizer_json(std::string_view text, const std::string& subject);

}  // namespace ac
