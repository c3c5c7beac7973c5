// load_model over the malformed-model corpus (tests/fixtures/malformed, written by
// tools/make_malformed_corpus.py): each malformed folder fails with one BadInput error naming the
// file and its defect; each "ok" folder loads, with every value read from the right bytes.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "agentcompile/model/model.h"
#include "model_test_util.h"

using namespace ac;
using namespace ac::test;

namespace {

struct CorpusCase {
  std::string name, expect, file;
  std::vector<std::string> needles;
};

const fs::path kCorpus = fs::path(AC_TEST_FIXTURES) / "malformed";

std::vector<CorpusCase> read_cases() {
  std::vector<CorpusCase> out;
  std::ifstream in(kCorpus / "cases.tsv");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> cols;
    std::stringstream ss(line);
    std::string col;
    while (std::getline(ss, col, '\t')) cols.push_back(col);
    if (cols.size() < 3) continue;
    out.push_back({cols[0], cols[1], cols[2], {cols.begin() + 3, cols.end()}});
  }
  return out;
}

}  // namespace

TEST(MalformedCorpus, EveryCaseBehavesAsRecorded) {
  std::vector<CorpusCase> cases = read_cases();
  ASSERT_GE(cases.size(), 100u) << "corpus missing or short: " << kCorpus;
  int ok = 0, errors = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    fs::path dir = kCorpus / c.name;
    if (c.expect == "ok") {
      EXPECT_NO_THROW(load_model(dir));
      ++ok;
      continue;
    }
    ASSERT_EQ(c.expect, "error");
    std::string named = c.file == "." ? dir.string() : (dir / c.file).string();
    try {
      load_model(dir);
      ADD_FAILURE() << "loaded without error";
    } catch (const Error& e) {
      std::string msg = e.what();
      EXPECT_EQ(e.kind(), ErrorKind::BadInput) << msg;
      EXPECT_NE(msg.find(named), std::string::npos) << "does not name " << named << ": " << msg;
      for (const auto& n : c.needles) EXPECT_NE(msg.find(n), std::string::npos) << "lacks \"" << n << "\": " << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not an ac::Error: " << e.what();
    }
    ++errors;
  }
  EXPECT_GE(ok, 5);
  EXPECT_GE(errors, 100);
}

TEST(MalformedCorpus, OkCasesReadEveryValueFromTheRightBytes) {
  // The generator fills every tensor with pattern_value(name, i); the unaligned case puts all
  // data at odd addresses.
  for (const char* name : {"ok_base", "ok_unaligned_f32", "ok_f16", "ok_sharded", "ok_qwen3_transformers5", "ok_qwen2_bias"}) {
    SCOPED_TRACE(name);
    auto m = load_model(kCorpus / name);
    ASSERT_FALSE(m->store.all().empty());
    for (const auto& [tname, t] : m->store.all()) {
      ASSERT_TRUE(dtype_is_compute(t->dtype)) << tname;
      for (int64_t i = 0; i < t->numel(); ++i)
        ASSERT_EQ(load_as_f32(t->data, t->dtype, size_t(i)), pattern_value(tname, size_t(i))) << tname << "[" << i << "]";
    }
  }
  auto un = load_model(kCorpus / "ok_unaligned_f32");
  EXPECT_EQ(reinterpret_cast<uintptr_t>(un->weights.embed->data) % 4, 3u);
  EXPECT_EQ(un->config.torch_dtype, DType::F32);
  auto sharded = load_model(kCorpus / "ok_sharded");
  EXPECT_EQ(sharded->store.files().size(), 2u);
  EXPECT_EQ(sharded->weights.parameters, load_model(kCorpus / "ok_base")->weights.parameters);
  auto l3 = load_model(kCorpus / "ok_llama3_rope");
  EXPECT_EQ(l3->config.rope.type, RopeType::Llama3);
  auto inv = load_model(kCorpus / "ok_rotary_inv_freq");
  EXPECT_EQ(inv->weights.ignored, (std::vector<std::string>{"model.layers.0.self_attn.rotary_emb.inv_freq"}));
}
