#include "backends/cuda/plan_config.h"

namespace ac {

namespace {
struct GemvSlot {
  const char* name;
  cuda::GemvChoice cuda::FastConfig::*field;
  cuda::MmaChoice cuda::FastConfig::*mma;
};
constexpr GemvSlot kSlots[] = {{"qkv", &cuda::FastConfig::qkv, &cuda::FastConfig::qkv_mma},
                               {"o", &cuda::FastConfig::o, &cuda::FastConfig::o_mma},
                               {"gate_up", &cuda::FastConfig::gate_up, &cuda::FastConfig::gate_up_mma},
                               {"down", &cuda::FastConfig::down, &cuda::FastConfig::down_mma},
                               {"lm_head", &cuda::FastConfig::lm_head, &cuda::FastConfig::lm_head_mma}};
}  // namespace

cuda::FastConfig fast_config_of(const std::optional<PlanCudaFast>& plan) {
  cuda::FastConfig c;
  if (!plan) return c;
  for (const GemvSlot& s : kSlots) {
    if (auto it = plan->gemv.find(s.name); it != plan->gemv.end())
      c.*s.field = cuda::GemvChoice{it->second.block, it->second.rows, it->second.unroll, it->second.splitk};
    if (auto it = plan->gemv_mma.find(s.name); it != plan->gemv_mma.end())
      c.*s.mma = cuda::MmaChoice{it->second.block, it->second.rows, it->second.unroll, it->second.splitk};
  }
  c.qkv_post_block = plan->qkv_post_block;
  c.attn_block = plan->attn_block;
  c.attn_tile = plan->attn_tile;
  c.attn_split = plan->attn_split;
  c.attn_ilp = plan->attn_ilp;
  c.cuda_graph = plan->cuda_graph;
  c.pdl = plan->pdl;
  return c;
}

PlanCudaFast plan_fast_of(const cuda::FastConfig& c) {
  PlanCudaFast p;
  for (const GemvSlot& s : kSlots) {
    const cuda::GemvChoice& g = c.*s.field;
    p.gemv[s.name] = PlanGemv{g.block, g.rows, g.unroll, g.splitk};
    const cuda::MmaChoice& m = c.*s.mma;
    p.gemv_mma[s.name] = PlanGemv{m.block, m.mt, m.unroll, m.splitk};
  }
  p.qkv_post_block = c.qkv_post_block;
  p.attn_block = c.attn_block;
  p.attn_tile = c.attn_tile;
  p.attn_split = c.attn_split;
  p.attn_ilp = c.attn_ilp;
  p.cuda_graph = c.cuda_graph;
  p.pdl = c.pdl;
  return p;
}

}  // namespace ac
