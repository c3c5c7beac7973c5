#pragma once
// Streaming detokenizer for generation: push ids one at a time and get the text that is
// complete. Output never ends inside a UTF-8 character; bytes of an unfinished character wait for
// the next ids. Invalid bytes become U+FFFD exactly where Tokenizer::decode puts them, so the
// concatenation of every push() and finish() equals decode(all ids). Ids that are not tokens add
// no text and leave a pending character pending, as in decode.
#include <cstdint>
#include <string>

#include "agentcompile/tokenizer/tokenizer.h"
#include "agentcompile/tokenizer/utf8.h"

namespace ac {

class StreamDecoder {
 public:
  // The tokenizer must outlive the decoder.
  explicit StreamDecoder(const Tokenizer& tokenizer, bool skip_special_tokens = false);

  // The text completed by `id` (often empty; always empty when id is not a token).
  std::string push(int32_t id);
  void push(int32_t id, std::string& out);  // appends instead
  // Whatever is left: an unfinished character becomes U+FFFD. The decoder can then be reused.
  std::string finish();
  void finish(std::string& out);

 private:
  const Tokenizer& tok_;
  bool skip_special_;
  Utf8Decoder bytes_;
};

}  // namespace ac
