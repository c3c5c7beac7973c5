// Strict JSON for untrusted files: what the reference parsers reject is rejected here (invalid
// UTF-8, duplicate keys, raw NULs, trailing text), limits hold, the cost is linear, and errors are
// one printable line naming the field.
#include <gtest/gtest.h>

#include <chrono>

#include "agentcompile/core/json.h"
#include "model_test_util.h"

using namespace ac;
using ac::test::expect_bad_input;

namespace {

Json strict(const std::string& text, JsonLimits limits = {}) { return parse_json_strict(text, "f.json", limits); }

bool all_printable_ascii(const std::string& s) {
  for (unsigned char c : s)
    if (c < 0x20 || c >= 0x7f) return false;
  return true;
}

}  // namespace

TEST(JsonStrict, ParsesValuesFaithfully) {
  Json j = strict(R"({"a": 1, "b": [true, null, -2.5, "x\u00e9"], "c": {"d": 18446744073709551615}} )");
  EXPECT_EQ(j["a"].get<int64_t>(), 1);
  ASSERT_EQ(j["b"].size(), 4u);
  EXPECT_TRUE(j["b"][0].get<bool>());
  EXPECT_TRUE(j["b"][1].is_null());
  EXPECT_EQ(j["b"][2].get<double>(), -2.5);
  EXPECT_EQ(j["b"][3].get<std::string>(), "x\xc3\xa9");
  EXPECT_EQ(j["c"]["d"].get<uint64_t>(), 18446744073709551615ull);
  EXPECT_EQ(strict("[]"), Json::array());
  EXPECT_EQ(strict("  7 \n"), Json(7));
  EXPECT_EQ(strict(R"("s")"), Json("s"));
}

TEST(JsonStrict, RejectsDuplicateKeysAtAnyDepth) {
  expect_bad_input([] { strict(R"({"a": 1, "a": 2})"); }, {"f.json", "duplicate key", "\"a\""});
  expect_bad_input([] { strict(R"({"x": {"k": 1, "j": 2, "k": 3}})"); }, {"duplicate key", "\"k\""});
  expect_bad_input([] { strict(R"([{"k": 1}, {"k": 1, "k": 1}])"); }, {"duplicate key"});
  // The same key in sibling objects is fine.
  Json j = strict(R"({"x": {"k": 1}, "y": {"k": 2}, "z": [{"k": 3}, {"k": 4}]})");
  EXPECT_EQ(j["y"]["k"].get<int>(), 2);
  EXPECT_EQ(j["z"][1]["k"].get<int>(), 4);
}

TEST(JsonStrict, DepthLimitIsExact) {
  JsonLimits lim{.max_depth = 3};
  EXPECT_NO_THROW(strict("[[[]]]", lim));
  EXPECT_NO_THROW(strict(R"({"a": {"b": [1]}})", lim));
  expect_bad_input([&] { strict("[[[[]]]]", lim); }, {"nested deeper than 3"});
  expect_bad_input([&] { strict(R"({"a": {"b": {"c": {}}}})", lim); }, {"nested deeper than 3"});
  // The default bound stops a depth bomb long before the stack is at risk.
  std::string bomb(200000, '[');
  bomb += std::string(200000, ']');
  expect_bad_input([&] { strict(bomb); }, {"nested deeper than 64"});
}

TEST(JsonStrict, ArrayLimitIsExactAndPerArray) {
  JsonLimits lim{.max_array_size = 3};
  EXPECT_NO_THROW(strict("[1, 2, 3]", lim));
  EXPECT_NO_THROW(strict(R"({"a": [1, 2, 3], "b": [[1, 2, 3], [4, 5, 6]]})", lim));
  expect_bad_input([&] { strict("[1, 2, 3, 4]", lim); }, {"array longer than 3"});
  expect_bad_input([&] { strict(R"({"shape": [1, 2, 3, 4]})", lim); }, {"array longer than 3", "shape"});
}

