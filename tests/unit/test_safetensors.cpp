// The safetensors reader against what huggingface/safetensors validates (and a bit more: duplicate
// keys, bounded depth, no NUL padding). Files are written by hand here (model_test_util.h), not
// by the writer under test, except in the writer's own round-trip test.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <limits>

#include "agentcompile/model/safetensors.h"
#include "model_test_util.h"

using namespace ac;
using namespace ac::test;

namespace {

SafetensorsHeader parse(const std::string& bytes) {
  return parse_safetensors(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "m.safetensors");
}

std::string expect_reject(const std::string& bytes, std::initializer_list<std::string> needles) {
  return expect_bad_input([&] { parse(bytes); }, needles);
}

// One tensor entry as JSON text.
std::string entry(const std::string& name, const std::string& dtype, const std::string& shape, uint64_t b, uint64_t e) {
  return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":[" + std::to_string(b) +
         "," + std::to_string(e) + "]}";
}

const std::vector<TestTensor> kTwo = {{"a", "F32", {2, 3}, ""}, {"b", "BF16", {4}, ""}};

}  // namespace

TEST(Safetensors, ParsesAValidFile) {
  std::string bytes = st_file(kTwo, R"({"format":"pt","note":"x"})");
  SafetensorsHeader h = parse(bytes);
  ASSERT_EQ(h.tensors.size(), 2u);
  EXPECT_EQ(h.tensors[0].name, "a");
  EXPECT_EQ(h.tensors[0].dtype, DType::F32);
  EXPECT_EQ(h.tensors[0].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(h.tensors[0].begin, 0u);
  EXPECT_EQ(h.tensors[0].end, 24u);
  EXPECT_EQ(h.tensors[0].numel(), 6);
  EXPECT_EQ(h.tensors[0].shape_str(), "[2, 3]");
  EXPECT_EQ(h.tensors[1].name, "b");
  EXPECT_EQ(h.tensors[1].dtype, DType::BF16);
  EXPECT_EQ(h.tensors[1].begin, 24u);
  EXPECT_EQ(h.tensors[1].nbytes(), 8u);
  EXPECT_EQ(h.metadata.at("format"), "pt");
  EXPECT_EQ(h.metadata.at("note"), "x");
  uint64_t header_len = bytes.size() - 32 - 8;
  EXPECT_EQ(h.data_offset, 8 + header_len);
  EXPECT_EQ(h.tensors[0].data, reinterpret_cast<const uint8_t*>(bytes.data()) + h.data_offset);
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(load_as_f32(h.tensors[0].data, DType::F32, i), pattern_value("a", i));
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(load_as_f32(h.tensors[1].data, DType::BF16, i), pattern_value("b", i));
}

TEST(Safetensors, TensorsAreSortedByOffsetNotByName) {
  // "z" stored first, "a" second: the header lists them in key order but the data order wins.
  std::string header = "{" + entry("a", "U8", "[2]", 3, 5) + "," + entry("z", "U8", "[3]", 0, 3) + "}";
  const std::string bytes = st_bytes(header, "zzzaa");  // outlives h, whose data points into it
  SafetensorsHeader h = parse(bytes);
  ASSERT_EQ(h.tensors.size(), 2u);
  EXPECT_EQ(h.tensors[0].name, "z");
  EXPECT_EQ(h.tensors[1].name, "a");
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(h.tensors[1].data), 2), "aa");
}

TEST(Safetensors, UnalignedDataReadsCorrectly) {
  // Header lengths 8k+1 .. 8k+7 put the data at every misalignment; values must still read exactly.
  for (size_t extra = 0; extra < 8; ++extra) {
    std::vector<TestTensor> ts = {{"odd_f32", "F32", {5}, ""}, {"odd_f16", "F16", {3}, ""}, {"odd_bf16", "BF16", {7}, ""},
                                  {"tail_f32", "F32", {9}, ""}};
    std::string bytes = st_file(ts, "", 1);
    uint64_t n = uint8_t(bytes[0]) | (uint64_t(uint8_t(bytes[1])) << 8);
    // Re-pad so the header length is exactly 8k + extra.
    std::string header = bytes.substr(8, n);
    while (header.size() % 8 != extra) header.push_back(' ');
    std::string data = bytes.substr(8 + n);
    std::string file = st_bytes(header, data, 1);
    SafetensorsHeader h = parse(file);
    ASSERT_EQ(h.data_offset % 8, extra);
    for (const auto& t : h.tensors) {
      for (int64_t i = 0; i < t.numel(); ++i)
        ASSERT_EQ(load_as_f32(t.data, t.dtype, size_t(i)), pattern_value(t.name, size_t(i))) << t.name << " " << i;
    }
  }
}

