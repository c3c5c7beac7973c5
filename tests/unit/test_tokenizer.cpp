// Tokenizer pieces on their own: UTF-8 decoding with replacement, the byte-level alphabet, split
// pattern translation, BPE merge order on tiny hand-made tokenizers, malformed tokenizer.json
// files, the API around ids, chat template errors and linear time on pathological input.
// (Agreement with the reference on real tokenizers is test_tokenizer_reference.cpp.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <set>
#include <thread>

#include "agentcompile/core/error.h"
#include "agentcompile/tokenizer/byte_level.h"
#include "agentcompile/tokenizer/split_regex.h"
#include "agentcompile/tokenizer/stream_decoder.h"
#include "agentcompile/tokenizer/tokenizer.h"
#include "agentcompile/tokenizer/utf8.h"
#include "tokenizer/reference_client.h"

using namespace ac;

namespace {

const std::string kFffd = "\xEF\xBF\xBD";

std::string decode_all(std::string_view bytes) {
  std::string out;
  Utf8Decoder d;
  d.push(bytes, out);
  d.finish(out);
  return out;
}

std::string bl(std::string_view raw) { return bytes_to_byte_level(raw); }

// A byte-level BPE tokenizer.json: the 256 byte tokens (id = byte), then one token per merge
// result (ids from 256, in merge order), with the given merges and parts.
Json tiny_tokenizer(const std::vector<std::pair<std::string, std::string>>& merges) {
  Json vocab = Json::object();
  for (int b = 0; b < 256; ++b) vocab[bl(std::string(1, char(b)))] = b;
  Json m = Json::array();
  int next = 256;
  for (const auto& [l, r] : merges) {
    if (!vocab.contains(bl(l + r))) vocab[bl(l + r)] = next++;
    m.push_back(Json::array({bl(l), bl(r)}));
  }
  return {{"version", "1.0"},
          {"added_tokens", Json::array()},
          {"normalizer", nullptr},
          {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
          {"decoder", {{"type", "ByteLevel"}}},
          {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", m}}}};
}

Tokenizer tiny(const Json& j, const std::string& config = "") { return Tokenizer::parse(j.dump(), config); }

Json with_split(const std::string& pattern);

std::vector<std::string> pieces(const Tokenizer& t, std::string_view text) {
  std::vector<std::string> out;
  for (int32_t id : t.encode(text)) out.push_back(*byte_level_to_bytes(t.token_text(id)));
  return out;
}

// The BadInput message of parsing `j`, or "" when it loads.
std::string load_error(const Json& j, const std::string& config = "") {
  try {
    Tokenizer::parse(j.dump(), config);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadInput) << e.what();
    return e.what();
  }
  return "";
}

double seconds_to_encode(const Tokenizer& t, const std::string& text) {
  double best = 1e9;
  for (int r = 0; r < 3; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    auto ids = t.encode(text);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    EXPECT_FALSE(ids.empty());
  }
  return best;
}

}  // namespace

TEST(TokenizerUtf8, DecoderReplacesMaximalSubparts) {
  EXPECT_EQ(decode_all("plain \xC3\xA9 \xF0\x9F\x98\x80"), "plain \xC3\xA9 \xF0\x9F\x98\x80");
  EXPECT_EQ(decode_all("\xFF"), kFffd);
  EXPECT_EQ(decode_all("\xF0\x9F\x98x"), kFffd + "x");          // truncated 4-byte: one U+FFFD
  EXPECT_EQ(decode_all("\xED\xA0\x80"), kFffd + kFffd + kFffd);  // surrogate: ED is not followed by A0
  EXPECT_EQ(decode_all("\xC0\xAF"), kFffd + kFffd);              // overlong lead
  EXPECT_EQ(decode_all("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);
  EXPECT_EQ(decode_all("\xE2\x82"), kFffd);  // unfinished at the end
  EXPECT_EQ(decode_all("\xEF\xBB\xBF"), "\xEF\xBB\xBF");  // a BOM is kept
  EXPECT_TRUE(utf8_valid("\xF4\x8F\xBF\xBF"));
  EXPECT_FALSE(utf8_valid("\xF4\x90\x80\x80"));
  EXPECT_FALSE(utf8_valid("abc\xE2\x82"));
  EXPECT_EQ(utf8_sanitize("a\x80" "b"), "a" + kFffd + "b");
}

TEST(TokenizerUtf8, StreamingEqualsWholeAtEverySplit) {
  const std::string s = "a\xC3\xA9\xF0\x9F\x98\x80\xE2\x82 \xFF\xF0\x9F\x98\xED\xA0\x80z\xE4\xB8\xAD";
  const std::string whole = decode_all(s);
  for (size_t cut = 0; cut <= s.size(); ++cut) {
    std::string out;
    Utf8Decoder d;
    d.push(s.substr(0, cut), out);
    EXPECT_TRUE(utf8_valid(out)) << cut;
    d.push(s.substr(cut), out);
    d.finish(out);
    EXPECT_EQ(out, whole) << cut;
  }
}

TEST(TokenizerUtf8, JavaScriptWhitespace) {
  for (char32_t c : {U'\t', U'\n', U'\v', U'\f', U'\r', U' ', U'\u00A0', U'\u1680', U'\u2000', U'\u200A', U'\u2028',
                     U'\u2029', U'\u202F', U'\u205F', U'\u3000', U'\uFEFF'})
    EXPECT_TRUE(is_js_space(c)) << std::hex << uint32_t(c);
  for (char32_t c : {U'\u0085', U'\u180E', U'\u200B', U'a', U'\u001C'}) EXPECT_FALSE(is_js_space(c)) << std::hex << uint32_t(c);
  EXPECT_EQ(js_trim("\u3000 \uFEFFx y\t\u00A0"), "x y");
  EXPECT_EQ(js_trim_start("  x "), "x ");
  EXPECT_EQ(js_trim_end("  x \u2029"), "  x");
  EXPECT_EQ(js_trim("\u0085x\u0085"), "\u0085x\u0085");
}

TEST(TokenizerByteLevel, AlphabetIsABijection) {
  std::set<char32_t> seen;
  for (int b = 0; b < 256; ++b) {
    char32_t c = byte_level_char(uint8_t(b));
    EXPECT_TRUE(seen.insert(c).second);
    EXPECT_EQ(byte_level_byte(c), b);
  }
  // The well-known GPT-2 spellings: space is "Ġ", newline "Ċ", printable ASCII is itself.
  EXPECT_EQ(bl(" "), "\xC4\xA0");
  EXPECT_EQ(bl("\n"), "\xC4\x8A");
  EXPECT_EQ(bl("Az~!"), "Az~!");
  EXPECT_EQ(byte_level_to_bytes("\xC4\xA0hi"), std::optional<std::string>(" hi"));
  EXPECT_FALSE(byte_level_to_bytes("\xE4\xB8\xAD"));  // not in the alphabet
}

TEST(TokenizerSplitRegex, TranslationFollowsJavaScript) {
  const std::string s = "subject";
  EXPECT_EQ(translate_split_regex("(?i:'s|'t)", s), "(?:'[sS]|'[tT])");
  EXPECT_EQ(translate_split_regex("\\p{L}+|\\p{N}{1,3}", s), "\\p{L}+|\\p{N}{1,3}");
  EXPECT_NE(translate_split_regex("\\s+", s).find("\\x{FEFF}"), std::string::npos);
  EXPECT_EQ(translate_split_regex("\\d\\w", s), "[0-9][A-Za-z0-9_]");
  EXPECT_EQ(translate_split_regex("[^]", s), "[\\x{0}-\\x{10FFFF}]");
  EXPECT_EQ(translate_split_regex("\\u00e9\\v", s), "\\x{E9}\\x{0B}");
  for (const char* bad : {"\\bword", "(a)\\1", "(?s:.)", "[\\S]", "(?i:[a-z])", "\\q", "abc\\", "(*COMMIT)a",
                          "(*LIMIT_MATCH=1)a"}) {
    try {
      translate_split_regex(bad, s);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::BadInput);
      EXPECT_EQ(std::string(e.what()).rfind("subject: ", 0), 0u) << e.what();
    }
  }
}

TEST(TokenizerSplitRegex, IsolatedSplitKeepsMatchesAndGaps) {
  auto r = SplitRegex::from_regex("\\d+", "t");
  std::vector<std::string_view> out;
  r.split("ab12cd3", out);
  EXPECT_EQ(out, (std::vector<std::string_view>{"ab", "12", "cd", "3"}));
  out.clear();
  r.split("", out);
  EXPECT_TRUE(out.empty());
  // JavaScript's \s: U+0085 is not whitespace, U+FEFF is.
  auto ws = SplitRegex::from_regex("\\s+", "t");
  out.clear();
  ws.split("a\u0085b\uFEFFc", out);
  EXPECT_EQ(out, (std::vector<std::string_view>{"a\u0085b", "\uFEFF", "c"}));
  // "'ſ" is not a contraction (the reference folds ASCII only).
  auto contraction = SplitRegex::from_regex("(?i:'s)", "t");
  out.clear();
  contraction.split("x'S'\u017F", out);
  EXPECT_EQ(out, (std::vector<std::string_view>{"x", "'S", "'\u017F"}));
  auto lit = SplitRegex::from_literal("a.b", "t");
  out.clear();
  lit.split("xa.bya_b", out);
  EXPECT_EQ(out, (std::vector<std::string_view>{"x", "a.b", "ya_b"}));
}

TEST(TokenizerBpe, LowestRankFirstThenLeftmost) {
  // "a a" outranks everything: "aaa" -> "aa" + "a" (leftmost pair first), "aaaa" -> "aaaa".
  Tokenizer t = tiny(tiny_tokenizer({{"a", "a"}, {"aa", "aa"}, {"b", "c"}, {"a", "b"}}));
  EXPECT_EQ(pieces(t, "aaa"), (std::vector<std::string>{"aa", "a"}));
  EXPECT_EQ(pieces(t, "aaaa"), (std::vector<std::string>{"aaaa"}));
  EXPECT_EQ(pieces(t, "aaaaa"), (std::vector<std::string>{"aaaa", "a"}));
  // "b c" (rank 2) beats "a b" (rank 3): "abc" -> "a" + "bc".
  EXPECT_EQ(pieces(t, "abc"), (std::vector<std::string>{"a", "bc"}));
  EXPECT_EQ(pieces(t, "ab"), (std::vector<std::string>{"ab"}));
  // The GPT-2 split makes " ab" one word; with no " a" merge the space stays alone. Bytes of
  // other characters stay single.
  EXPECT_EQ(pieces(t, "ab ab"), (std::vector<std::string>{"ab", " ", "ab"}));
  EXPECT_EQ(pieces(t, "\xC3\xA9"), (std::vector<std::string>{"\xC3", "\xA9"}));
  EXPECT_EQ(t.decode(t.encode("aaa abc \xC3\xA9!")), "aaa abc \xC3\xA9!");
}

TEST(TokenizerBpe, MergesInBothFormsAndIgnoreMerges) {
  Json j = tiny_tokenizer({{"h", "i"}, {"hi", "s"}});
  Json strings = j;
  strings["model"]["merges"] = Json::array({"h i", "hi s"});
  EXPECT_EQ(tiny(j).encode("his"), tiny(strings).encode("his"));
  EXPECT_EQ(pieces(tiny(strings), "his"), (std::vector<std::string>{"his"}));
  // ignore_merges: a word that is in the vocabulary is taken whole, even with no merge path to it.
  Json direct = tiny_tokenizer({});
  direct["model"]["vocab"]["xyz"] = 300;
  EXPECT_EQ(tiny(direct).encode("xyz").size(), 3u);
  direct["model"]["ignore_merges"] = true;
  EXPECT_EQ(tiny(direct).encode("xyz"), (std::vector<int32_t>{300}));
}

TEST(TokenizerAddedTokens, LongestMatchStripAndSpecialOnlyWhenAllowed) {
  Json j = tiny_tokenizer({});
  j["added_tokens"] = Json::array({
      {{"id", 400}, {"content", "<s>"}, {"special", true}},
      {{"id", 401}, {"content", "<s>x"}, {"special", false}},
      {{"id", 402}, {"content", "[L]"}, {"special", false}, {"lstrip", true}, {"rstrip", true}},
  });
  Tokenizer t = tiny(j, R"({"additional_special_tokens": ["[L]"], "bos_token": "<s>"})");
  EXPECT_EQ(t.encode("<s>x<s>"), (std::vector<int32_t>{401, 400}));
  EXPECT_EQ(t.encode("a \t[L]\n b"), (std::vector<int32_t>{'a', 402, 'b'}));
  // Without special tokens, "<s>" is text but the non-special "<s>x" still matches.
  EXPECT_EQ(t.encode("<s>", false), (std::vector<int32_t>{'<', 's', '>'}));
  EXPECT_EQ(t.encode("<s>x", false), (std::vector<int32_t>{401}));
  EXPECT_TRUE(t.is_special(400));
  EXPECT_FALSE(t.is_special(401));
  EXPECT_TRUE(t.is_special(402));  // named in additional_special_tokens
  EXPECT_EQ(t.bos_token_id(), std::optional<int32_t>(400));
  EXPECT_EQ(t.decode({'a', 400, 401, 402, 'b'}), "a<s><s>x[L]b");
  EXPECT_EQ(t.decode({'a', 400, 401, 402, 'b'}, true), "a<s>xb");
  EXPECT_EQ(t.vocab_size(), 403);
  EXPECT_FALSE(t.is_token(300));
  EXPECT_EQ(t.token_id("<s>x"), std::optional<int32_t>(401));
  EXPECT_EQ(t.token_text(401), "<s>x");
  EXPECT_EQ(t.token_id(bl(" ")), std::optional<int32_t>(' '));
}

TEST(TokenizerDecode, IdsWithoutTextAddNothing) {
  // Ids a model's vocabulary may have beyond the tokenizer's (Qwen3's padding ids), a gap in the
  // tokenizer's ids, anything else: no text, as Hugging Face decodes them, and listed.
  Json j = tiny_tokenizer({});
  j["added_tokens"] = Json::array({{{"id", 300}, {"content", "<s>"}, {"special", true}}});
  Tokenizer t = tiny(j);
  EXPECT_EQ(t.decode({65, -1, 256, 66, 1 << 30, 301, 256}), "AB");
  EXPECT_EQ(t.ids_without_text({65, -1, 256, 66, 1 << 30, 301, 256}), (std::vector<int32_t>{-1, 256, 1 << 30, 301}));
  EXPECT_TRUE(t.ids_without_text({65, 300}).empty());
  // They do not end a byte run: a character split around one is still whole.
  const std::vector<int32_t> emoji = {0xF0, 0x9F, 280, 0x98, 0x80};
  EXPECT_EQ(t.decode(emoji), "\xF0\x9F\x98\x80");
  StreamDecoder sd(t);
  std::string streamed;
  for (int32_t id : emoji) streamed += sd.push(id);
  streamed += sd.finish();
  EXPECT_EQ(streamed, "\xF0\x9F\x98\x80");
  EXPECT_EQ(sd.push(999), "");
  // check_id still names the id for callers that require a token.
  for (int32_t id : {-1, 256, 1 << 30}) {
    try {
      t.check_id(id);
      ADD_FAILURE() << id;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::BadInput);
      EXPECT_NE(std::string(e.what()).find("token id " + std::to_string(id)), std::string::npos) << e.what();
    }
  }
}

TEST(TokenizerDecode, StreamingNeverSplitsACharacter) {
  Tokenizer t = tiny(tiny_tokenizer({}));
  const std::string text = "h\xC3\xA9llo \xF0\x9F\x98\x80 \xE4\xB8\xAD\xE6\x96\x87!";
  const auto ids = t.encode(text);
  ASSERT_EQ(ids.size(), text.size());  // one token per byte here
  StreamDecoder sd(t);
  std::string out;
  for (int32_t id : ids) {
    std::string part = sd.push(id);
    EXPECT_TRUE(utf8_valid(part));
    out += part;
  }
  out += sd.finish();
  EXPECT_EQ(out, text);
  // An unfinished character at the end becomes U+FFFD, as in decode.
  std::vector<int32_t> cut(ids.begin(), ids.begin() + 2);
  std::string partial = sd.push(cut[0]);
  partial += sd.push(cut[1]);
  partial += sd.finish();
  EXPECT_EQ(partial, "h" + kFffd);
  EXPECT_EQ(t.decode(cut), "h" + kFffd);
}

TEST(TokenizerLoad, MalformedFilesNameTheFieldAndNeverCrash) {
  const Json ok = tiny_tokenizer({{"a", "b"}});
  ASSERT_EQ(load_error(ok), "");
  struct Bad {
    std::string name, needle;
    std::function<void(Json&)> edit;
  };
  const std::vector<Bad> cases = {
      {"no model", "model: missing", [](Json& j) { j.erase("model"); }},
      {"model type", "model: type: \"WordPiece\" is not supported", [](Json& j) { j["model"]["type"] = "WordPiece"; }},
      {"dropout", "model: dropout", [](Json& j) { j["model"]["dropout"] = 0.1; }},
      {"suffix", "model: end_of_word_suffix", [](Json& j) { j["model"]["end_of_word_suffix"] = "</w>"; }},
      {"no vocab", "model: vocab: missing", [](Json& j) { j["model"].erase("vocab"); }},
      {"vocab array", "model: vocab: expected an object", [](Json& j) { j["model"]["vocab"] = Json::array(); }},
      {"vocab id", "model: vocab: \"a\": not a token id", [](Json& j) { j["model"]["vocab"]["a"] = -3; }},
      {"vocab id type", "model: vocab: \"a\": not a token id", [](Json& j) { j["model"]["vocab"]["a"] = "97"; }},
      {"vocab shared id", "is used by two tokens", [](Json& j) { j["model"]["vocab"]["zz"] = 97; }},
      {"vocab not byte-level", "is not byte-level text", [](Json& j) { j["model"]["vocab"]["\xE4\xB8\xAD"] = 999; }},
      {"alphabet", "no token for byte 0x20", [](Json& j) { j["model"]["vocab"].erase(bl(" ")); }},
      {"no merges", "model: merges: missing", [](Json& j) { j["model"].erase("merges"); }},
      {"merge string", "merges[0]: \"ab\" is not \"left right\"", [](Json& j) { j["model"]["merges"] = {"ab"}; }},
      {"merge pair", "merges[0]: expected two strings",
       [](Json& j) { j["model"]["merges"] = Json::array({Json::array({"a", "b", "c"})}); }},
      {"merge unknown", "merges[0]: \"xy\" is not in the vocabulary",
       [](Json& j) { j["model"]["merges"] = Json::array({Json::array({"xy", "a"})}); }},
      {"merge result unknown", "merges[0]: \"ba\" is not in the vocabulary",
       [](Json& j) { j["model"]["merges"] = Json::array({Json::array({"b", "a"})}); }},
      {"normalizer", "normalizer: type: \"Lowercase\" is not supported", [](Json& j) { j["normalizer"] = {{"type", "Lowercase"}}; }},
      {"normalizer seq", "normalizer.normalizers[1]: type: \"Strip\"",
       [](Json& j) { j["normalizer"] = {{"type", "Sequence"}, {"normalizers", {{{"type", "NFC"}}, {{"type", "Strip"}}}}}; }},
      {"pre-tokenizer", "pre_tokenizer: type: \"Whitespace\" is not supported",
       [](Json& j) { j["pre_tokenizer"] = {{"type", "Whitespace"}}; }},
      {"no byte level", "pre_tokenizer: a ByteLevel step is required",
       [](Json& j) {
         j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "\\s+"}}}, {"behavior", "Isolated"}};
       }},
      {"split behaviour", "behavior: \"Removed\" is not supported",
       [](Json& j) {
         j["pre_tokenizer"] = {{"type", "Sequence"},
                               {"pretokenizers",
                                {{{"type", "Split"}, {"pattern", {{"Regex", "\\s+"}}}, {"behavior", "Removed"}},
                                 {{"type", "ByteLevel"}}}}};
       }},
      {"split regex", "pre_tokenizer.pretokenizers[0].pattern.Regex: unsupported escape \\q",
       [](Json& j) {
         j["pre_tokenizer"] = {{"type", "Sequence"},
                               {"pretokenizers",
                                {{{"type", "Split"}, {"pattern", {{"Regex", "a\\q"}}}, {"behavior", "Isolated"}},
                                 {{"type", "ByteLevel"}}}}};
       }},
      {"split regex compile", "cannot compile the pattern",
       [](Json& j) {
         j["pre_tokenizer"] = {{"type", "Sequence"},
                               {"pretokenizers",
                                {{{"type", "Split"}, {"pattern", {{"Regex", "(ab"}}}, {"behavior", "Isolated"}},
                                 {{"type", "ByteLevel"}}}}};
       }},
      {"decoder", "decoder: type: \"WordPiece\" is not supported", [](Json& j) { j["decoder"] = {{"type", "WordPiece"}}; }},
      {"no decoder", "decoder: missing", [](Json& j) { j.erase("decoder"); }},
      {"added id", "added_tokens[0]: id: missing", [](Json& j) { j["added_tokens"] = {{{"content", "<x>"}}}; }},
      {"added empty", "added_tokens[0]: content: empty", [](Json& j) { j["added_tokens"] = {{{"id", 300}, {"content", ""}}}; }},
      {"added twice", "added_tokens[1]: id: 300 is used by another",
       [](Json& j) { j["added_tokens"] = {{{"id", 300}, {"content", "<x>"}}, {{"id", 300}, {"content", "<y>"}}}; }},
  };
  for (const Bad& b : cases) {
    Json j = ok;
    b.edit(j);
    const std::string e = load_error(j);
    EXPECT_EQ(e.rfind("tokenizer.json: ", 0), 0u) << b.name << ": " << e;
    EXPECT_NE(e.find(b.needle), std::string::npos) << b.name << ": " << e;
  }
  // Broken JSON: syntax, duplicate keys (anywhere, including the streamed vocab and merges),
  // depth, trailing garbage, invalid UTF-8.
  std::string text = ok.dump();
  for (const auto& [broken, needle] : std::vector<std::pair<std::string, std::string>>{
           {text.substr(0, text.size() / 2), "invalid JSON"},
           {text + "x", "invalid JSON"},
           {"{\"a\": 1, \"a\": 2}", "duplicate key \"a\""},
           {"{\"model\": {\"vocab\": {}, \"vocab\": {}}}", "duplicate key \"vocab\""},
           {"{\"model\": {\"vocab\": {\"a\": 1, \"a\": 2}}}", "\"a\" appears twice"},
           {std::string(200, '[') + std::string(200, ']'), "nested deeper"},
           {"{\"x\": \"\xFF\"}", "invalid JSON"},
           {"[]", "expected a JSON object"},
       }) {
    std::string e;
    try {
      Tokenizer::parse(broken, "");
    } catch (const Error& err) {
      e = err.what();
    }
    EXPECT_NE(e.find(needle), std::string::npos) << broken.substr(0, 60) << " -> " << e;
  }
  // tokenizer_config.json errors name that file.
  EXPECT_NE(load_error(ok, "{").find("tokenizer_config.json: invalid JSON"), std::string::npos);
  // The chat template is not the tokenizer's (agentcompile/chat reads it).
  EXPECT_EQ(load_error(ok, R"({"chat_template": 5})"), "");
}