TEST(JsonStrict, RejectsInvalidUtf8) {
  const char* bad[] = {
      "\"\x80\"",                  // lone continuation byte
      "\"\xc0\xaf\"",              // overlong '/'
      "\"\xe0\x80\xaf\"",          // overlong, 3 bytes
      "\"\xed\xa0\x80\"",          // UTF-16 surrogate encoded directly
      "\"\xf4\x90\x80\x80\"",      // above U+10FFFF
      "\"\xe2\x82\"",              // truncated sequence
      "\"\xf8\x88\x80\x80\x80\"",  // 5-byte form
      "{\"k\xff\": 1}",            // in a key
  };
  for (const char* text : bad) {
    std::string msg = expect_bad_input([&] { strict(text); }, {"f.json", "invalid JSON", "UTF-8"});
    EXPECT_TRUE(all_printable_ascii(msg)) << msg;
  }
  // Valid multi-byte text and escaped pairs are accepted.
  Json ok = strict("[\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\", \"\\ud83d\\ude00\"]");
  EXPECT_EQ(ok[0].get<std::string>(), "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
  EXPECT_EQ(ok[1].get<std::string>(), "\xf0\x9f\x98\x80");
  expect_bad_input([] { strict(R"(["\ud800"])"); }, {"surrogate"});
  expect_bad_input([] { strict(R"(["\udc00x"])"); }, {"surrogate"});
}

TEST(JsonStrict, RejectsNulBytesAnywhere) {
  // nlohmann treats a NUL as the end of the text; these must not parse as {"a": 1}.
  std::string after("{\"a\": 1}\0garbage", 16);
  expect_bad_input([&] { strict(after); }, {"NUL byte at offset 8"});
  std::string inside("{\"a\0\": 1}", 9);
  expect_bad_input([&] { strict(inside); }, {"NUL byte"});
  std::string pad("{}\0\0\0\0\0\0", 8);
  expect_bad_input([&] { strict(pad); }, {"NUL byte at offset 2"});
}

TEST(JsonStrict, RejectsWhatJsonDoesNotAllow) {
  for (const char* text : {"", "   ", "{", "{} {}", "{} x", "[1,]", "{\"a\":1,}", "NaN", "[Infinity]", "[-Infinity]",
                           "{\"a\": 01}", "// c\n{}", "/* c */ {}", "{'a': 1}", "{a: 1}", "[\"tab\there\"]",
                           "\"\\x41\""}) {
    expect_bad_input([&] { strict(text); }, {"f.json", "invalid JSON"});
  }
}

TEST(JsonStrict, NumberOverflowNamesTheKey) {
  expect_bad_input([] { strict(R"({"hidden_size": 1e999})"); }, {"invalid JSON", "1e999", "hidden_size"});
  // Integers beyond 64 bits are kept as floats (the typed readers reject them).
  Json j = strict(R"({"n": 123456789012345678901234567890})");
  EXPECT_TRUE(j["n"].is_number_float());
}

TEST(JsonStrict, ErrorsAreOnePrintableLine) {
  std::string msg = expect_bad_input([] { strict("{\"a\":\n\n \"b\x01\"}"); }, {"invalid JSON", "line 3"});
  EXPECT_TRUE(all_printable_ascii(msg)) << msg;
}

// The parser quotes the token it was reading: a 100 KB string with a bad byte at its end stays a
// short message.
TEST(JsonStrict, ErrorsAreBounded) {
  const std::string long_string = "{\"k\": \"" + std::string(100000, 'x') + "\x01\"}";
  std::string msg = expect_bad_input([&] { strict(long_string); }, {"invalid JSON"});
  EXPECT_LT(msg.size(), 600u) << msg.substr(0, 200);
  msg = json_error_text("[json.exception.parse_error.101] " + std::string(5000, 'y'));
  EXPECT_LT(msg.size(), 400u);
}

TEST(JsonStrict, CostIsLinearInObjectCount) {
  // nlohmann's callback parser rescans the parent on every closed object: 200k tensor-like
  // entries took minutes. Linear parsing does this in well under a second.
  std::string text = "{";
  for (int i = 0; i < 200000; ++i)
    text += (i ? "," : "") + std::string("\"t") + std::to_string(i) + "\":{\"dtype\":\"F32\",\"shape\":[1]}";
  text += "}";
  auto t0 = std::chrono::steady_clock::now();
  Json j = strict(text);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(j.size(), 200000u);
  EXPECT_LT(s, 10.0);
  std::string arr = "[";
  for (int i = 0; i < 300000; ++i) arr += (i ? ",{}" : "{}");
  arr += "]";
  t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(strict(arr).size(), 300000u);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
}

TEST(JsonReaders, IntegersAreRangeCheckedAndNamed) {
  Json j = strict(R"({"n": 2048, "f": 2048.0, "half": 8.5, "s": "8", "b": true, "neg": -3, "big": 18446744073709551615,
                     "nul": null, "arr": [1]})");
  EXPECT_EQ(json_int(j, "c.json", "n", 1, 4096), 2048);
  EXPECT_EQ(json_int(j, "c.json", "f", 1, 4096), 2048);  // an integral float is an integer
  expect_bad_input([&] { json_int(j, "c.json", "n", 1, 1024); }, {"c.json", "n: 2048 is out of range [1, 1024]"});
  expect_bad_input([&] { json_int(j, "c.json", "half", 1, 100); }, {"c.json", "half: expected an integer, got 8.5"});
  expect_bad_input([&] { json_int(j, "c.json", "s", 1, 100); }, {"s: expected an integer, got \"8\""});
  expect_bad_input([&] { json_int(j, "c.json", "b", 0, 1); }, {"b: expected an integer, got true"});
  expect_bad_input([&] { json_int(j, "c.json", "neg", 0, 10); }, {"neg: -3 is out of range"});
  expect_bad_input([&] { json_int(j, "c.json", "big", 0, INT64_MAX); }, {"big: expected an integer"});
  expect_bad_input([&] { json_int(j, "c.json", "absent", 0, 1); }, {"c.json", "absent: missing"});
  expect_bad_input([&] { json_int(j, "c.json", "nul", 0, 1); }, {"nul: missing"});
  expect_bad_input([&] { json_int(j, "c.json", "arr", 0, 1); }, {"arr: expected an integer, got [1]"});
  EXPECT_FALSE(json_opt_int(j, "c.json", "absent", 0, 1).has_value());
  EXPECT_FALSE(json_opt_int(j, "c.json", "nul", 0, 1).has_value());
  expect_bad_input([&] { json_opt_int(j, "c.json", "s", 0, 100); }, {"s: expected an integer"});
  expect_bad_input([&] { json_int(Json::array(), "c.json", "n", 0, 1); }, {"c.json", "expected a JSON object"});
}

