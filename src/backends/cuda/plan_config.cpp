#include "backends/cuda/plan_config.h"

#include <map>

#include "agentcompile/backends/cuda/cuda_executor.h"
#include "backends/cuda/nvrtc_jit.h"

namespace ac {

cuda::FastConfig fast_config_of(const std::optional<PlanCudaFast>& plan) {
  cuda::FastConfig c;
  if (!plan) return c;
  for (const cuda::GemvSlotField& s : cuda::kGemvSlots) {
    if (auto it = plan->gemv.find(s.name); it != plan->gemv.end())
      c.*s.gemv = cuda::GemvChoice{it->second.block, it->second.rows, it->second.unroll, it->second.splitk};
    if (auto it = plan->gemv_mma.find(s.name); it != plan->gemv_mma.end())
      c.*s.mma = cuda::MmaChoice{it->second.block, it->second.rows, it->second.unroll, it->second.splitk};
  }
  c.qkv_post_block = plan->qkv_post_block;
  c.attn_block = plan->attn_block;
  c.attn_tile = plan->attn_tile;
  c.attn_split = plan->attn_split;
  c.attn_ilp = plan->attn_ilp;
  if (plan->attn_split_long) c.attn_split_long = *plan->attn_split_long;
  if (plan->attn_long_from) c.attn_long_from = *plan->attn_long_from;
  if (plan->attn_cluster) c.attn_cluster = *plan->attn_cluster;
  if (plan->attn_cluster_long) c.attn_cluster_long = *plan->attn_cluster_long;
  if (plan->persistent) c.persistent = *plan->persistent;
  if (plan->attn_o) c.attn_o = *plan->attn_o;
  if (plan->attn_merge_o) c.attn_merge_o = *plan->attn_merge_o;
  if (plan->smem_carveout) c.smem_carveout = *plan->smem_carveout;
  c.region_carveout = plan->region_carveout;
  c.cuda_graph = plan->cuda_graph;
  c.pdl = plan->pdl;
  return c;
}

PlanCudaFast plan_fast_of(const cuda::FastConfig& c) {
  PlanCudaFast p;
  for (const cuda::GemvSlotField& s : cuda::kGemvSlots) {
    const cuda::GemvChoice& g = c.*s.gemv;
    p.gemv[s.name] = PlanGemv{g.block, g.rows, g.unroll, g.splitk};
    const cuda::MmaChoice& m = c.*s.mma;
    p.gemv_mma[s.name] = PlanGemv{m.block, m.mt, m.unroll, m.splitk};
  }
  p.qkv_post_block = c.qkv_post_block;
  p.attn_block = c.attn_block;
  p.attn_tile = c.attn_tile;
  p.attn_split = c.attn_split;
  p.attn_ilp = c.attn_ilp;
  p.attn_split_long = c.attn_split_long;
  p.attn_long_from = c.attn_long_from;
  p.attn_cluster = c.attn_cluster;
  p.attn_cluster_long = c.attn_cluster_long;
  if (c.persistent) p.persistent = c.persistent;
  if (c.attn_o) p.attn_o = c.attn_o;
  if (c.attn_merge_o) p.attn_merge_o = c.attn_merge_o;
  if (c.smem_carveout >= 0) p.smem_carveout = c.smem_carveout;
  for (const auto& [region, v] : c.region_carveout)
    if (v >= 0) p.region_carveout[region] = v;
  p.cuda_graph = c.cuda_graph;
  p.pdl = c.pdl;
  return p;
}

// The plan's kernel list was made from these same variants (cuda_plan_kernels), so a name the
// engine no longer produces or a key that differs means other code than the plan measured.
std::vector<std::string> cuda_stale_plan_kernels(const Graph& g, const Plan& plan) {
  std::vector<std::string> stale;
  if (!plan.cuda_fast || plan.kernels.empty() || g.ops.empty() || g.ops.front().weights.empty()) return stale;
  const DType wt = g.ops.front().weights.at(0)->dtype;
  std::map<std::string, std::string> key;  // variant name -> this engine's source key
  for (const cuda::Variant& v : cuda::fast_path_variants(g.config, wt, fast_config_of(plan.cuda_fast), plan.environment.arch))
    key.emplace(v.name(), cuda::jit_key(cuda::JitRequest{v.name(), v.source(), v.arch, {}}));
  for (const PlanKernel& k : plan.kernels) {
    if (k.source_key.empty()) continue;
    auto it = key.find(k.name);
    if (it == key.end() || it->second != k.source_key) stale.push_back(k.name);
  }
  return stale;
}

}  // namespace ac
