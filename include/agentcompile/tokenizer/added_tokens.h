#pragma once
// Added tokens (tokenizer.json "added_tokens"): matched in the raw text before normalization and
// pre-tokenization, longest match first at the leftmost position, as the reference does with a
// trie over all of them (special or not; "normalized" and "single_word" play no part there).
// lstrip / rstrip remove JavaScript whitespace from the neighbouring text. When special tokens
// are not allowed (text from a user, say), only non-special added tokens are matched and the
// text of special ones is tokenized as ordinary text.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agentcompile/core/json.h"

namespace ac {

struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool special = false;
  bool lstrip = false;
  bool rstrip = false;
};

// A stretch of input: an added token (token >= 0, an index into the list) or text (token = -1).
struct TextSection {
  std::string_view text;
  int32_t token = -1;
};

class AddedTokens {
 public:
  // `j` is the "added_tokens" array (may be null); errors name `subject` (file: field).
  static AddedTokens from_json(const Json& j, const std::string& subject);

  const std::vector<AddedToken>& tokens() const { return tokens_; }

  // Splits `text` into sections; text sections are never empty (stripping may empty them).
  void split(std::string_view text, bool allow_special, std::vector<TextSection>& out) const;
  // The same, with no special token matched where it would overlap one of the byte ranges
  // `plain` of text ([first, second), sorted, not overlapping): text there stays text.
  using ByteSpan = std::pair<size_t, size_t>;
  void split(std::string_view text, bool allow_special, const std::vector<ByteSpan>& plain,
             std::vector<TextSection>& out) const;

 private:
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> children;  // sorted by byte
    int32_t token = -1;          // a token ends here (any)
    int32_t plain_token = -1;    // a non-special token ends here
  };
  int32_t child(int32_t node, uint8_t b) const;
  void insert(const std::string& content, int32_t index);

  std::vector<AddedToken> tokens_;
  std::vector<Node> trie_{1};
  bool first_byte_[256] = {};
};

}  // namespace ac
