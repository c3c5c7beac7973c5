// The weight store: one model.safetensors, or shards named by model.safetensors.index.json whose
// names cannot leave the folder and whose contents must agree with the index.
#include <gtest/gtest.h>

#include "agentcompile/model/weights.h"
#include "model_test_util.h"

using namespace ac;
using namespace ac::test;

namespace {

const std::vector<TestTensor> kA = {{"t.a", "F32", {2}, ""}, {"t.b", "BF16", {3}, ""}};
const std::vector<TestTensor> kB = {{"t.c", "F16", {4}, ""}};

// Two shards and an index listing them; `edit` may change the index before it is written.
void write_sharded(const TempDir& dir, const std::function<void(Json&)>& edit = nullptr) {
  write_bytes(dir / "s1.safetensors", st_file(kA));
  write_bytes(dir / "s2.safetensors", st_file(kB));
  Json idx = {{"metadata", {{"total_size", 22}}},
              {"weight_map", {{"t.a", "s1.safetensors"}, {"t.b", "s1.safetensors"}, {"t.c", "s2.safetensors"}}}};
  if (edit) edit(idx);
  write_bytes(dir / "model.safetensors.index.json", idx.dump());
}

std::string index_path(const TempDir& dir) { return (dir / "model.safetensors.index.json").string(); }

}  // namespace

TEST(ShardIndex, ParsesAndGroups) {
  ShardIndex idx = parse_shard_index(R"({"metadata": {"total_size": 1}, "weight_map": {"a": "x.st", "b": "y.st", "c": "x.st"}})",
                                     "i.json");
  EXPECT_EQ(idx.file_of.at("a"), "x.st");
  EXPECT_EQ(idx.file_of.at("b"), "y.st");
  EXPECT_EQ(idx.tensors_in.size(), 2u);
  EXPECT_EQ(idx.tensors_in.at("x.st"), (std::set<std::string>{"a", "c"}));
}

TEST(ShardIndex, FileNamesCannotLeaveTheFolder) {
  for (const std::string bad : {"../x.safetensors", "..", ".", "", "/etc/passwd", "sub/x.safetensors", "a\\b",
                                "./x.safetensors", "x/../../y"}) {
    Json j = {{"weight_map", {{"t", bad}}}};
    expect_bad_input([&] { parse_shard_index(j.dump(), "i.json"); }, {"i.json", "weight_map: \"t\": bad file name"});
  }
  // A NUL inside the name (escaped in JSON) would cut the path short at the system call.
  expect_bad_input([] { parse_shard_index(R"({"weight_map": {"t": "a.safetensors\u0000../../x"}})", "i.json"); },
                   {"bad file name"});
  // Plain names with dots are fine.
  EXPECT_NO_THROW(parse_shard_index(R"({"weight_map": {"t": "..x.safetensors"}})", "i.json"));
}

TEST(ShardIndex, StructureErrors) {
  expect_bad_input([] { parse_shard_index("{}", "i.json"); }, {"i.json", "weight_map: missing"});
  expect_bad_input([] { parse_shard_index(R"({"weight_map": {}})", "i.json"); }, {"weight_map: expected a non-empty object"});
  expect_bad_input([] { parse_shard_index(R"({"weight_map": ["a"]})", "i.json"); }, {"weight_map: expected"});
  expect_bad_input([] { parse_shard_index(R"({"weight_map": {"t": 1}})", "i.json"); },
                   {"weight_map: \"t\": file name is not a string"});
  expect_bad_input([] { parse_shard_index(R"({"weight_map": {"t": "a", "t": "b"}})", "i.json"); }, {"duplicate key \"t\""});
  expect_bad_input([] { parse_shard_index(R"([])", "i.json"); }, {"expected a JSON object"});
  expect_bad_input([] { parse_shard_index(R"({"weight_map": {"t": "a")", "i.json"); }, {"invalid JSON"});
}

TEST(WeightStore, SingleFile) {
  TempDir dir;
  write_bytes(dir / "model.safetensors", st_file(kA));
  WeightStore ws = WeightStore::open(dir.path());
  EXPECT_EQ(ws.all().size(), 2u);
  EXPECT_EQ(ws.source(), dir / "model.safetensors");
  ASSERT_NE(ws.find("t.b"), nullptr);
  EXPECT_EQ(ws.find("t.b")->file, (dir / "model.safetensors").string());
  EXPECT_EQ(load_as_f32(ws.find("t.b")->data, DType::BF16, 2), pattern_value("t.b", 2));
  EXPECT_EQ(ws.find("t.z"), nullptr);
}