// Messages stay one valid UTF-8 line whatever the file holds: the raw bytes nlohmann quotes from
// a broken file and names holding newlines are escaped (found by fuzz_tokenizer).
TEST(TokenizerLoad, MessagesAreOneValidLine) {
  Json newline_key = tiny_tokenizer({});
  newline_key["model"]["vocab"]["a\nb"] = -1;
  Json newline_type = tiny_tokenizer({});
  newline_type["normalizer"] = {{"type", "N\nFC"}};
  Json newline_pattern = with_split("a\n(");
  for (const std::string& text : {newline_key.dump(), newline_type.dump(), newline_pattern.dump(),
                                  std::string("{\"model\": {\"vocab\": {\"\xFF\": 1}}}"), std::string("{\"x\": \"\xC3\"}")}) {
    try {
      Tokenizer::parse(text, "");
      ADD_FAILURE() << "loaded " << text.substr(0, 80);
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_EQ(m.find('\n'), std::string::npos) << m;
      EXPECT_TRUE(utf8_valid(m)) << m;
    }
  }
}

TEST(TokenizerLoad, FolderErrors) {
  test::TempDir tmp;
  for (const fs::path& p : {tmp.path() / "missing", tmp.path()}) {
    try {
      Tokenizer::load(p);
      ADD_FAILURE() << p;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::BadInput);
      EXPECT_NE(std::string(e.what()).find(p == tmp.path() ? "tokenizer.json: missing" : "not a folder"), std::string::npos)
          << e.what();
    }
  }
}

