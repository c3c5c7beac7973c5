// The CPU family registry and its constraints (the kernels are in linear_blocked.cpp and
// attention_blocked.cpp).
#include "agentcompile/backends/cpu/cpu_families.h"

#include <algorithm>
#include <cstring>

#include "agentcompile/core/error.h"

namespace ac::cpu {

namespace {

std::vector<CpuFamily> build() {
  std::vector<CpuFamily> v;
  v.push_back({"linear", "blocked",
               "register-tiled GEMV/GEMM: ROWS weight rows x TOKENS token rows per tile, KUNROLL partial sums, "
               "THREADS threads over output rows",
               {{"ROWS", {1, 2, 4, 8}}, {"TOKENS", {1, 2, 4}}, {"KUNROLL", {4, 8, 16}}, {"THREADS", {1, 2, 4, 8, 16, 32, 64}}},
               {"THREADS <= host cores", "THREADS <= ceil(out / ROWS) (no idle threads)",
                "ROWS * TOKENS * KUNROLL / simd_floats <= simd_registers (accumulators stay in registers)",
                "TOKENS <= tokens of the step unless TOKENS = 1 (a wider tile only repeats the tail path)"}});
  v.push_back({"attention", "blocked",
               "online-softmax attention over KV blocks of BLOCK_KV positions; GQA_SHARE=1 loads each K/V row once per "
               "group of query heads; THREADS threads over (token, head) items",
               {{"BLOCK_KV", {16, 32, 64, 128, 256}}, {"GQA_SHARE", {0, 1}}, {"THREADS", {1, 2, 4, 8, 16, 32, 64}}},
               {"THREADS <= host cores", "THREADS <= work items (tokens x heads, or tokens x kv_heads with GQA_SHARE)",
                "GQA_SHARE = 1 only when heads > kv_heads (otherwise it is GQA_SHARE = 0)",
                "BLOCK_KV <= context unless it is the smallest block (larger blocks run as one block)"}});
  v.push_back({"mlp", "fused",
               "a layer's MLP (mlp_in + mlp_out) in CHUNK-column steps of the intermediate dimension: gate/up rows, "
               "SwiGLU and the down projection's share per chunk in linear.blocked tiles, THREADS threads over chunks",
               {{"CHUNK", {16, 32, 64, 128, 256}}, {"ROWS", {1, 2, 4, 8}}, {"TOKENS", {1, 2, 4}}, {"KUNROLL", {4, 8, 16}},
                {"THREADS", {1, 2, 4, 8, 16, 32, 64}}},
               {"THREADS <= host cores", "THREADS <= ceil(intermediate / CHUNK) (no idle threads)",
                "CHUNK <= intermediate unless it is the smallest chunk",
                "ROWS * TOKENS * KUNROLL / simd_floats <= simd_registers (accumulators stay in registers)",
                "TOKENS <= tokens of the step unless TOKENS = 1"}});
  return v;
}

int get(const CpuParams& p, const char* name) {
  auto it = p.find(name);
  if (it == p.end()) throw_internal("cpu family", std::string("parameter ") + name + " not bound");
  return it->second;
}

// Why `p` is not a binding of f's domains ("" when it is).
std::string domain_error(const CpuFamily& f, const CpuParams& p) {
  for (const auto& d : f.params) {
    auto it = p.find(d.name);
    if (it == p.end()) return d.name + " not bound";
    if (std::find(d.values.begin(), d.values.end(), it->second) == d.values.end())
      return d.name + "=" + std::to_string(it->second) + " is outside its domain";
  }
  if (p.size() != f.params.size()) return "unknown parameter bound";
  return "";
}

void check_domain(const CpuFamily& f, const CpuParams& p) {
  if (std::string why = domain_error(f, p); !why.empty()) throw_internal("cpu family " + f.op + "." + f.name, why);
}

}  // namespace

const std::vector<CpuFamily>& cpu_families() {
  static const std::vector<CpuFamily> v = build();
  return v;
}

const CpuFamily* find_cpu_family(std::string_view op, std::string_view name) {
  for (const auto& f : cpu_families())
    if (f.op == op && f.name == name) return &f;
  return nullptr;
}

std::string cpu_family_constraint(const CpuFamily& f, const CpuParams& p, const CpuOpShape& s, const CpuHost& host) {
  if (std::string why = domain_error(f, p); !why.empty()) return why;
  const int threads = p.at("THREADS");
  if (threads > host.cores) return "THREADS=" + std::to_string(threads) + " exceeds the host's " + std::to_string(host.cores) + " cores";
  if (f.op == "linear" || f.op == "mlp") {
    const int rows = p.at("ROWS"), tokens = p.at("TOKENS"), ku = p.at("KUNROLL");
    if (f.op == "linear" && s.out > 0 && threads > (s.out + rows - 1) / rows) return "THREADS exceeds the row blocks of the output";
    if (f.op == "mlp") {
      const int chunk = p.at("CHUNK");
      if (s.out > 0 && chunk > s.out && chunk != f.params[0].values.front())
        return "CHUNK=" + std::to_string(chunk) + " exceeds the intermediate size";
      if (s.out > 0 && threads > (s.out + chunk - 1) / chunk) return "THREADS exceeds the chunks of the intermediate dimension";
    }
    const int regs = rows * tokens * ku / std::max(1, host.simd_floats);
    if (regs > host.simd_registers)
      return "ROWS*TOKENS*KUNROLL needs " + std::to_string(regs) + " vector registers, the host has " +
             std::to_string(host.simd_registers);
    if (tokens > 1 && tokens > s.tokens) return "TOKENS=" + std::to_string(tokens) + " exceeds the step's tokens";
    return "";
  }
  if (f.op == "attention") {
    const int block = p.at("BLOCK_KV"), share = p.at("GQA_SHARE");
    if (share == 1 && s.heads > 0 && s.heads == s.kv_heads) return "GQA_SHARE=1 needs heads > kv_heads";
    const int64_t items = s.tokens * (share ? s.kv_heads : s.heads);
    if (items > 0 && threads > items) return "THREADS exceeds the work items";
    if (s.context > 0 && block > s.context && block != f.params[0].values.front())
      return "BLOCK_KV=" + std::to_string(block) + " exceeds the context";
    return "";
  }
  return "";
}

LinearBlockedParams linear_blocked_params(const CpuParams& p) {
  check_domain(*find_cpu_family("linear", "blocked"), p);
  return {get(p, "ROWS"), get(p, "TOKENS"), get(p, "KUNROLL"), get(p, "THREADS")};
}

MlpFusedParams mlp_fused_params(const CpuParams& p) {
  check_domain(*find_cpu_family("mlp", "fused"), p);
  return {get(p, "CHUNK"), {get(p, "ROWS"), get(p, "TOKENS"), get(p, "KUNROLL"), 1}, get(p, "THREADS")};
}

AttentionBlockedParams attention_blocked_params(const CpuParams& p) {
  check_domain(*find_cpu_family("attention", "blocked"), p);
  return {get(p, "BLOCK_KV"), get(p, "GQA_SHARE"), get(p, "THREADS")};
}

void kv_write(const float* k_new, const float* v_new, int64_t n, const int32_t* positions, const int32_t* slots,
              const ref::KvCacheView& cache) {
  for (int64_t t = 0; t < n; ++t) {
    const int64_t row = (int64_t(slots[t]) * cache.max_seq + positions[t]) * cache.kv_dim;
    std::memcpy(cache.k + row, k_new + t * cache.kv_dim, size_t(cache.kv_dim) * sizeof(float));
    std::memcpy(cache.v + row, v_new + t * cache.kv_dim, size_t(cache.kv_dim) * sizeof(float));
  }
}

}  // namespace ac::cpu
