// libFuzzer target: plan.json. The input goes through the strict JSON parser and Plan::from_json
// (environment, routes, kernels, the cuda_fast section through the fast path's knob table); the
// CPU routes' parameters through their family's parser, as the CPU executor binds them. An accepted plan must hold what the parser
// promises and survive a round trip. It is then written as plan.json into a plan folder whose
// kernels/ holds a regular file, a link inside, links leading out and a FIFO, and loaded with its
// binaries (each must be a regular file inside the folder, once, matching its sha256) and
// without them (PlanKernels::Rebuild: nothing read). The folder lives under $TMPDIR, as
// fuzz_model's does.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>

#include "agentcompile/backends/cpu/cpu_families.h"
#include "agentcompile/core/hash.h"
#include "agentcompile/plan/plan.h"
#include "backends/cuda/fast_knobs.h"
#include "fuzz_common.h"

namespace {

using ac::fuzz::require;
namespace fs = ac::fs;

// <tmp>/plan/kernels/{a.cubin, inside -> a.cubin, dev -> /dev/zero, fifo}, <tmp>/plan/out ->
// <tmp>/outside, whose secret has a.cubin's bytes ("cubin-a": its sha256 is in the dictionary).
const fs::path& plan_dir() {
  // Never destroyed: the exit handler that removes the folder runs after static destructors.
  static const fs::path* dir = [] {
    std::string tmpl = (fs::temp_directory_path() / "ac-fuzz-plan-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) ac::fuzz::finding("mkdtemp failed");
    const fs::path root(tmpl);
    fs::create_directories(root / "plan" / "kernels");
    fs::create_directories(root / "outside");
    ac::write_file_atomic(root / "plan" / "kernels" / "a.cubin", "cubin-a");
    ac::write_file_atomic(root / "outside" / "secret", "cubin-a");
    fs::create_symlink("a.cubin", root / "plan" / "kernels" / "inside");
    fs::create_symlink("/dev/zero", root / "plan" / "kernels" / "dev");
    fs::create_directory_symlink("../outside", root / "plan" / "out");
    if (::mkfifo((root / "plan" / "kernels" / "fifo").c_str(), 0600) != 0) ac::fuzz::finding("mkfifo failed");
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(plan_dir().parent_path(), ec);
    });
    return new fs::path(root / "plan");
  }();
  return *dir;
}

bool in_range(int v, int lo, int hi) { return v >= lo && v <= hi; }

void check_kernel_path(const std::string& f) {
  require(!f.empty() && f.front() != '/' && f.find('\0') == std::string::npos, "kernel file relative: " + f);
  for (const auto& part : fs::path(f)) require(part != ".." && part != "." && !part.empty(), "kernel file plain parts: " + f);
}

// The cuda_fast section read with the CUDA fast path's own knob declarations (plain data; the
// kernel families' domains, which plans never hold, left empty): every value set is a plan knob's
// and within its domain, every required knob is set.
const ac::KnobTable& cuda_fast_table() {
  static const auto* b = [] {
    auto* t = new ac::KnobBinding<ac::cuda::FastConfig>(
        "cuda_fast", ac::cuda::fast_knob_declarations([](const std::string&, const std::string&, const std::string&) {
          return std::vector<int>{};
        }));
    ac::register_knob_table(t->table());
    return t;
  }();
  return b->table();
}

void check_cuda_fast(const ac::KnobValues& f) {
  require(&f.table() == &cuda_fast_table(), "read with the cuda_fast table");
  for (const auto& [name, v] : f.set_values()) {
    const ac::Knob* k = f.table().find(name);
    require(k && k->plan != ac::KnobInPlan::None && k->domain.contains(v), "knob in its domain: " + name);
  }
  for (const ac::Knob& k : f.table().knobs())
    if (k.plan == ac::KnobInPlan::Required) require(f.get(k.name).has_value(), "required knob set: " + k.name);
}

