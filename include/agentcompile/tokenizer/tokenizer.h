#pragma once
// The tokenizer of a Hugging Face model folder: tokenizer.json (byte-level BPE: Qwen2/Qwen3,
// Llama 3, GPT-2 style) and, when present, tokenizer_config.json (special tokens, chat template).
// Ids match the reference (@lenml/tokenizers, a port of transformers.js) exactly; see
// tests/tokenizer/ for how that is checked.
//
// Conventions:
//  - encode adds no BOS/EOS (add_special_tokens does); text that spells an added token becomes that token (special ones
//    only when allow_special), everything else is normalized, pre-tokenized and BPE-encoded.
//  - Invalid UTF-8 in the input is not an error: each maximal invalid subpart becomes U+FFFD,
//    exactly as a WHATWG TextDecoder (and so the reference, reading the same bytes) does.
//  - decode maps ids back to bytes and decodes them the same way; ids the tokenizer has no token
//    for (Qwen3's padding ids 151669-151935, which its models' vocabulary has) add no text, as in
//    Hugging Face, and ids_without_text names them. decode never applies the
//    "clean_up_tokenization_spaces" rewrite (" ." -> "." etc.), so decode(encode(x)) == NFC(x)
//    for Qwen3 and == x for Llama 3.
//  - Unicode tables are the system's (PCRE2 for \p{L}/\p{N}, utf8proc for NFC); characters assigned
//    after their Unicode versions may split differently from a reference with newer tables.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agentcompile/core/fs.h"

namespace ac {

class Tokenizer {
 public:
  // Loads dir/tokenizer.json and, if present, dir/tokenizer_config.json (special tokens; the chat
  // template is read by agentcompile/chat). Errors are BadInput and name the file and the field.
  static Tokenizer load(const fs::path& dir);
  // The same from the files' contents; `config_json` may be empty (no tokenizer_config.json).
  static Tokenizer parse(std::string_view tokenizer_json, std::string_view config_json,
                         const std::string& tokenizer_name = "tokenizer.json",
                         const std::string& config_name = "tokenizer_config.json");

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  std::vector<int32_t> encode(std::string_view text, bool allow_special = true) const;
  // The same, but no special token is matched where it would overlap one of `plain_spans`, byte
  // ranges [first, second) of `text` (sorted, not overlapping; text must be valid UTF-8): a rendered
  // chat prompt whose messages' special-token text must stay text.
  std::vector<int32_t> encode(std::string_view text, bool allow_special,
                              const std::vector<std::pair<size_t, size_t>>& plain_spans) const;
  // `ids` of one encoded text with what Hugging Face's add_special_tokens=True adds around them:
  // the tokenizer.json post_processor (a BOS for Meta's Llama 3 files; nothing for Qwen3, whose
  // post_processor is ByteLevel). Chat prompts do not take it: the template renders the BOS.
  std::vector<int32_t> add_special_tokens(const std::vector<int32_t>& ids) const;

  // Text of the ids; ids that are not tokens add nothing (see ids_without_text).
  std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens = false) const;
  // The ids of `ids` that are not tokens (no text), each once, in order of first appearance.
  std::vector<int32_t> ids_without_text(const std::vector<int32_t>& ids) const;

  // True for special tokens: special added tokens and the additional_special_tokens of
  // tokenizer_config.json (what skip_special_tokens drops).
  bool is_special(int32_t id) const;
  bool is_token(int32_t id) const;
  // BadInput "token id N: ..." unless is_token(id).
  void check_id(int32_t id) const;

  int64_t vocab_size() const;  // largest id + 1
  // The id of a token's text as written in tokenizer.json (byte-level form for vocabulary
  // entries, e.g. "Ġthe"; the content for added tokens).
  std::optional<int32_t> token_id(std::string_view token_text) const;
  // The inverse of token_id (empty for ids that are not tokens).
  std::string token_text(int32_t id) const;

  // From tokenizer_config.json (bos_token / eos_token), when they name a token.
  std::optional<int32_t> bos_token_id() const;
  std::optional<int32_t> eos_token_id() const;

  // How an id decodes: raw bytes (byte-level vocabulary tokens), or text written as is (added
  // tokens, which the reference does not pass through the byte-level decoder). Call check_id first.
  struct Piece {
    std::string bytes;
    bool verbatim = false;
    bool special = false;  // dropped by skip_special_tokens
  };
  const Piece& piece(int32_t id) const;

  struct Impl;

 private:
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ac
