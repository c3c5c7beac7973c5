#include "backends/cuda/plan_config.h"

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
  p.cuda_graph = c.cuda_graph;
  p.pdl = c.pdl;
  return p;
}

}  // namespace ac
