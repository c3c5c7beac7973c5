// libFuzzer target: tokenizer.json loading, then encoding and decoding arbitrary bytes. The input
// is a tokenizer.json, a NUL byte, then the text (JSON holds no raw NUL; without one the text is a
// fixed sample). A rejected file must be clean BadInput. With an accepted one, encoding the text
// (with and without special-token matching, and with the post_processor's additions) gives only
// ids that are tokens, or clean BadInput (a pathological split pattern running out of matching
// work); decoding any ids gives valid UTF-8 and names exactly the ids without text; and where the
// tokenizer is lossless (no normalizer, no prefix space, no whitespace stripping around added
// tokens, no added token sharing a vocabulary entry's text or id), decode(encode(x)) is x with
// invalid UTF-8 replaced.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "agentcompile/tokenizer/stream_decoder.h"
#include "agentcompile/tokenizer/tokenizer.h"
#include "agentcompile/tokenizer/utf8.h"
#include "fuzz_common.h"

namespace {

using ac::Json;
using ac::fuzz::require;

bool has_true(const Json& j, const char* key) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it)
      if ((it.key() == key && it.value() == true) || has_true(it.value(), key)) return true;
  } else if (j.is_array()) {
    for (const Json& e : j)
      if (has_true(e, key)) return true;
  }
  return false;
}

// True when decode(encode(x)) must give back x (see the file comment). Reads the file with the
// plain JSON parser; the tokenizer accepted it, so its shape is known to be sane.
bool lossless(std::string_view tokenizer_json) {
  Json j;
  try {
    j = Json::parse(tokenizer_json);
  } catch (const Json::exception&) {
    return false;  // e.g. a duplicate key nlohmann keeps differently: no claim
  }
  if (!j.is_object() || !j.contains("normalizer") || !j["normalizer"].is_null()) return false;
  if (j.contains("pre_tokenizer") && has_true(j["pre_tokenizer"], "add_prefix_space")) return false;
  const Json& vocab = j["model"]["vocab"];
  std::set<int64_t> vocab_ids;
  for (const Json& id : vocab) vocab_ids.insert(id.get<int64_t>());
  if (j.contains("added_tokens") && j["added_tokens"].is_array())
    for (const Json& a : j["added_tokens"]) {
      // An added token takes over a vocabulary entry with its text or its id (as in the reference).
      if (a.value("lstrip", false) || a.value("rstrip", false)) return false;
      if (vocab.contains(a.value("content", "")) || vocab_ids.count(a.value("id", int64_t(-1)))) return false;
    }
  return true;
}

void check_ids(const ac::Tokenizer& tok, const std::vector<int32_t>& ids, const char* what) {
  for (int32_t id : ids) require(tok.is_token(id), std::string(what) + " gave id " + std::to_string(id) + ", not a token");
}

// Decoding: valid UTF-8, the same text streamed, and the ids without text named exactly.
std::string check_decode(const ac::Tokenizer& tok, const std::vector<int32_t>& ids, bool skip_special) {
  const std::string text = tok.decode(ids, skip_special);
  require(ac::utf8_valid(text), "decode gave invalid UTF-8");
  ac::StreamDecoder stream(tok, skip_special);
  std::string streamed;
  for (int32_t id : ids) {
    const std::string part = stream.push(id);
    require(ac::utf8_valid(part), "a streamed piece is not whole UTF-8");
    streamed += part;
  }
  streamed += stream.finish();
  require(streamed == text, "streamed text differs from decode");
  for (int32_t id : tok.ids_without_text(ids)) require(!tok.is_token(id), "a token listed as without text");
  for (int32_t id : ids)
    if (!tok.is_token(id)) {
      const auto missing = tok.ids_without_text(ids);
      require(std::find(missing.begin(), missing.end(), id) != missing.end(), "an id without text not listed");
    }
  return text;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string_view file = input.substr(0, nul);
  const std::string_view text = nul == std::string_view::npos ? std::string_view("Hello, world! I'm 42 \xC3\xA9") : input.substr(nul + 1);

  std::unique_ptr<ac::Tokenizer> tok;
  try {
    tok = std::make_unique<ac::Tokenizer>(ac::Tokenizer::parse(file, ""));
  } catch (const ac::Error& e) {
    ac::fuzz::check_rejection(e);
    return 0;
  }
  require(tok->vocab_size() >= 256 && tok->vocab_size() <= (int64_t(1) << 24), "vocabulary size in range");

  std::vector<int32_t> ids;
  try {
    ids = tok->encode(text, true);
    check_ids(*tok, ids, "encode");
    check_ids(*tok, tok->encode(text, false), "encode without special tokens");
    const std::vector<int32_t> with_special = tok->add_special_tokens(ids);
    check_ids(*tok, with_special, "add_special_tokens");
    require(std::search(with_special.begin(), with_special.end(), ids.begin(), ids.end()) != with_special.end() ||
                ids.empty(),
            "add_special_tokens dropped the text's ids");
  } catch (const ac::Error& e) {
    ac::fuzz::check_rejection(e);
    return 0;
  }
  require(tok->ids_without_text(ids).empty(), "encode gave an id without text");
  const std::string decoded = check_decode(*tok, ids, false);
  check_decode(*tok, ids, true);
  if (lossless(file)) require(decoded == ac::utf8_sanitize(text), "decode(encode(x)) is not x");

  // Arbitrary ids (two bytes each from the text): in range or not, they decode without failing.
  std::vector<int32_t> raw;
  for (size_t k = 0; k + 1 < text.size() && raw.size() < 64; k += 2)
    raw.push_back(int32_t(uint8_t(text[k])) << 8 | uint8_t(text[k + 1]));
  raw.insert(raw.end(), {-1, int32_t(1) << 30});
  check_decode(*tok, raw, false);
  return 0;
}