// Spans of plain text: special tokens do not match where they would overlap one (the content of
// a chat message under --no-special-in-prompt); the non-special added tokens still do.
TEST(TokenizerAddedTokens, PlainSpansKeepSpecialTextAsText) {
  Json j = tiny_tokenizer({});
  j["added_tokens"] = Json::array({{{"id", 400}, {"content", "<s>"}, {"special", true}},
                                   {{"id", 401}, {"content", "<x>"}, {"special", false}}});
  const Tokenizer t = tiny(j);
  const std::string text = "<s>a<s><x>b<s>";  // bytes 0-3, 4-7, 7-10, 11-14
  EXPECT_EQ(t.encode(text, true, {}), (std::vector<int32_t>{400, 'a', 400, 401, 'b', 400}));
  EXPECT_EQ(t.encode(text, true, {{3, 11}}), (std::vector<int32_t>{400, 'a', '<', 's', '>', 401, 'b', 400}));
  // A span that covers only part of a special token's text still stops it from matching.
  EXPECT_EQ(t.encode(text, true, {{5, 6}, {13, 14}}),
            (std::vector<int32_t>{400, 'a', '<', 's', '>', 401, 'b', '<', 's', '>'}));
  // Empty spans and spans between tokens change nothing.
  EXPECT_EQ(t.encode(text, true, {{3, 3}, {3, 4}}), t.encode(text, true));
  EXPECT_EQ(t.encode(text, false, {{0, 14}}), t.encode(text, false));
}