// A CPU route's parameters as the CPU executor binds them: the family's parser returns values of
// its domain or throws ac::Error (the executor reports it as the plan's error).
void check_cpu_params(const ac::PlanRoute& r) {
  const ac::cpu::CpuFamily* fam = nullptr;
  if (r.family == "cpu:linear.blocked") fam = ac::cpu::find_cpu_family("linear", "blocked");
  if (r.family == "cpu:attention.blocked") fam = ac::cpu::find_cpu_family("attention", "blocked");
  if (r.family == "cpu:mlp.fused") fam = ac::cpu::find_cpu_family("mlp", "fused");
  if (fam == nullptr) return;
  auto in_domain = [&](const char* name, int v) {
    for (const auto& d : fam->params)
      if (d.name == name) return std::find(d.values.begin(), d.values.end(), v) != d.values.end();
    return false;
  };
  try {
    if (fam->op == "linear") {
      const auto p = ac::cpu::linear_blocked_params(r.params);
      require(in_domain("ROWS", p.rows) && in_domain("TOKENS", p.tokens) && in_domain("KUNROLL", p.k_unroll) &&
                  in_domain("THREADS", p.threads),
              "linear.blocked parameters in their domain");
    } else if (fam->op == "attention") {
      const auto p = ac::cpu::attention_blocked_params(r.params);
      require(in_domain("BLOCK_KV", p.block_kv) && in_domain("GQA_SHARE", p.gqa_share) && in_domain("THREADS", p.threads),
              "attention.blocked parameters in their domain");
    } else {
      const auto p = ac::cpu::mlp_fused_params(r.params);
      require(in_domain("CHUNK", p.chunk) && in_domain("ROWS", p.tile.rows) && in_domain("TOKENS", p.tile.tokens) &&
                  in_domain("KUNROLL", p.tile.k_unroll) && in_domain("THREADS", p.threads),
              "mlp.fused parameters in their domain");
    }
  } catch (const ac::Error&) {
  }
}

void check_plan(const ac::Plan& p) {
  require(p.model_hash.size() == 64, "model hash");
  require(p.objective == "latency" || p.objective == "throughput", "objective");
  require(in_range(p.max_batch, 1, 4096), "max_batch");
  require(p.environment.backend == "cpu" || p.environment.backend == "cuda", "backend");
  require(p.kernels.size() <= 512, "kernel entries capped");
  std::set<std::string> names, files;
  for (const auto& k : p.kernels) {
    check_kernel_path(k.file);
    require(names.insert(k.name).second && files.insert(k.file).second, "kernel named once");
    require(k.bytes.empty(), "from_json reads no binary");
  }
  std::set<std::pair<std::string, std::string>> bound;
  for (const auto& r : p.routes) {
    require(r.phase == "decode" || r.phase == "prefill", "phase");
    if (r.route == "fused") require(r.instances.size() >= 2 && !r.ops.empty() && !r.params.empty(), "fused route complete");
    for (const auto& [k, v] : r.params) require(in_range(v, -(1 << 30), 1 << 30), "route parameter in range");
    if (r.smem_carveout) require(in_range(*r.smem_carveout, 0, 100), "route carveout");
    for (const auto& op : r.ops) require(bound.insert({op, r.phase}).second, "op bound once per phase");
    check_cpu_params(r);
  }
  if (p.cuda_fast) {
    require(p.environment.backend == "cuda", "cuda_fast only on cuda plans");
    check_cuda_fast(*p.cuda_fast);
  }
}

// The plan loaded from the folder with its binaries: each a regular file inside it, once, with
// the bytes its sha256 names.
void check_loaded(const ac::Plan& p, const fs::path& dir) {
  const fs::path base = fs::canonical(dir);
  std::set<fs::path> seen;
  for (const auto& k : p.kernels) {
    const fs::path real = fs::canonical(dir / k.file);
    const fs::path rel = real.lexically_relative(base);
    require(!rel.empty() && *rel.begin() != ".." && fs::is_regular_file(real), "kernel binary inside: " + k.file);
    require(seen.insert(real).second, "each binary once: " + k.file);
    require(ac::sha256_hex(k.bytes) == k.sha256, "binary matches its sha256: " + k.file);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ac;
  cuda_fast_table();  // registered before the first plan is read
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Plan p;
  try {
    p = Plan::from_json(parse_json_strict(text, "plan.json"), "plan.json");
  } catch (const Error& e) {
    fuzz::check_rejection(e);
    return 0;
  }
  check_plan(p);
  const Json once = p.to_json();
  require(Plan::from_json(once, "again").to_json() == once, "round trip");

  const fs::path& dir = plan_dir();
  write_file_atomic(dir / "plan.json", text);
  Plan rebuilt;
  try {
    rebuilt = Plan::load(dir, PlanKernels::Rebuild);
  } catch (const Error& e) {  // nothing more to refuse: no binary is read
    fuzz::finding(std::string("an accepted plan.json refused when loaded without binaries: ") + e.what());
  }
  require(rebuilt.to_json() == once, "rebuild keeps the plan");
  for (const auto& k : rebuilt.kernels) require(k.bytes.empty(), "rebuild reads no binary");
  try {
    check_loaded(Plan::load(dir), dir);
  } catch (const Error& e) {
    fuzz::check_rejection(e);
  }
  return 0;
}