TEST(WeightStore, ShardedLoadsEveryShard) {
  TempDir dir;
  write_sharded(dir);
  // An unrelated model.safetensors beside an index is not read: the index wins, as in HF.
  write_bytes(dir / "model.safetensors", "garbage");
  WeightStore ws = WeightStore::open(dir.path());
  EXPECT_EQ(ws.all().size(), 3u);
  EXPECT_EQ(ws.files().size(), 2u);
  EXPECT_EQ(ws.source().string(), index_path(dir));
  EXPECT_EQ(ws.find("t.c")->file, (dir / "s2.safetensors").string());
  EXPECT_EQ(load_as_f32(ws.find("t.c")->data, DType::F16, 3), pattern_value("t.c", 3));
  EXPECT_EQ(load_as_f32(ws.find("t.a")->data, DType::F32, 1), pattern_value("t.a", 1));
}

TEST(WeightStore, ShardErrors) {
  {
    TempDir dir;
    write_sharded(dir);
    fs::remove(dir / "s2.safetensors");
    expect_bad_input([&] { WeightStore::open(dir.path()); },
                     {(dir / "s2.safetensors").string(), "missing", "model.safetensors.index.json lists 1 tensors"});
  }
  {
    TempDir dir;  // the index says s1 holds t.c, but only s2 (now unlisted) stores it
    write_sharded(dir, [](Json& j) { j["weight_map"]["t.c"] = "s1.safetensors"; });
    expect_bad_input([&] { WeightStore::open(dir.path()); }, {index_path(dir), "\"t.c\" is not in s1.safetensors"});
  }
  {
    TempDir dir;  // the index moves t.b to s2, which stores only t.c: s1 holds an unlisted tensor
    write_sharded(dir, [](Json& j) { j["weight_map"]["t.b"] = "s2.safetensors"; });
    expect_bad_input([&] { WeightStore::open(dir.path()); },
                     {(dir / "s1.safetensors").string(), "\"t.b\"", "not listed for this file"});
  }
  {
    TempDir dir;  // the same tensor stored in both shards
    write_sharded(dir);
    std::vector<TestTensor> b2 = kB;
    b2.push_back(kA[0]);
    write_bytes(dir / "s2.safetensors", st_file(b2));
    expect_bad_input([&] { WeightStore::open(dir.path()); },
                     {(dir / "s2.safetensors").string(), "\"t.a\"", "not listed for this file"});
  }
  {
    TempDir dir;  // the index lists a tensor no shard has
    write_sharded(dir, [](Json& j) { j["weight_map"]["t.ghost"] = "s2.safetensors"; });
    expect_bad_input([&] { WeightStore::open(dir.path()); },
                     {index_path(dir), "weight_map: tensor \"t.ghost\" is not in s2.safetensors"});
  }
  {
    TempDir dir;  // traversal out of the folder is refused before any file is opened
    write_sharded(dir, [](Json& j) { j["weight_map"]["t.c"] = "../s2.safetensors"; });
    expect_bad_input([&] { WeightStore::open(dir.path()); }, {index_path(dir), "bad file name \"../s2.safetensors\""});
  }
  {
    TempDir dir;  // a broken shard is named
    write_sharded(dir);
    std::string s2 = st_file(kB);
    write_bytes(dir / "s2.safetensors", s2.substr(0, s2.size() - 1));
    expect_bad_input([&] { WeightStore::open(dir.path()); }, {(dir / "s2.safetensors").string(), "truncated"});
  }
  {
    TempDir dir;
    write_sharded(dir);
    write_bytes(dir / "model.safetensors.index.json", std::string("{\"weight_map\":{}}\0", 18));
    expect_bad_input([&] { WeightStore::open(dir.path()); }, {index_path(dir), "NUL byte"});
  }
  {
    TempDir dir;
    expect_bad_input([&] { WeightStore::open(dir.path()); }, {dir.path().string(), "no model.safetensors"});
  }
}