TEST(TokenizerThreads, ConcurrentEncodeGivesTheSameIds) {
  // Expected ids from a separate instance, so the threads start on a cold word cache.
  const Tokenizer t = Tokenizer::load(test::model_dir("qwen3"));
  const Json corpus = test::read_json_file(test::tokenizer_test_dir() / "corpus.json");
  std::vector<std::vector<int32_t>> want;
  {
    const Tokenizer single = Tokenizer::load(test::model_dir("qwen3"));
    for (const Json& s : corpus) want.push_back(single.encode(s.get<std::string>()));
  }
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int w = 0; w < 4; ++w)
    threads.emplace_back([&, w] {
      for (int round = 0; round < 3; ++round)
        for (size_t k = 0; k < corpus.size(); ++k) {
          const size_t i = (k * 7 + size_t(w) * 13 + size_t(round)) % corpus.size();
          if (t.encode(corpus[i].get<std::string>()) != want[i]) ++mismatches[size_t(w)];
        }
    });
  for (auto& th : threads) th.join();
  for (int m : mismatches) EXPECT_EQ(m, 0);
}

TEST(TokenizerSpeed, PathologicalInputIsLinear) {
  const Tokenizer t = Tokenizer::load(test::model_dir("qwen3"));
  for (char c : {' ', 'a', '\n', '7'}) {
    const double small = seconds_to_encode(t, std::string(100000, c));
    const double large = seconds_to_encode(t, std::string(400000, c));
    // 4x the input: O(n log n) gives about 4.5x; quadratic would be 16x.
    EXPECT_LT(large, 9.0 * small + 0.02) << "char " << int(c) << ": " << small << " s -> " << large << " s";
  }
}