TEST(JsonReaders, OtherTypes) {
  Json j = strict(R"({"x": 1.5, "i": 3, "s": "str", "t": true, "n": null})");
  EXPECT_EQ(json_number(j, "c", "x"), 1.5);
  EXPECT_EQ(json_number(j, "c", "i"), 3.0);
  EXPECT_EQ(json_string(j, "c", "s"), "str");
  EXPECT_EQ(json_opt_bool(j, "c", "t"), std::optional<bool>(true));
  EXPECT_FALSE(json_opt_bool(j, "c", "n").has_value());
  EXPECT_FALSE(json_opt_string(j, "c", "absent").has_value());
  EXPECT_FALSE(json_opt_number(j, "c", "n").has_value());
  expect_bad_input([&] { json_number(j, "c", "s"); }, {"s: expected a number, got \"str\""});
  expect_bad_input([&] { json_string(j, "c", "x"); }, {"x: expected a string, got 1.5"});
  expect_bad_input([&] { json_opt_bool(j, "c", "i"); }, {"i: expected true or false, got 3"});
}

TEST(JsonReaders, HugeValuesAreCutInMessages) {
  Json j = {{"k", std::string(1 << 20, 'a')}};
  std::string msg = expect_bad_input([&] { json_int(j, "c", "k", 0, 1); }, {"k: expected an integer", "..."});
  EXPECT_LT(msg.size(), 300u);
}

TEST(JsonAsInt, Boundaries) {
  EXPECT_EQ(json_as_int(Json(5), 0, 5), std::optional<int64_t>(5));
  EXPECT_FALSE(json_as_int(Json(6), 0, 5).has_value());
  EXPECT_FALSE(json_as_int(Json(-1), 0, 5).has_value());
  EXPECT_EQ(json_as_int(Json(INT64_MIN), INT64_MIN, 0), std::optional<int64_t>(INT64_MIN));
  EXPECT_EQ(json_as_int(Json(uint64_t(INT64_MAX)), 0, INT64_MAX), std::optional<int64_t>(INT64_MAX));
  EXPECT_FALSE(json_as_int(Json(uint64_t(INT64_MAX) + 1), 0, INT64_MAX).has_value());
  EXPECT_FALSE(json_as_int(Json(1e19), 0, INT64_MAX).has_value());
  EXPECT_FALSE(json_as_int(Json(0.5), 0, 5).has_value());
  EXPECT_FALSE(json_as_int(Json(std::nan("")), 0, 5).has_value());
  EXPECT_FALSE(json_as_int(Json(INFINITY), 0, INT64_MAX).has_value());
  EXPECT_FALSE(json_as_int(Json("3"), 0, 5).has_value());
  EXPECT_FALSE(json_as_int(Json(true), 0, 5).has_value());
}

TEST(JsonQuote, EscapesCutsAndRepairs) {
  EXPECT_EQ(json_quote("plain"), "\"plain\"");
  EXPECT_EQ(json_quote("a\nb\"c"), "\"a\\nb\\\"c\"");
  EXPECT_EQ(json_quote(std::string("\x1b[31m")), "\"\\u001b[31m\"");
  EXPECT_EQ(json_quote("\xc3\xa9"), "\"\xc3\xa9\"");
  // Invalid UTF-8 is replaced (U+FFFD), never passed through.
  EXPECT_EQ(json_quote("a\xff"), "\"a\xef\xbf\xbd\"");
  EXPECT_EQ(json_quote(std::string(500, 'x'), 10), "\"" + std::string(10, 'x') + "...\"");
  // A cut never splits a UTF-8 sequence.
  std::string q = json_quote("aaaaaaaaa\xc3\xa9", 10);
  EXPECT_EQ(q.find("\xef\xbf\xbd"), std::string::npos) << q;
  EXPECT_EQ(json_brief(Json::array({1, 2, 3})), "[1,2,3]");
  EXPECT_EQ(json_brief(Json(std::string(100, 'y')), 5), "\"yyyy...");
}
