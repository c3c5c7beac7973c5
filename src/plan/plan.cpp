// plan.json: writing, strict reading and the checks the runtime makes before running a plan.
#include "agentcompile/plan/plan.h"

#include <algorithm>

#include "agentcompile/core/error.h"
#include "agentcompile/core/hash.h"

namespace ac {

namespace {

// What a plan may make the runtime read. Real plans are far under: plan.json ~20 KB, under 30
// kernel binaries of well under 1 MB each (bench/results/*/plans).
constexpr size_t kMaxPlanBytes = 16 << 20;
constexpr size_t kMaxKernelBytes = 64 << 20;  // all kernel binaries together
constexpr size_t kMaxKernels = 512;

// A kernel's file as plan.json names it: a relative path of plain names (no "..", ".", empty
// parts or NUL), so it names a file inside the folder before any link is resolved.
bool plain_relative_path(const std::string& f) {
  if (f.empty() || f.front() == '/') return false;
  // No control characters (NUL, newlines): a name goes into one-line messages as it is.
  for (unsigned char c : f)
    if (c < 0x20 || c == 0x7f) return false;
  size_t at = 0;
  while (at <= f.size()) {
    const size_t end = std::min(f.find('/', at), f.size());
    const std::string_view part(f.data() + at, end - at);
    if (part.empty() || part == "." || part == "..") return false;
    at = end + 1;
  }
  return true;
}

std::vector<std::string> string_list(const Json& j, const std::string& subject, const std::string& key) {
  const Json& v = json_require(j, subject, key);
  if (!v.is_array()) throw_input(subject, key + ": expected an array of strings");
  std::vector<std::string> out;
  for (const auto& s : v) {
    if (!s.is_string()) throw_input(subject, key + ": expected an array of strings, found " + json_brief(s));
    out.push_back(s.get<std::string>());
  }
  return out;
}

std::map<std::string, int> int_map(const Json& j, const std::string& subject, const std::string& key) {
  const Json& v = json_require(j, subject, key);
  if (!v.is_object()) throw_input(subject, key + ": expected an object of integers");
  std::map<std::string, int> out;
  for (const auto& [k, x] : v.items()) out[k] = int(json_int(v, subject + ": " + key, k, -(1 << 30), 1 << 30));
  return out;
}

PlanRoute route_from_json(const Json& j, const std::string& subject) {
  if (!j.is_object()) throw_input(subject, "expected an object");
  PlanRoute r;
  r.region = json_string(j, subject, "region");
  r.phase = json_string(j, subject, "phase");
  if (r.phase != "decode" && r.phase != "prefill") throw_input(subject, "phase: " + json_quote(r.phase) + " is not decode or prefill");
  r.signature = json_string(j, subject, "signature");
  r.instances = string_list(j, subject, "instances");
  r.family = json_string(j, subject, "family");
  r.route = json_string(j, subject, "route");
  static const std::vector<std::string> routes = {"fallback", "op", "region", "fused"};
  if (std::find(routes.begin(), routes.end(), r.route) == routes.end())
    throw_input(subject, "route: " + json_quote(r.route) + " is not fallback, op, region or fused");
  r.params = int_map(j, subject, "params");
  r.ops = string_list(j, subject, "ops");
  // A fused route implements a span of regions: it names them and the ops it runs.
  if (r.route == "fused" && (r.instances.size() < 2 || r.ops.empty() || r.params.empty()))
    throw_input(subject, "route fused: needs the instances of the regions it spans, their ops and its parameters");
  r.time_us = json_opt_number(j, subject, "time_us").value_or(0);
  r.fallback_us = json_opt_number(j, subject, "fallback_us").value_or(0);
  if (j.contains("smem_carveout")) r.smem_carveout = int(json_int(j, subject, "smem_carveout", 0, 100));
  return r;
}

}  // namespace

Json PlanRoute::to_json() const {
  Json j = {{"region", region}, {"phase", phase}, {"signature", signature}, {"instances", instances},
            {"family", family}, {"route", route}, {"params", params}, {"ops", ops},
            {"time_us", time_us}, {"fallback_us", fallback_us}};
  if (smem_carveout) j["smem_carveout"] = *smem_carveout;
  return j;
}

Json Plan::to_json() const {
  Json rs = Json::array();
  for (const auto& r : routes) rs.push_back(r.to_json());
  Json ks = Json::array();
  for (const auto& k : kernels)
    ks.push_back({{"name", k.name}, {"file", k.file}, {"sha256", k.sha256}, {"source_key", k.source_key}});
  Json j = {{"format", kFormat}, {"version", kVersion}, {"model_hash", model_hash}, {"model_name", model_name},
            {"architecture", architecture}, {"environment", environment.to_json()}, {"objective", objective},
            {"max_batch", max_batch}, {"numerics", {{"activations", activations}, {"kv_cache", kv_cache}}},
            {"routes", rs}, {"kernels", ks}, {"e2e", e2e.is_null() ? Json::object() : e2e}};
  j["cuda_fast"] = cuda_fast ? cuda_fast->to_json() : Json(nullptr);
  if (!weights.empty()) j["weights"] = weights;
  if (lm_head_fp8) j["lm_head"] = "fp8";
  return j;
}

Plan Plan::from_json(const Json& j, const std::string& subject) {
  if (!j.is_object()) throw_input(subject, "expected a JSON object");
  if (json_string(j, subject, "format") != kFormat) throw_input(subject, "format: not an agentcompile plan");
  const int64_t version = json_int(j, subject, "version", 0, 1 << 20);
  if (version != kVersion)
    throw_input(subject, "version " + std::to_string(version) + " is not supported (this engine reads version " +
                             std::to_string(kVersion) + ")");
  Plan p;
  p.model_hash = json_string(j, subject, "model_hash");
  if (p.model_hash.size() != 64 || p.model_hash.find_first_not_of("0123456789abcdef") != std::string::npos)
    throw_input(subject, "model_hash: expected 64 hex digits");
  p.model_name = json_opt_string(j, subject, "model_name").value_or("");
  p.architecture = json_opt_string(j, subject, "architecture").value_or("");
  p.environment = Environment::from_json(json_require(j, subject, "environment"), subject + ": environment");
  p.objective = json_string(j, subject, "objective");
  if (p.objective != "latency" && p.objective != "throughput")
    throw_input(subject, "objective: " + json_quote(p.objective) + " is not latency or throughput");
  p.max_batch = int(json_int(j, subject, "max_batch", 1, 4096));
  const Json& num = json_require(j, subject, "numerics");
  p.activations = json_string(num, subject + ": numerics", "activations");
  p.kv_cache = json_string(num, subject + ": numerics", "kv_cache");
  p.weights = json_opt_string(j, subject, "weights").value_or("");
  if (!p.weights.empty() && p.weights != "fp8-block" && p.weights != "fp8-channel")
    throw_input(subject, "weights: " + json_quote(p.weights) + " is not fp8-block or fp8-channel");
  if (const auto head = json_opt_string(j, subject, "lm_head")) {
    if (*head != "fp8") throw_input(subject, "lm_head: " + json_quote(*head) + " is not fp8");
    if (p.weights.empty()) throw_input(subject, "lm_head: fp8 without weights (an FP8 lm_head goes with FP8 weights)");
    p.lm_head_fp8 = true;
  }
  const Json& rs = json_require(j, subject, "routes");
  if (!rs.is_array()) throw_input(subject, "routes: expected an array");
  for (size_t i = 0; i < rs.size(); ++i) p.routes.push_back(route_from_json(rs[i], subject + ": routes[" + std::to_string(i) + "]"));
  // One binding per op and phase: two routes claiming the same op is a corrupt plan.
  std::map<std::pair<std::string, std::string>, bool> seen;
  for (const auto& r : p.routes)
    for (const auto& op : r.ops)
      if (!seen.emplace(std::make_pair(op, r.phase), true).second)
        throw_input(subject, "routes: op " + json_quote(op) + " is bound twice in phase " + r.phase);
  const Json& ks = json_require(j, subject, "kernels");
  if (!ks.is_array()) throw_input(subject, "kernels: expected an array");
  if (ks.size() > kMaxKernels)
    throw_input(subject, "kernels: " + std::to_string(ks.size()) + " entries, more than the " + std::to_string(kMaxKernels) + " allowed");
  for (size_t i = 0; i < ks.size(); ++i) {
    const std::string s = subject + ": kernels[" + std::to_string(i) + "]";
    PlanKernel k{json_string(ks[i], s, "name"), json_string(ks[i], s, "file"), json_string(ks[i], s, "sha256"),
                 json_opt_string(ks[i], s, "source_key").value_or(""), ""};
    if (!plain_relative_path(k.file))
      throw_input(s, "file: " + json_quote(k.file) + " must be a path inside the plan folder");
    for (const PlanKernel& o : p.kernels)
      if (o.name == k.name || o.file == k.file)
        throw_input(s, "names the " + std::string(o.name == k.name ? "kernel " + json_quote(k.name) : "file " + json_quote(k.file)) +
                           " of an earlier entry");
    p.kernels.push_back(std::move(k));
  }
  if (j.contains("cuda_fast") && !j.at("cuda_fast").is_null()) {
    if (p.environment.backend != "cuda") throw_input(subject, "cuda_fast: given for a cpu plan");
    const KnobTable* table = find_knob_table("cuda_fast");
    if (!table) throw_input(subject, "cuda_fast: this build has no CUDA backend to read it");
    p.cuda_fast = KnobValues::from_json(*table, j.at("cuda_fast"), subject + ": cuda_fast");
  }
  p.e2e = j.contains("e2e") ? j.at("e2e") : Json::object();
  return p;
}

Plan Plan::load_choices(const fs::path& dir, const std::string& flag) {
  const std::string subject = flag + " " + dir.string();
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw_input(subject, "not a plan folder (no such directory)");
  if (fs::symlink_status(dir / "plan.json", ec).type() == fs::file_type::not_found)
    throw_input(subject, "has no plan.json (compile one with `agentcompile compile`)");
  std::string text;
  try {
    text = FileInside(dir, "plan.json").read(kMaxPlanBytes);
  } catch (const Error& e) {
    throw_input(subject, "plan.json: " + e.reason());
  }
  return from_json(parse_json_strict(text, subject + "/plan.json"), subject + "/plan.json");
}

Plan Plan::load(const fs::path& dir, PlanKernels kernels) {
  const std::string subject = "--plan " + dir.string();
  Plan p = load_choices(dir, "--plan");
  if (kernels == PlanKernels::Rebuild) return p;  // binaries not even opened: compiled from templates
  // Each binary a regular file inside the folder (links resolved), each file once, all of them
  // within kMaxKernelBytes together; read from the file checked, then compared with its sha256.
  std::map<std::pair<uint64_t, uint64_t>, std::string> seen;
  size_t left = kMaxKernelBytes;
  for (auto& k : p.kernels) {
    try {
      const FileInside f(dir, k.file);
      if (auto [it, fresh] = seen.emplace(f.identity(), k.file); !fresh)
        throw_input(subject, "kernel binaries " + it->second + " and " + k.file + " are the same file");
      if (f.size() > left)
        throw_input(subject, "kernel binaries take more than the " + std::to_string(kMaxKernelBytes >> 20) +
                                 " MiB a plan may load (at " + k.file + ")");
      k.bytes = f.read(left);
      left -= k.bytes.size();
    } catch (const Error& e) {
      if (e.subject() == subject) throw;
      throw_input(subject, "kernel binary " + k.file + ": " + e.reason());
    }
    if (sha256_hex(k.bytes) != k.sha256)
      throw_input(subject, "kernel binary " + k.file + " does not match its sha256 (corrupt plan)");
  }
  return p;
}

const FolderKind& plan_folder_kind() {
  static const FolderKind kind{"plan", "agentcompile compile", [](const fs::path& dir) -> std::optional<std::vector<std::string>> {
    try {
      const Json j = parse_json_strict(FileInside(dir, "plan.json").read(kMaxPlanBytes), "plan.json");
      if (!j.is_object() || j.value("format", "") != Plan::kFormat) return std::nullopt;
      std::vector<std::string> files = {"plan.json", "report.json", "report.md"};
      if (j.contains("kernels") && j["kernels"].is_array())
        for (const Json& k : j["kernels"])
          if (k.is_object() && k.contains("file") && k["file"].is_string()) files.push_back(k["file"].get<std::string>());
      return files;
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }};
  return kind;
}

const PlanRoute* Plan::route_for_op(const std::string& op_name, const std::string& phase) const {
  for (const auto& r : routes)
    if (r.phase == phase && std::find(r.ops.begin(), r.ops.end(), op_name) != r.ops.end()) return &r;
  return nullptr;
}

void check_plan_usable(const Plan& plan, const fs::path& dir, const std::string& hash, const Environment& here) {
  const std::string subject = "--plan " + dir.string();
  if (plan.model_hash != hash)
    throw_input(subject, "was compiled for another model (" + (plan.model_name.empty() ? std::string("?") : plan.model_name) +
                             ", hash " + plan.model_hash.substr(0, 12) + "; this model's hash is " + hash.substr(0, 12) +
                             "); compile this model");
  if (std::string why = plan.environment.mismatch(here); !why.empty())
    throw_input(subject, "was compiled for another environment: " + why + "; compile it here");
}

}  // namespace ac