TEST(Safetensors, ZeroSizedTensorsAndScalars) {
  std::string header = "{" + entry("empty_first", "F32", "[0]", 0, 0) + "," + entry("s", "F32", "[]", 0, 4) + "," +
                       entry("empty_mid", "BF16", "[4,0,2]", 4, 4) + "," + entry("empty_mid2", "F64", "[0]", 4, 4) + "," +
                       entry("u", "U8", "[1]", 4, 5) + "," + entry("empty_last", "I64", "[0,9]", 5, 5) + "}";
  SafetensorsHeader h = parse(st_bytes(header, "abcde"));
  ASSERT_EQ(h.tensors.size(), 6u);
  int zero = 0;
  for (const auto& t : h.tensors) zero += t.numel() == 0;
  EXPECT_EQ(zero, 4);
  EXPECT_EQ(h.tensors.back().begin, 5u);
  // A header with no tensors and no data is a valid (empty) file.
  EXPECT_TRUE(parse(st_bytes("{}")).tensors.empty());
  EXPECT_TRUE(parse(st_bytes(R"({"__metadata__":{"a":"b"}})")).tensors.empty());
  EXPECT_TRUE(parse(st_bytes(R"({"__metadata__":null})")).metadata.empty());
}

TEST(Safetensors, EveryKnownDtypeHasItsSize) {
  const std::pair<const char*, size_t> dtypes[] = {
      {"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8},     {"I32", 4},     {"I16", 2},    {"I8", 1},
      {"U64", 8}, {"U32", 4}, {"U16", 2}, {"U8", 1},   {"BOOL", 1},    {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"F8_E8M0", 1}};
  for (const auto& [name, size] : dtypes) {
    SafetensorsHeader h = parse(st_bytes("{" + entry("t", name, "[3]", 0, 3 * size) + "}", std::string(3 * size, '\0')));
    ASSERT_EQ(h.tensors.size(), 1u);
    EXPECT_EQ(dtype_safetensors_name(h.tensors[0].dtype), name);
    EXPECT_EQ(dtype_size(h.tensors[0].dtype), size) << name;
    // The same entry with one byte too few is a size mismatch.
    expect_reject(st_bytes("{" + entry("t", name, "[3]", 0, 3 * size - 1) + "}", std::string(3 * size - 1, '\0')),
                  {"\"t\"", "data_offsets", "needs " + std::to_string(3 * size)});
  }
  for (const char* bad : {"F4", "bf16", "float32", "", "Q8_0", "F8_E4M3FN", "C64", "BF16 "})
    expect_reject(st_bytes("{" + entry("t", bad, "[1]", 0, 1) + "}", "x"), {"\"t\"", "unknown dtype"});
}

TEST(Safetensors, FramingErrors) {
  for (size_t n = 0; n < 8; ++n) expect_reject(std::string(n, '\x01'), {"m.safetensors", std::to_string(n) + " bytes", "too small"});
  // Header lengths beyond the 100 MB limit are refused from the 8 bytes alone.
  for (uint64_t n : {uint64_t(100'000'001), uint64_t(1) << 40, uint64_t(1) << 63, std::numeric_limits<uint64_t>::max()})
    expect_reject(u64_le(n) + "{}", {"m.safetensors", "header length", "100 MB"});
  // At the limit it is only "past the end" of this short buffer.
  expect_reject(u64_le(100'000'000) + "{}      ", {"runs past the end of the file (16 bytes)"});
  expect_reject(u64_le(9) + "{}      ", {"runs past the end"});
  expect_reject(u64_le(0), {"does not start with '{'"});
  expect_reject(st_bytes(" {}"), {"does not start with '{'"});
  expect_reject(st_bytes("\xef\xbb\xbf{}"), {"does not start with '{'"});
  expect_reject(st_bytes("[]"), {"does not start with '{'"});
  expect_reject(st_bytes("{"), {"m.safetensors: header", "invalid JSON"});
  expect_reject(st_bytes("{} {}"), {"invalid JSON"});
  expect_reject(st_bytes(std::string("{}\0\0\0\0\0\0", 8), "", 1), {"invalid JSON", "NUL"});
  // A header length exactly reaching the end with no data is fine.
  EXPECT_NO_THROW(parse(u64_le(2) + "{}"));
}

TEST(Safetensors, HeaderJsonErrors) {
  expect_reject(st_bytes("{" + entry("a", "U8", "[1]", 0, 1) + "," + entry("a", "U8", "[1]", 1, 2) + "}", "xy"),
                {"duplicate key", "\"a\""});
  // Nesting is bounded by the format's grammar: a container where a string belongs is refused at once.
  expect_reject(st_bytes(std::string(R"({"__metadata__":{"k":)") + std::string(100000, '[') + std::string(100000, ']') + "}}"),
                {"__metadata__", "\"k\"", "not a string"});
  expect_reject(st_bytes(std::string(R"({"t":{"shape":)") + std::string(100000, '[') + std::string(100000, ']') + "}}"),
                {"\"t\"", "shape: dimension"});
  expect_reject(st_bytes(R"({"t":{"dtype":{"a":"F32"}}})"), {"\"t\"", "dtype: missing or not a string"});
  expect_reject(st_bytes(R"({"__metadata__":{"a":"b"},"__metadata__":{}})"), {"duplicate key \"__metadata__\""});
  expect_reject(st_bytes(R"({"__metadata__":{"a":"b","a":"c"}})"), {"duplicate key \"a\""});
  expect_reject(st_bytes(R"({"t":{"dtype":"U8","dtype":"U8","shape":[0],"data_offsets":[0,0]}})"), {"duplicate key \"dtype\""});
  expect_reject(st_bytes("{\"\xc3\x28\":{}}"), {"invalid JSON", "UTF-8"});
  expect_reject(st_bytes(R"({"__metadata__":{"format":1}})"), {"__metadata__", "\"format\"", "not a string"});
  expect_reject(st_bytes(R"({"__metadata__":{"format":null}})"), {"__metadata__", "not a string"});
  expect_reject(st_bytes(R"({"__metadata__":{"format":{"a":"b"}}})"), {"__metadata__"});
  expect_reject(st_bytes(R"({"__metadata__":["pt"]})"), {"__metadata__", "expected an object"});
  expect_reject(st_bytes(R"({"__metadata__":"pt"})"), {"__metadata__"});
}

TEST(Safetensors, EntryErrors) {
  auto one = [](const std::string& body) { return st_bytes("{\"t\":" + body + "}", "abcd"); };
  expect_reject(one("5"), {"tensor \"t\"", "expected an object"});
  expect_reject(one("[]"), {"tensor \"t\"", "expected an object"});
  expect_reject(one(R"({"shape":[4],"data_offsets":[0,4]})"), {"\"t\"", "dtype"});
  expect_reject(one(R"({"dtype":3,"shape":[4],"data_offsets":[0,4]})"), {"\"t\"", "dtype"});
  expect_reject(one(R"({"dtype":"U8","data_offsets":[0,4]})"), {"\"t\"", "shape"});
  expect_reject(one(R"({"dtype":"U8","shape":4,"data_offsets":[0,4]})"), {"\"t\"", "shape"});
  expect_reject(one(R"({"dtype":"U8","shape":[4]})"), {"\"t\"", "data_offsets"});
  expect_reject(one(R"({"dtype":"U8","shape":[4],"data_offsets":[0]})"), {"\"t\"", "data_offsets"});
  expect_reject(one(R"({"dtype":"U8","shape":[4],"data_offsets":[0,4,4]})"), {"\"t\"", "data_offsets"});
  expect_reject(one(R"({"dtype":"U8","shape":[4],"data_offsets":[0.0,4.0]})"), {"\"t\"", "data_offsets"});
  expect_reject(one(R"({"dtype":"U8","shape":[4],"data_offsets":["0","4"]})"), {"\"t\"", "data_offsets"});
  expect_reject(one(R"({"dtype":"U8","shape":[4],"data_offsets":[-1,3]})"), {"\"t\"", "data_offsets"});
  expect_reject(one(R"({"dtype":"U8","shape":[4],"data_offsets":[0,4],"extra":1})"), {"\"t\"", "unknown field \"extra\""});
  expect_reject(one(R"({"dtype":"U8","shape":[-4],"data_offsets":[0,4]})"), {"\"t\"", "shape", "-4"});
  expect_reject(one(R"({"dtype":"U8","shape":[4.0],"data_offsets":[0,4]})"), {"\"t\"", "shape", "4.0"});
  expect_reject(one(R"({"dtype":"U8","shape":[true],"data_offsets":[0,4]})"), {"\"t\"", "shape"});
  expect_reject(one(R"({"dtype":"U8","shape":[null],"data_offsets":[0,4]})"), {"\"t\"", "shape"});
  // Rank: 8 is the most accepted, 9 is refused.
  EXPECT_NO_THROW(parse(one(R"({"dtype":"U8","shape":[1,1,1,1,1,1,2,2],"data_offsets":[0,4]})")));
  expect_reject(one(R"({"dtype":"U8","shape":[1,1,1,1,1,1,1,2,2],"data_offsets":[0,4]})"), {"\"t\"", "rank 9"});
  // A long shape array is refused at its ninth element, before it is stored.
  std::string long_shape = "[1";
  for (int i = 0; i < 100000; ++i) long_shape += ",1";
  long_shape += "]";
  expect_reject(one(R"({"dtype":"U8","shape":)" + long_shape + R"(,"data_offsets":[0,4]})"), {"\"t\"", "rank 9"});
}

TEST(Safetensors, SizeArithmeticIsOverflowChecked) {
  auto shaped = [](const std::string& dtype, const std::string& shape, uint64_t end) {
    return st_bytes("{" + entry("t", dtype, shape, 0, end) + "}");
  };
  // 2^32 * 2^32 overflows the element count.
  expect_reject(shaped("U8", "[4294967296,4294967296]", 0), {"\"t\"", "overflow"});
  expect_reject(shaped("U8", "[4294967296,4294967296,0]", 0), {"\"t\"", "overflow"});
  // Element count fits, bytes do not: 2^62 * 8.
  expect_reject(shaped("F64", "[4611686018427387904]", 0), {"\"t\"", "overflow"});
  // Element counts beyond int64 (the count is used signed later) are refused.
  expect_reject(shaped("U8", "[9223372036854775808]", 0), {"\"t\""});
  expect_reject(shaped("U8", "[18446744073709551615]", 0), {"\"t\""});
  expect_reject(shaped("U8", "[18446744073709551616]", 0), {"\"t\"", "shape"});
  // A zero dimension makes any other dimension harmless.
  EXPECT_NO_THROW(parse(shaped("F64", "[0,4611686018427387904,4611686018427387904]", 0)));
  // Offsets near 2^64 neither wrap nor pass: the size is right but the begin leaves a gap.
  uint64_t top = std::numeric_limits<uint64_t>::max();
  expect_reject(st_bytes("{" + entry("t", "U8", "[1]", top - 1, top) + "}"), {"\"t\"", "gap"});
  expect_reject(st_bytes("{" + entry("t", "U8", "[2]", top - 1, 0) + "}"), {"\"t\"", "before begin"});
  // Large but consistent sizes in a tiny file: truncated, not allocated.
  expect_reject(shaped("F32", "[1073741824,1024]", uint64_t(1) << 42), {"\"t\"", "truncated"});
}

TEST(Safetensors, OffsetsMustTileTheDataExactly) {
  const std::string data = "0123456789";
  auto two = [&](uint64_t b0, uint64_t e0, uint64_t b1, uint64_t e1) {
    return st_bytes("{" + entry("x", "U8", "[" + std::to_string(e0 - b0) + "]", b0, e0) + "," +
                        entry("y", "U8", "[" + std::to_string(e1 - b1) + "]", b1, e1) + "}",
                    data);
  };
  EXPECT_NO_THROW(parse(two(0, 4, 4, 10)));
  expect_reject(two(0, 4, 5, 10), {"\"y\"", "gap", "ends at 4"});
  expect_reject(two(0, 5, 4, 10), {"\"y\"", "overlapping", "ends at 5"});
  expect_reject(two(1, 5, 5, 10), {"\"x\"", "gap"});
  expect_reject(two(0, 4, 4, 9), {"trailing bytes", "cover 9", "holds 10"});
  expect_reject(two(0, 4, 4, 11), {"\"y\"", "truncated"});
  expect_reject(two(0, 10, 0, 10), {"overlapping"});  // the same bytes twice
  expect_reject(st_bytes("{" + entry("x", "U8", "[4]", 4, 0) + "}", data), {"\"x\"", "before begin"});
  expect_reject(st_bytes("{}", "x"), {"trailing bytes"});
}

TEST(Safetensors, ManyTensorsParseInLinearTime) {
  // 300k entries (a 16 MB header): read as a stream, not as a document, in well under a second
  // (as a DOM a 100 MB header of such entries took 13 s and 1.4 GB).
  std::string header = "{";
  for (int i = 0; i < 300000; ++i) header += (i ? "," : "") + entry("t" + std::to_string(i), "F32", "[0]", 0, 0);
  header += "}";
  std::string bytes = st_bytes(header);
  auto t0 = std::chrono::steady_clock::now();
  SafetensorsHeader h = parse(bytes);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
  EXPECT_EQ(h.tensors.size(), 300000u);
  // A duplicate among them is still found.
  std::string dup = header;
  dup.insert(1, entry("t123456", "U8", "[0]", 0, 0) + ",");
  expect_reject(st_bytes(dup), {"duplicate key \"t123456\""});
}

TEST(Safetensors, EveryTruncationAndByteFlipIsACleanError) {
  // A miniature fuzz run in the unit tests: no prefix of a valid file and no single-byte change
  // may crash or throw anything but a BadInput error.
  std::string good = st_file(kTwo, R"({"format":"pt"})");
  for (size_t n = 0; n < good.size(); ++n) {
    std::string cut = good.substr(0, n);
    try {
      parse(cut);
      ADD_FAILURE() << "prefix of " << n << " bytes parsed";
    } catch (const Error& e) {
      ASSERT_EQ(e.kind(), ErrorKind::BadInput);
    }
  }
  size_t header_end = 8 + (uint8_t(good[0]) | (size_t(uint8_t(good[1])) << 8));
  for (size_t i = 0; i < header_end; ++i) {
    for (unsigned char v : {0x00, 0x01, 0x22, 0x2c, 0x30, 0x39, 0x5b, 0x5d, 0x7b, 0x7d, 0x80, 0xff}) {
      std::string m = good;
      m[i] = static_cast<char>(v);
      try {
        SafetensorsHeader h = parse(m);
        // Accepted: then every tensor lies inside the buffer.
        for (const auto& t : h.tensors) ASSERT_LE(h.data_offset + t.end, m.size());
      } catch (const Error& e) {
        ASSERT_EQ(e.kind(), ErrorKind::BadInput);
      }
    }
  }
}

TEST(Safetensors, WriterRoundTrips) {
  std::vector<float> a(6, 1.5f);
  std::vector<uint16_t> b(4, 0x3f80);
  std::vector<TensorToWrite> ts = {{"w.a", DType::F32, {2, 3}, a.data()}, {"w.b", DType::BF16, {4}, b.data()},
                                   {"w.empty", DType::F16, {0, 7}, nullptr}};
  std::string header = safetensors_header_bytes(ts, {{"format", "pt"}});
  EXPECT_EQ((header.size() - 8) % 8, 0u);
  std::string file = header + std::string(reinterpret_cast<const char*>(a.data()), 24) +
                     std::string(reinterpret_cast<const char*>(b.data()), 8);
  SafetensorsHeader h = parse(file);
  ASSERT_EQ(h.tensors.size(), 3u);
  EXPECT_EQ(h.metadata.at("format"), "pt");
  EXPECT_EQ(h.tensors[0].name, "w.a");
  EXPECT_EQ(load_as_f32(h.tensors[0].data, DType::F32, 5), 1.5f);
  EXPECT_EQ(h.tensors[1].name, "w.b");
  EXPECT_EQ(load_as_f32(h.tensors[1].data, DType::BF16, 3), 1.0f);
  EXPECT_EQ(h.tensors[2].name, "w.empty");
  EXPECT_EQ(h.tensors[2].nbytes(), 0u);
}

TEST(SafetensorsFile, MapsAndNamesTheFile) {
  TempDir dir;
  write_bytes(dir / "m.safetensors", st_file(kTwo));
  SafetensorsFile f(dir / "m.safetensors");
  ASSERT_EQ(f.header().tensors.size(), 2u);
  EXPECT_EQ(f.header().tensors[0].file, (dir / "m.safetensors").string());
  EXPECT_EQ(load_as_f32(f.header().tensors[1].data, DType::BF16, 2), pattern_value("b", 2));

  expect_bad_input([&] { SafetensorsFile g(dir / "absent.safetensors"); }, {"absent.safetensors", "cannot open"});
  fs::create_directory(dir / "d.safetensors");
  expect_bad_input([&] { SafetensorsFile g(dir / "d.safetensors"); }, {"d.safetensors", "not a regular file"});
  write_bytes(dir / "empty.safetensors", "");
  expect_bad_input([&] { SafetensorsFile g(dir / "empty.safetensors"); }, {"empty.safetensors", "too small"});
  // A FIFO must be refused at once, not waited on.
  ASSERT_EQ(::mkfifo((dir / "p.safetensors").c_str(), 0600), 0);
  expect_bad_input([&] { SafetensorsFile g(dir / "p.safetensors"); }, {"p.safetensors", "not a regular file"});
}
