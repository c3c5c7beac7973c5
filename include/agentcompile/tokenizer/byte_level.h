#pragma once
// The byte-level alphabet of GPT-2 style BPE: every byte gets a printable code point (bytes
// that are printable Latin-1 keep their own; the other 68 get U+0100 onwards, in byte order),
// so vocabulary entries are text. The tokenizer works on raw bytes internally and uses this
// only to read the vocabulary and to answer token-text queries.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ac {

char32_t byte_level_char(uint8_t b);

// The byte a byte-level code point stands for, or -1 when cp is not in the alphabet.
int byte_level_byte(char32_t cp);

// Raw bytes to their byte-level text (UTF-8).
std::string bytes_to_byte_level(std::string_view bytes);

// Byte-level text (valid UTF-8) back to raw bytes; nullopt when a character is outside the alphabet.
std::optional<std::string> byte_level_to_bytes(std::string_view text);

}  // namespace ac
