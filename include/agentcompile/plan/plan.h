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
  // the plan's (PlanCudaFast::smem_carveout); absent: the plan's. The step tuning sets it.
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

// The CUDA fast path's parameters (mirrors cuda::FastConfig, without CUDA types).
struct PlanGemv {
  int block = 256, rows = 1, unroll = 2, splitk = 1;
};
struct PlanCudaFast {
  std::map<std::string, PlanGemv> gemv;  // keys: qkv, o, gate_up, down, lm_head
  // gemv.mma points (batches from mma_min_batch on; rows = 16-row tiles); absent keys keep the
  // defaults (plans of the latency objective search batch 1 only).
  std::map<std::string, PlanGemv> gemv_mma;
  int qkv_post_block = 128;
  int attn_block = 128, attn_tile = 32, attn_split = 64;
  int attn_ilp = 1;
  // The long-context attention (cuda::FastConfig::attn_split_long, attn_long_from; 0: never);
  // absent in plans written before it existed, which then run the engine's defaults.
  std::optional<int> attn_split_long, attn_long_from;
  // Blocks per KV head of the batch-1 short-context attention (cuda::FastConfig::attn_cluster;
  // 0: the fused kernel's splits); optional: older plans run the engine's default.
  std::optional<int> attn_cluster;
  // The same past attn_long_from (cuda::FastConfig::attn_cluster_long; 0: the long splits).
  std::optional<int> attn_cluster_long;
  // Batch-1 decode steps as one persistent kernel (cuda::FastConfig::persistent, 1) instead of the
  // kernel chain (0 or absent); the compile's decode-step stage sets it when whole steps with it
  // are faster.
  std::optional<int> persistent;
  // Batch-1 short-context steps run the attention and the output projection as one kernel with
  // this many clusters per KV head (cuda::FastConfig::attn_o: 1, 2 or 4); 0 or absent: two kernels.
  // The compile's decode-step stage sets it when whole steps with it are faster.
  std::optional<int> attn_o;
  // Batch-1 short-range steps hand the attention's partials to the output projection, which
  // merges them (cuda::FastConfig::attn_merge_o: attn_decode.parts + gemv.merged); absent: off.
  std::optional<int> attn_merge_o;
  // Every kernel's preferred shared-memory carveout, percent of the SM's unified L1/shared store
  // (cuda::FastConfig::smem_carveout); absent: the driver's choice per kernel. The compile's
  // decode-step stage sets it when whole steps with it are faster.
  std::optional<int> smem_carveout;
  // Per decode region (plan_carveout_regions: qkv, o, gate_up, down, lm_head, attention): its
  // kernels' carveout instead of smem_carveout (cuda::FastConfig::region_carveout), from the
  // routes' own (PlanRoute::smem_carveout); absent keys: smem_carveout.
  std::map<std::string, int> region_carveout;
  bool cuda_graph = true, pdl = true;
  Json to_json() const;
  static PlanCudaFast from_json(const Json& j, const std::string& subject);
};
const std::vector<std::string>& plan_gemv_regions();  // qkv, o, gate_up, down, lm_head
const std::vector<std::string>& plan_carveout_regions();  // plan_gemv_regions() and attention

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
  std::vector<PlanRoute> routes;
  std::optional<PlanCudaFast> cuda_fast;  // backend cuda: the fast path's parameters
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
