// Folders written whole (StagingDir): an existing target is replaced only when this tool wrote
// it as the same kind and it holds nothing else; everything else is refused and left untouched.
#include <gtest/gtest.h>
#include <unistd.h>

#include "agentcompile/core/error.h"
#include "agentcompile/core/fs.h"
#include "agentcompile/model/synth_model.h"
#include "agentcompile/plan/plan.h"
#include "unit/model_test_util.h"

namespace ac {
namespace {

using test::expect_bad_input;
using test::TempDir;
using test::write_bytes;

const FolderKind kDemo{"demo", "the demo writer", {}};

// Writes a folder of kind `k` at `dir` holding `files` (name -> content).
void write_folder(const fs::path& dir, const FolderKind& k, const std::map<std::string, std::string>& files) {
  StagingDir s(dir, k);
  for (const auto& [name, content] : files) write_bytes(s.path() / name, content);
  s.commit();
}

std::string text_of(const fs::path& p) { return read_file(p, 1 << 20); }

// The entries of `dir` (names only), for "nothing else was left beside it".
std::set<std::string> names_in(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

// Runs fn with `dir` as the working folder.
void in_folder(const fs::path& dir, const std::function<void()>& fn) {
  const fs::path back = fs::current_path();
  fs::current_path(dir);
  try {
    fn();
  } catch (...) {
    fs::current_path(back);
    throw;
  }
  fs::current_path(back);
}

TEST(StagingDir, ReplacesOnlyAFolderItWroteOfTheSameKind) {
  TempDir tmp;
  const fs::path out = tmp / "out";
  write_folder(out, kDemo, {{"a.txt", "1"}, {"sub/b.bin", "2"}});
  EXPECT_TRUE(fs::exists(out / kFolderMarker));
  write_folder(out, kDemo, {{"c.txt", "3"}});  // its own folder: replaced whole
  EXPECT_EQ(names_in(out), (std::set<std::string>{"c.txt", kFolderMarker}));
  EXPECT_EQ(names_in(tmp.path()), std::set<std::string>{"out"});  // no temporary or old folder left

  // A folder someone else wrote, or one it wrote with a file added since: refused, untouched.
  write_bytes(tmp / "theirs" / "notes.txt", "keep");
  expect_bad_input([&] { StagingDir s(tmp / "theirs", kDemo); }, {"theirs", "not a demo folder written by the demo writer"});
  EXPECT_EQ(names_in(tmp / "theirs"), std::set<std::string>{"notes.txt"});
  write_bytes(out / "sub2" / "mine.txt", "keep");
  expect_bad_input([&] { StagingDir s(out, kDemo); }, {"holds sub2/mine.txt", "did not write"});
  EXPECT_EQ(text_of(out / "sub2" / "mine.txt"), "keep");
  fs::remove_all(out / "sub2");
  // A folder of another kind (a plan folder where a model is asked for).
  const FolderKind other{"plan", "agentcompile compile", {}};
  expect_bad_input([&] { StagingDir s(out, other); }, {"not a plan folder", "it is a demo folder"});
  // An empty folder may be filled.
  fs::create_directory(tmp / "empty");
  write_folder(tmp / "empty", kDemo, {{"x", "y"}});
  EXPECT_TRUE(fs::exists(tmp / "empty" / "x"));
}

TEST(StagingDir, RefusesFilesLinksRootAndTheWorkingFolder) {
  TempDir tmp;
  write_bytes(tmp / "file", "keep");
  expect_bad_input([&] { StagingDir s(tmp / "file", kDemo); }, {"exists and is not a folder"});
  write_folder(tmp / "mine", kDemo, {{"a", "1"}});
  fs::create_directory_symlink(tmp / "mine", tmp / "link");
  expect_bad_input([&] { StagingDir s(tmp / "link", kDemo); }, {"symbolic link"});
  EXPECT_TRUE(fs::is_symlink(tmp / "link"));
  expect_bad_input([&] { StagingDir s("/", kDemo); }, {"root folder"});
  // The working folder, its parent and a path that leads back to it, even when they are folders
  // of the kind: replacing them would pull the folder from under the process.
  fs::create_directories(tmp / "mine" / "inner");
  in_folder(tmp / "mine", [&] {
    expect_bad_input([&] { StagingDir s(".", kDemo); }, {"current folder"});
    expect_bad_input([&] { StagingDir s("inner/..", kDemo); }, {"current folder"});
  });
  in_folder(tmp / "mine" / "inner", [&] { expect_bad_input([&] { StagingDir s("..", kDemo); }, {"holds it"}); });
  EXPECT_EQ(text_of(tmp / "mine" / "a"), "1");
  EXPECT_EQ(text_of(tmp / "file"), "keep");
}

TEST(StagingDir, AFileAddedAfterTheCheckKeepsTheOldFolder) {
  TempDir tmp;
  const fs::path out = tmp / "out";
  write_folder(out, kDemo, {{"a", "1"}});
  {
    StagingDir s(out, kDemo);  // checked here: its own folder
    write_bytes(s.path() / "b", "2");
    write_bytes(out / "user.txt", "keep");  // added before the commit
    expect_bad_input([&] { s.commit(); }, {"holds user.txt"});
  }
  EXPECT_EQ(names_in(out), (std::set<std::string>{"a", "user.txt", kFolderMarker}));
  EXPECT_EQ(names_in(tmp.path()), std::set<std::string>{"out"});  // the uncommitted folder is gone
  // A folder someone made at the target after the check is not replaced either.
  fs::remove_all(tmp / "new");
  StagingDir s(tmp / "new", kDemo);
  fs::create_directory(tmp / "new");
  write_bytes(tmp / "new" / "theirs", "keep");
  expect_bad_input([&] { s.commit(); }, {"not a demo folder"});
  EXPECT_EQ(text_of(tmp / "new" / "theirs"), "keep");
}

TEST(StagingDir, PlanFoldersFromBeforeMarkersAreRecognisedByTheirPlan) {
  TempDir tmp;
  const fs::path old = tmp / "plan";
  write_bytes(old / "plan.json", R"({"format": "agentcompile-plan", "kernels": [{"file": "kernels/k.cubin"}]})");
  write_bytes(old / "report.json", "{}");
  write_bytes(old / "report.md", "#");
  write_bytes(old / "kernels" / "k.cubin", "bin");
  check_replaceable(old, plan_folder_kind(), "--out plan");
  write_folder(old, plan_folder_kind(), {{"plan.json", "{}"}});
  EXPECT_EQ(names_in(old), (std::set<std::string>{"plan.json", kFolderMarker}));
  // Another tool's plan.json, or an extra file beside a real one: not a plan folder of ours.
  write_bytes(tmp / "x" / "plan.json", R"({"format": "something else"})");
  expect_bad_input([&] { check_replaceable(tmp / "x", plan_folder_kind(), "--out x"); }, {"--out x", "not a plan folder"});
  write_bytes(tmp / "y" / "plan.json", R"({"format": "agentcompile-plan", "kernels": []})");
  write_bytes(tmp / "y" / "notes.md", "mine");
  expect_bad_input([&] { check_replaceable(tmp / "y", plan_folder_kind(), "--out y"); }, {"holds notes.md"});
  // A synthesised model folder is never a plan folder, and a model folder without a marker (a
  // downloaded one looks the same) is never replaced by synth-model.
  write_folder(tmp / "m", synth_model_folder_kind(), {{"config.json", "{}"}});
  expect_bad_input([&] { check_replaceable(tmp / "m", plan_folder_kind(), "--out m"); }, {"it is a synth-model folder"});
  write_bytes(tmp / "hf" / "config.json", "{}");
  write_bytes(tmp / "hf" / "model.safetensors", "x");
  expect_bad_input([&] { check_replaceable(tmp / "hf", synth_model_folder_kind(), "--out hf"); }, {"not a synth-model folder"});
}

}  // namespace
}  // namespace ac
