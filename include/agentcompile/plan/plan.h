#pragma once
// The plan format: what the compiler decided, read by the runtime. A plan folder holds plan.json
// (this schema), report.json and report.md, and the kernel binaries plan.json references. The
// runtime reads plans only through this module, so it never depends on the search or the
// advisors. Schema: docs/compiler.md ("Plan").
//
// A plan is bound to a model (model_hash) and an environment (Environment: backend, device,
// arch, driver/CUDA/NVRTC versions, engine version); running it elsewhere is refused with a
// one-line reason.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agentcompile/core/fs.h"
#include "agentcompile/core/json.h"
#include "agentcompile/plan/knobs.h"

namespace ac {

struct Model;

// Where measurements and plans are valid. Everything but engine_commit is part of key().
struct Environment {
  std::string backend;         // "cpu" | "cuda"
  std::string device;          // "NVIDIA H200", or the host CPU's model name
  std::string arch;            // "sm_90", "x86_64"
  int sm_count = 0;            // GPU
  int cores = 0;               // CPU: hardware threads
  std::string driver, cuda, nvrtc;  // GPU software versions ("" on the CPU backend)
  std::string engine_version;  // AGENTCOMPILE_VERSION
  std::string engine_commit;   // git commit at configure time, "" when unknown (informational)

  Json to_json() const;
  static Environment from_json(const Json& j, const std::string& subject);
  std::string key() const;  // first 16 hex digits of sha256 over the identifying fields
  // "" when something made in *this may be used in `here`; otherwise what differs, e.g.
  // "GPU \"NVIDIA H100\" (plan) vs \"NVIDIA H200\" (here)".
  std::string mismatch(const Environment& here) const;
};


// Identifies a model: sha256 over config.json and, per tensor, its name, dtype, shape and a
// sample of its bytes (the first and last 4 KiB and 16 evenly spread 4 KiB pieces): stable for a
// folder, different for re-generated random weights, and cheap even for multi-GB models.
std::string model_hash(const Model& m);

// One region class in one phase: the implementation the plan runs there; or a fused span of
// consecutive regions (route "fused", region "mlp_in+mlp_out": instances name both regions of
// every layer it fuses, ops every op of them).
struct PlanRoute {
  std::string region;     // "attn_in", ..., "mlp_in+mlp_out" (fused)
  std::string phase;      // "decode" | "prefill"
  std::string signature;  // region signature (tuning DB key)
  std::vector<std::string> instances;  // region names ("layers.0.attn_in") the route runs
  std::string family;     // "cpu:fallback", "cpu:linear.blocked", "cuda:fast", ...
  std::string route;      // "fallback" | "op" | "region" | "fused"
  std::map<std::string, int> params;
  std::vector<std::string> ops;  // graph op names the binding runs (op families)
  double time_us = 0;            // measured, at the plan's shape point
  double fallback_us = 0;
  // The shared-memory carveout of this route's kernels (percent; CUDA decode routes), instead of
  // the plan's (cuda_fast's smem_carveout); absent: the plan's. The step tuning sets it.
  std::optional<int> smem_carveout;
  Json to_json() const;
};

// A kernel binary shipped with the plan (kernels/<file>), checked by sha256 at load.
struct PlanKernel {
  std::string name;  // variant name
  std::string file;  // relative to the plan folder
  std::string sha256;
  // The JIT key of the source it was built from (source, templates, options, NVRTC version,
  // architecture): the binary is used only while this engine's source still has that key.
  // Empty in older plans: their binaries are not used (the kernels are compiled as without one).
  std::string source_key;
  std::string bytes;  // the binary, read and checked by Plan::load (not in plan.json); empty with PlanKernels::Rebuild
};

// A kernel binary with its bytes, for writing a plan folder.
struct PlanKernelBinary {
  PlanKernel kernel;
  std::string bytes;
};

// What loading a plan does with the kernel binaries it ships: read and check them, to be loaded
// in place of compiling where their source key matches (Load); or leave them unread, so the
// backend compiles every kernel from this build's templates (Rebuild: --rebuild-kernels). Either
// way the plan's choices are kept.
enum class PlanKernels { Load, Rebuild };

struct Plan {
  static constexpr const char* kFormat = "agentcompile-plan";
  static constexpr int kVersion = 1;
  std::string model_hash;
  std::string model_name;    // folder name, for messages
  std::string architecture;  // "qwen3", ...
  Environment environment;
  std::string objective;     // "latency" | "throughput"
  int max_batch = 1;
  std::string activations = "f32", kv_cache = "f32";
  // "" (the weights as stored), or "fp8-block" / "fp8-channel": compiled for the model's 16-bit
  // weights quantized at load (compile --weights); a command running the plan quantizes the same
  // way before it builds the graph (prepare_model_for_plan).
  std::string weights;
  bool lm_head_fp8 = false;  // with weights: the lm_head quantized too (compile --lm-head fp8)
  std::vector<PlanRoute> routes;
  // Backend cuda: the fast path's knob values (plan.json "cuda_fast"), read and written through
  // the table the CUDA backend registers under that name (src/backends/cuda/fast_knobs.cpp).
  std::optional<KnobValues> cuda_fast;
  std::vector<PlanKernel> kernels;
  Json e2e;  // summary of the end-to-end check and profile (informational)

  Json to_json() const;
  // BadInput "subject: field: why" on any defect.
  static Plan from_json(const Json& j, const std::string& subject);
  // dir/plan.json and, unless `kernels` is Rebuild, its kernel binaries: each a regular file
  // inside the folder (links resolved), named once, matching its sha256, all within a size cap.
  // BadInput naming the folder.
  static Plan load(const fs::path& dir, PlanKernels kernels = PlanKernels::Load);
  // dir/plan.json alone (its kernel binaries neither read nor required: compile --seed-plan);
  // BadInput naming `flag` and the folder.
  static Plan load_choices(const fs::path& dir, const std::string& flag);
  // Binding of a graph op in a phase (null: the backend's default route).
  const PlanRoute* route_for_op(const std::string& op_name, const std::string& phase) const;
};

// Plan folders (compile --out replaces only these): marked ones, and those written before markers
// existed, recognised by a plan.json of this format (then plan.json, report.json, report.md and
// its kernel files are the folder's own).
const FolderKind& plan_folder_kind();

// Refuses (BadInput, subject "--plan DIR") a plan made for another model, environment or engine
// version, with the difference in one line.
void check_plan_usable(const Plan& plan, const fs::path& dir, const std::string& model_hash, const Environment& here);

}  // namespace ac