// The post_processor: what encode with add_special_tokens=True adds (Hugging Face's default).
TEST(TokenizerPostProcessor, TemplatesAroundOneSequence) {
  Json j = tiny_tokenizer({});
  j["added_tokens"] = Json::array({{{"id", 300}, {"content", "<s>"}, {"special", true}},
                                   {{"id", 301}, {"content", "</s>"}, {"special", true}}});
  auto special = [](const std::string& name, std::vector<int> ids) {
    return Json{{"id", name}, {"ids", ids}, {"tokens", std::vector<std::string>(ids.size(), name)}};
  };
  auto template_of = [&](Json single) {
    return Json{{"type", "TemplateProcessing"}, {"single", single}, {"pair", Json::array()},
                {"special_tokens", {{"<s>", special("<s>", {300})}, {"</s>", special("</s>", {301})}}}};
  };
  const Json bos_a = Json::array({{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}});
  const std::vector<int32_t> ab = {'a', 'b'};
  // None, ByteLevel: nothing added.
  EXPECT_EQ(tiny(j).add_special_tokens(ab), ab);
  j["post_processor"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", false}};
  EXPECT_EQ(tiny(j).add_special_tokens(ab), ab);
  // Meta's Llama 3 form: ByteLevel then a template adding the BOS.
  j["post_processor"] = {{"type", "Sequence"},
                         {"processors", {{{"type", "ByteLevel"}}, template_of(bos_a)}}};
  Tokenizer llama = tiny(j);
  EXPECT_EQ(llama.add_special_tokens(ab), (std::vector<int32_t>{300, 'a', 'b'}));
  EXPECT_EQ(llama.add_special_tokens({}), (std::vector<int32_t>{300}));
  EXPECT_EQ(llama.encode("ab"), ab);  // encode itself adds nothing
  // Both sides, the string form, and steps wrapping what the steps before them produced.
  j["post_processor"] = template_of("<s> $A </s>:1");
  EXPECT_EQ(tiny(j).add_special_tokens(ab), (std::vector<int32_t>{300, 'a', 'b', 301}));
  j["post_processor"] = {{"type", "Sequence"},
                         {"processors", {template_of(Json::array({"$0", "</s>"})), template_of(Json::array({"<s>", "$"}))}}};
  EXPECT_EQ(tiny(j).add_special_tokens(ab), (std::vector<int32_t>{300, 'a', 'b', 301}));
  j["post_processor"] = {{"type", "RobertaProcessing"}, {"cls", {"<s>", 300}}, {"sep", {"</s>", 301}}};
  EXPECT_EQ(tiny(j).add_special_tokens(ab), (std::vector<int32_t>{300, 'a', 'b', 301}));
  j["post_processor"] = {{"type", "BertProcessing"}, {"cls", {"</s>", 301}}, {"sep", {"<s>", 300}}};
  EXPECT_EQ(tiny(j).add_special_tokens(ab), (std::vector<int32_t>{301, 'a', 'b', 300}));

  // Refused at load, naming the field.
  struct Bad {
    Json post;
    std::string needle;
  };
  Json missing = template_of(bos_a);
  missing["special_tokens"].erase("<s>");
  Json not_token = template_of(bos_a);
  not_token["special_tokens"]["<s>"] = special("<s>", {299});
  Json mismatched = template_of(bos_a);
  mismatched["special_tokens"]["<s>"]["tokens"] = Json::array();
  for (const Bad& b : std::vector<Bad>{
           {{{"type", "Unknown"}}, "post_processor: type: \"Unknown\" is not supported"},
           {{{"type", "Sequence"}, {"processors", {{{"type", "Whatever"}}}}}, "post_processor.processors[0]: type"},
           {missing, "special_tokens: \"<s>\" is used by the template but missing"},
           {not_token, "post_processor: adds token id 299, which is not a token"},
           {mismatched, "tokens: expected as many tokens as ids"},
           {template_of("<s> $A $A"), "expected exactly one $A piece, found 2"},
           {template_of("<s>"), "expected exactly one $A piece, found 0"},
           {template_of("$A $B"), "single-sequence template can only hold A"},
           {template_of(Json::array({{{"Sequence", {{"id", "C"}}}}})), "sequence \"C\" is not A or B"},
           {template_of(5), "single: expected an array of pieces"},
           {{{"type", "RobertaProcessing"}, {"cls", {"<s>", 300}}}, "sep: missing"},
           {{{"type", "BertProcessing"}, {"cls", {"<s>"}}, {"sep", {"</s>", 301}}}, "cls: expected [token, id]"},
       }) {
    Json bad = j;
    bad["post_processor"] = b.post;
    const std::string e = load_error(bad);
    EXPECT_NE(e.find(b.needle), std::string::npos) << b.post.dump() << " -> " << e;
  }
}

// Memory stays proportional to the file: an id space far beyond the tokens it holds is refused
// before anything is sized by it (one id of 16,777,215 used to take 1.2 GB).
TEST(TokenizerLoad, SparseIdSpaceIsRefusedBeforeAllocation) {
  Json vocab_id = tiny_tokenizer({});
  vocab_id["model"]["vocab"]["zz"] = (1 << 24) - 1;
  Json added_id = tiny_tokenizer({});
  added_id["added_tokens"] = Json::array({{{"id", (1 << 24) - 1}, {"content", "<pad>"}}});
  for (const Json& j : {vocab_id, added_id}) {
    const std::string e = load_error(j);
    EXPECT_NE(e.find("tokenizer.json: the largest token id is 16777215 but there are only 257 tokens: ids must stay "
                     "below 262144"),
              std::string::npos)
        << e;
  }
  // A trimmed tokenizer that keeps its special tokens at their real ids is fine.
  Json trimmed = tiny_tokenizer({});
  trimmed["added_tokens"] = Json::array({{{"id", 151645}, {"content", "<|im_end|>"}, {"special", true}}});
  Tokenizer t = tiny(trimmed);
  EXPECT_EQ(t.vocab_size(), 151646);
  EXPECT_EQ(t.encode("a<|im_end|>"), (std::vector<int32_t>{'a', 151645}));
}

namespace {

// A tokenizer.json whose first pre-tokenizer step is Split on `pattern` (declared above).
Json with_split(const std::string& pattern) {
  Json j = tiny_tokenizer({});
  j["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers",
                         {{{"type", "Split"}, {"pattern", {{"Regex", pattern}}}, {"behavior", "Isolated"}},
                          {{"type", "ByteLevel"}, {"use_regex", false}}}}};
  return j;
}

// Backtracks about 2^24 steps at the start of every run of 24 a's: under the per-match limit of
// 50,000,000 everywhere, some 20 s of CPU for this 2.5 KB text before the call's work was bounded.
const char* kPathological = "(?:a|a)*[xy]|[^a]+|a";
std::string pathological_text() {
  std::string s;
  for (int k = 0; k < 100; ++k) s += std::string(24, 'a') + " ";
  return s;
}

}  // namespace

