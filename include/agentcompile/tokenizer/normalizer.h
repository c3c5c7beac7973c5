#pragma once
// The tokenizer.json "normalizer": none (Llama 3) or NFC (Qwen2/Qwen3), alone or in a
// Sequence. Any other type is rejected when the tokenizer loads: silently skipping a normalizer
// would give ids that differ from the reference.
#include <string>
#include <string_view>

#include "agentcompile/core/json.h"

namespace ac {

class Normalizer {
 public:
  // `j` is the "normalizer" value (null for none); errors name `subject` (file: field).
  static Normalizer from_json(const Json& j, const std::string& subject);

  bool identity() const { return !nfc_; }
  // Normalizes valid UTF-8; returns a view of `text` when nothing changes, else of `storage`.
  std::string_view apply(std::string_view text, std::string& storage) const;

 private:
  bool nfc_ = false;
};

// Unicode NFC of valid UTF-8 (utf8proc); text below U+0300 is returned as is without a copy.
std::string_view nfc(std::string_view text, std::string& storage);

}  // namespace ac
