#include "agentcompile/tokenizer/byte_level.h"

#include <array>

#include "agentcompile/tokenizer/utf8.h"

namespace ac {

namespace {

constexpr bool keeps_own_code(int b) { return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174); }

struct Tables {
  std::array<char32_t, 256> to_char{};
  std::array<int16_t, 324> to_byte{};  // code points 0..323 cover the whole alphabet
};

constexpr Tables make_tables() {
  Tables t{};
  for (auto& x : t.to_byte) x = -1;
  int next = 256;
  for (int b = 0; b < 256; ++b) {
    char32_t cp = keeps_own_code(b) ? char32_t(b) : char32_t(next++);
    t.to_char[b] = cp;
    t.to_byte[cp] = static_cast<int16_t>(b);
  }
  return t;
}

constexpr Tables kTables = make_tables();

}  // namespace

char32_t byte_level_char(uint8_t b) { return kTables.to_char[b]; }

int byte_level_byte(char32_t cp) { return cp < kTables.to_byte.size() ? kTables.to_byte[cp] : -1; }

std::string bytes_to_byte_level(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) utf8_append(out, byte_level_char(static_cast<uint8_t>(c)));
  return out;
}

std::optional<std::string> byte_level_to_bytes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    int b = byte_level_byte(utf8_next(text, i));
    if (b < 0) return std::nullopt;
    out.push_back(static_cast<char>(b));
  }
  return out;
}

}  // namespace ac
