// What a plan folder may make the runtime read: kernel binaries that are regular files inside the
// folder once every link is resolved, each file once, within a size cap; and --rebuild-kernels
// (PlanKernels::Rebuild), which leaves the binaries unread and keeps the plan's choices.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "agentcompile/backends/cpu/cpu_executor.h"
#include "agentcompile/core/error.h"
#include "agentcompile/core/hash.h"
#include "agentcompile/model/model.h"
#include "agentcompile/plan/plan.h"
#include "agentcompile/runtime/engine.h"
#include "agentcompile/runtime/plan_executor.h"
#include "agentcompile/tuning/backend.h"
#include "unit/model_test_util.h"

namespace ac {
namespace {

using test::expect_bad_input;
using test::TempDir;
using test::write_bytes;

const fs::path kQwen3 = fs::path(AC_TEST_FIXTURES) / "hf" / "qwen3_mha_untied_5x";

// A CPU plan for `hash` with no routes (every op on the reference path).
Plan empty_plan(const std::string& hash = std::string(64, 'a')) {
  Plan p;
  p.model_hash = hash;
  p.environment = current_environment("cpu");
  p.objective = "latency";
  return p;
}

void add_kernel(Plan& p, const std::string& file, const std::string& bytes) {
  p.kernels.push_back({"k" + std::to_string(p.kernels.size()), file, sha256_hex(bytes), "some key", ""});
}

void write_plan(const fs::path& dir, const Plan& p) { write_bytes(dir / "plan.json", p.to_json().dump(2)); }

TEST(PlanLoad, KernelBinariesAreRegularFilesInsideTheFolder) {
  TempDir tmp;
  const fs::path dir = tmp / "plan";
  write_bytes(dir / "kernels" / "a.cubin", "A");
  write_bytes(tmp / "outside" / "secret", "S");
  auto plan_of = [&](const std::string& file, const std::string& bytes) {
    Plan p = empty_plan();
    add_kernel(p, file, bytes);
    write_plan(dir, p);
  };
  plan_of("kernels/a.cubin", "A");
  EXPECT_EQ(Plan::load(dir).kernels.at(0).bytes, "A");

  // A link to a file outside the folder is refused even when its bytes match the sha256.
  fs::create_symlink("../../outside/secret", dir / "kernels" / "out.cubin");
  plan_of("kernels/out.cubin", "S");
  expect_bad_input([&] { Plan::load(dir); }, {"--plan", "kernel binary kernels/out.cubin", "outside"});
  fs::create_symlink("/dev/zero", dir / "kernels" / "dev.cubin");
  plan_of("kernels/dev.cubin", "");
  expect_bad_input([&] { Plan::load(dir); }, {"kernels/dev.cubin", "outside"});
  // So is a folder link leading out, while a link that stays inside is followed.
  fs::create_directory_symlink(tmp / "outside", dir / "elsewhere");
  plan_of("elsewhere/secret", "S");
  expect_bad_input([&] { Plan::load(dir); }, {"elsewhere/secret", "outside"});
  fs::create_symlink("a.cubin", dir / "kernels" / "same.cubin");
  plan_of("kernels/same.cubin", "A");
  EXPECT_EQ(Plan::load(dir).kernels.at(0).bytes, "A");

  // A FIFO (which would block a reader) and a folder are not kernel binaries.
  ASSERT_EQ(::mkfifo((dir / "kernels" / "fifo.cubin").c_str(), 0600), 0);
  plan_of("kernels/fifo.cubin", "");
  expect_bad_input([&] { Plan::load(dir); }, {"kernels/fifo.cubin", "not a regular file"});
  plan_of("kernels", "");
  expect_bad_input([&] { Plan::load(dir); }, {"kernels", "not a regular file"});

  // plan.json itself is read only from inside the folder.
  write_bytes(tmp / "outside" / "plan.json", empty_plan().to_json().dump());
  fs::remove(dir / "plan.json");
  fs::create_symlink(tmp / "outside" / "plan.json", dir / "plan.json");
  expect_bad_input([&] { Plan::load(dir); }, {"--plan", "plan.json", "outside"});
  expect_bad_input([&] { Plan::load_choices(dir, "--seed-plan"); }, {"--seed-plan", "outside"});
}

TEST(PlanLoad, EachFileOnceAndWithinTheCaps) {
  TempDir tmp;
  const fs::path dir = tmp / "plan";
  write_bytes(dir / "kernels" / "a.cubin", "A");
  fs::create_symlink("a.cubin", dir / "kernels" / "b.cubin");
  Plan p = empty_plan();
  add_kernel(p, "kernels/a.cubin", "A");
  add_kernel(p, "kernels/b.cubin", "A");  // the same file under another name
  write_plan(dir, p);
  expect_bad_input([&] { Plan::load(dir); }, {"kernels/a.cubin and kernels/b.cubin are the same file"});
  p.kernels[1].file = "kernels/a.cubin";  // the same name twice
  expect_bad_input([&] { Plan::from_json(p.to_json(), "plan.json"); }, {"kernels[1]", "file \"kernels/a.cubin\" of an earlier entry"});
  p.kernels[1] = p.kernels[0];
  p.kernels[1].file = "kernels/other.cubin";
  expect_bad_input([&] { Plan::from_json(p.to_json(), "plan.json"); }, {"kernels[1]", "kernel \"k0\" of an earlier entry"});

  // Two distinct 40 MiB binaries (sparse: no disk used) pass the old per-file cap but not the
  // total: the second is refused before it is read.
  const std::string zeros(40 << 20, '\0');
  Plan big = empty_plan();
  for (const char* name : {"kernels/x.cubin", "kernels/y.cubin"}) {
    write_bytes(dir / name, "");
    fs::resize_file(dir / name, zeros.size());
    add_kernel(big, name, zeros);
  }
  write_plan(dir, big);
  expect_bad_input([&] { Plan::load(dir); }, {"more than the 64 MiB a plan may load", "kernels/y.cubin"});
  big.kernels.pop_back();
  write_plan(dir, big);
  EXPECT_EQ(Plan::load(dir).kernels.at(0).bytes.size(), zeros.size());

  // The number of entries, and names that are not plain relative paths.
  Plan many = empty_plan();
  for (int i = 0; i < 513; ++i) add_kernel(many, "kernels/k" + std::to_string(i), "");
  expect_bad_input([&] { Plan::from_json(many.to_json(), "plan.json"); }, {"kernels: 513 entries", "512"});
  for (const char* bad : {"", "/etc/passwd", "../x", "kernels/../../x", "kernels/./a.cubin", "kernels//a.cubin", "kernels/"}) {
    Plan q = empty_plan();
    add_kernel(q, bad, "A");
    expect_bad_input([&] { Plan::from_json(q.to_json(), "plan.json"); }, {"must be a path inside the plan folder"});
  }
  Json nul = p.to_json();
  nul["kernels"][0]["file"] = std::string("kernels/a.cubin\0/../../x", 24);
  expect_bad_input([&] { Plan::from_json(nul, "plan.json"); }, {"must be a path inside the plan folder"});
  // Control characters would break the one-line messages that name the file (found by fuzz_plan).
  for (const char* bad : {"kernels/a\nb.cubin", "kernels/a\rb.cubin", "kernels/a\x7f.cubin", "kernels/\x1b[31m.cubin"}) {
    Plan q = empty_plan();
    add_kernel(q, bad, "A");
    const std::string msg = expect_bad_input([&] { Plan::from_json(q.to_json(), "plan.json"); }, {"must be a path inside the plan folder"});
    EXPECT_EQ(msg.find_first_of("\n\r"), std::string::npos) << msg;
  }
}

TEST(PlanLoad, RebuildKernelsLeavesTheBinariesUnreadAndKeepsTheChoices) {
  TempDir tmp;
  auto m = load_model(kQwen3);
  const fs::path dir = tmp / "plan";
  Plan p = empty_plan(model_hash(*m));
  PlanRoute r;  // one real choice, to see it kept
  r.region = "attn_in";
  r.phase = "decode";
  r.signature = "s";
  r.instances = {"layers.0.attn_in"};
  r.family = "cpu:linear.blocked";
  r.route = "op";
  r.params = {{"ROWS", 2}, {"TOKENS", 1}, {"KUNROLL", 4}, {"THREADS", 1}};
  r.ops = {"layers.0.q_proj"};
  p.routes.push_back(r);
  add_kernel(p, "kernels/missing.cubin", "M");
  add_kernel(p, "kernels/tampered.cubin", "T");
  write_bytes(dir / "kernels" / "tampered.cubin", "not T");
  write_plan(dir, p);

  expect_bad_input([&] { load_plan_for(dir, *m, "auto"); }, {"kernels/missing.cubin", "missing"});
  write_bytes(tmp / "outside", "M");
  fs::create_symlink(tmp / "outside", dir / "kernels" / "missing.cubin");
  expect_bad_input([&] { load_plan_for(dir, *m, "auto"); }, {"kernels/missing.cubin", "outside"});
  const Plan q = load_plan_for(dir, *m, "auto", PlanKernels::Rebuild);
  ASSERT_EQ(q.kernels.size(), 2u);
  for (const PlanKernel& k : q.kernels) EXPECT_TRUE(k.bytes.empty()) << k.file;
  EXPECT_EQ(q.kernels[1].source_key, "some key");
  ASSERT_EQ(q.routes.size(), 1u);
  EXPECT_EQ(q.routes[0].params, r.params);

  // The plan runs, on the CPU backend's own kernels, with the reference's logits.
  const Graph g = build_decoder_graph(m->config, m->weights);
  const ExecutorLimits lim{1, 8, 8, 0};
  auto ex = make_plan_executor(q, g, lim);
  auto ref = make_cpu_executor(g, lim);
  const std::vector<int32_t> toks = {1, 5, 9, 33};
  const auto a = teacher_forced_logits(*ex, toks), b = teacher_forced_logits(*ref, toks);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    for (size_t j = 0; j < a[i].size(); ++j) ASSERT_NEAR(a[i][j], b[i][j], 1e-3 + 1e-4 * std::abs(b[i][j]));
}

}  // namespace
}  // namespace ac