TEST(TokenizerSplitRegexBudget, PathologicalPatternEndsTheCallEarly) {
  const Tokenizer t = tiny(with_split(kPathological));
  const std::string text = pathological_text();
  ASSERT_EQ(text.size(), 2500u);
  EXPECT_EQ(t.encode("aa xa").size(), 5u);  // fine where it does not backtrack much
  const auto t0 = std::chrono::steady_clock::now();
  try {
    t.encode(text);
    ADD_FAILURE() << "encoded";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadInput);
    EXPECT_NE(std::string(e.what()).find("pre_tokenizer.pretokenizers[0].pattern.Regex: the pattern needs more "
                                         "matching work than a 2500-byte text allows"),
              std::string::npos)
        << e.what();
  }
  // The budget: 2^20 + 1024 units a byte, about 3.6 million units here.
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(seconds, 2.0);
  // The same pattern through SplitRegex directly, with the budget visible.
  const SplitRegex r = SplitRegex::from_regex(kPathological, "p");
  std::vector<std::string_view> out;
  MatchBudget budget;
  EXPECT_THROW(r.split(text, out, budget), Error);
  EXPECT_LE(budget.spent(), MatchBudget::kBaseUnits + MatchBudget::kUnitsPerByte * text.size());
}

// Why the budget is far from real use: real split patterns need about one match-limit unit a byte
// and under 20 at most positions (a long whitespace run needs one a character at its start);
// charged at least 32 a try and four times a heavy position's need, they spend under 40 a byte,
// whatever the text: the 1024 a byte allowed leave a wide margin for patterns not seen here.
TEST(TokenizerSplitRegexBudget, RealPatternsSpendFewUnitsPerByte) {
  std::vector<std::pair<std::string, std::string>> patterns;
  for (const char* model : {"qwen3", "llama3"}) {
    const Json tj = test::read_json_file(test::model_dir(model) / "tokenizer.json");
    patterns.emplace_back(model, tj["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"].get<std::string>());
  }
  // GPT-4o's (tiktoken o200k_base), the most involved pattern in wide use.
  patterns.emplace_back("gpt-4o",
                        "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+"
                        "(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+"
                        "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|"
                        "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+");
  patterns.emplace_back("gpt2", "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+");
  std::vector<std::string> texts;
  for (const Json& s : test::read_json_file(test::tokenizer_test_dir() / "corpus.json")) texts.push_back(s.get<std::string>());
  for (const char* unit : {" ", "a", "\n", "7", "\r\n", " \t", "!?", "I'M ", "\xE4\xB8\xAD", "e\xCC\x81", "HELLOworld ",
                           "\xC3\x80"}) {
    std::string run;
    while (run.size() < 100000) run += unit;
    texts.push_back(run);
    texts.push_back(run + "word");
  }
  for (const auto& [name, pattern] : patterns) {
    const SplitRegex r = SplitRegex::from_regex(pattern, name);
    double worst = 0;
    for (const std::string& text : texts) {
      std::vector<std::string_view> out;
      MatchBudget budget;
      r.split(text, out, budget);
      worst = std::max(worst, double(budget.spent()) / double(text.size() + 1));
    }
    std::printf("[ %s ] at most %.1f match-limit units per byte\n", name.c_str(), worst);
    EXPECT_LT(worst, MatchBudget::kUnitsPerByte / 16.0) << name;
  }
}
