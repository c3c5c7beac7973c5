#include "agentcompile/tokenizer/normalizer.h"

#include <utf8proc.h>

#include <cstdlib>
#include <memory>

#include "agentcompile/core/error.h"

namespace ac {

namespace {

// Every code point below U+0300 is NFC-stable and none of them compose with each other, so text
// whose bytes are all below 0xCC (the lead byte of U+0300) is already NFC.
bool below_combining_marks(std::string_view s) {
  for (char c : s)
    if (static_cast<uint8_t>(c) >= 0xCC) return false;
  return true;
}

void add_step(const Json& j, const std::string& subject, bool& nfc_flag) {
  if (!j.is_object()) throw_input(subject, "expected an object");
  std::string type = json_string(j, subject, "type");
  if (type == "NFC") {
    nfc_flag = true;
  } else if (type == "Sequence") {
    const Json& list = json_require(j, subject, "normalizers");
    if (!list.is_array()) throw_input(subject, "normalizers: expected an array");
    for (size_t k = 0; k < list.size(); ++k) add_step(list[k], subject + ".normalizers[" + std::to_string(k) + "]", nfc_flag);
  } else {
    throw_input(subject, "type: " + json_quote(type, 60) + " is not supported (NFC, Sequence of NFC, or none)");
  }
}

}  // namespace

Normalizer Normalizer::from_json(const Json& j, const std::string& subject) {
  Normalizer n;
  if (!j.is_null()) add_step(j, subject, n.nfc_);
  return n;
}

std::string_view Normalizer::apply(std::string_view text, std::string& storage) const {
  return nfc_ ? nfc(text, storage) : text;
}

std::string_view nfc(std::string_view text, std::string& storage) {
  if (below_combining_marks(text)) return text;
  utf8proc_uint8_t* out = nullptr;
  utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                    static_cast<utf8proc_ssize_t>(text.size()), &out, static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> guard(out, &std::free);
  if (n < 0) throw_internal("NFC normalization", utf8proc_errmsg(n));
  storage.assign(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
  return storage;
}

}  // namespace ac
