// decode_layers.persistent (FastConfig::persistent): every decoder layer of a batch-1 decode step as
// one persistent kernel: the point it runs for a model and the GPU, its layer table and its launch.
#include "backends/cuda/fast/executor.h"

#include <algorithm>
#include <cmath>

#include "agentcompile/core/error.h"

namespace ac::cuda {

std::optional<PersistentPlan> persistent_plan(const ModelConfig& c, const FastConfig& cfg, DType wt, const std::string& arch,
                                              bool biased) {
  if (!cfg.persistent || c.is_moe()) return std::nullopt;  // it runs dense MLPs only
  const Family& f = find_family("decode_layers", "persistent");
  const long long H = c.hidden_size, I = c.intermediate_size, qd = c.q_dim(), hd = c.head_dim;
  const long long group = c.num_heads / c.num_kv_heads;
  if (!arch_constraint(f, arch).empty() || biased || (hd != 32 && hd != 64 && hd != 128) || c.num_heads % c.num_kv_heads ||
      group > cfg.persistent_block / 32 - 1 || H % 8 || I % 8 || qd % 8)
    return std::nullopt;
  if (cfg.persistent_stage_kb < 1 || cfg.persistent_stage_kb > 96)
    throw_input("decode_layers.persistent", "persistent_stage_kb must be 1..96");
  // Rows per tile: as many as fill a stage (1..16: accumulators per thread), at least one row.
  const long long stage = (long long)cfg.persistent_stage_kb * 1024;
  auto rows = [&](long long K, int mats) {
    const int r = (int)std::clamp<long long>(stage / (mats * K * 2), 1, 16 / mats);  // 16 accumulators per thread
    return r > 8 ? r / 2 * 2 : r;  // the family's domain: 1..8, then even
  };
  const int rqkv = rows(H, 1), ro = rows(qd, 1), rgu = rows(H, 2), rdown = rows(I, 1);
  long long tile = std::max({rqkv * H, ro * qd, 2 * rgu * H, rdown * I}) * 2;
  tile = (tile + 127) / 128 * 128;
  const size_t xs = size_t(std::max({H, qd, I})) * 4 + size_t(H) * 2;  // x', then the norm weights
  // Besides the ring, the kernel's static arrays (PlAttnSmem, the tiles' warp sums, the stages'
  // barriers, the norm's partial sums), rounded up to the next KiB (the fixed 22 KiB allowed
  // before was 128 bytes short of the arrays for 8 query heads of 128 per KV head).
  const long long cw = cfg.persistent_block / 32 - 1, red = std::max({rqkv, ro, 2 * rgu, rdown});
  auto static_bytes = [&](int st) {
    const long long b = 2 * 32 * (hd + 8) * 2 + group * hd * 4 + 2 * hd * 2 + 4 + 2 * cw * red * 4 + 16LL * st + cw * 4;
    return size_t((b + 1023) / 1024 * 1024);
  };
  auto fits = [&](int st) {
    return size_t(st) * size_t(tile) + xs + static_bytes(st) <= size_t(max_dynamic_smem(arch)) + 16 * 1024;
  };
  int stages = cfg.persistent_stages;
  while (stages > 2 && !fits(stages)) stages = stages > 6 ? 6 : stages - 1;  // the domain
  if (!fits(stages)) return std::nullopt;
  try {  // make_variant checks the domains and the constraint; a configured point is input
    Variant v = make_variant(f,
                             {{"BLOCK", cfg.persistent_block}, {"STAGES", stages}, {"SPLITS", cfg.persistent_splits},
                              {"HD", int(hd)}, {"GROUP", int(group)}, {"RQKV", rqkv}, {"RO", ro}, {"RGU", rgu},
                              {"RDOWN", rdown}},
                             {wt}, arch);
    return PersistentPlan{std::move(v), tile, size_t(stages) * size_t(tile) + xs};
  } catch (const Error& e) {
    throw_input("decode_layers.persistent", e.reason());
  }
}

// decode_layers.persistent (FastConfig::persistent): the layer table, its counters and partials.
void FastExecutor::setup_persistent() {
  const ModelConfig& c = g_.config;
  bool biased = false;
  for (const LayerOps& L : ops_.layers)
    for (const Op* op : {L.q, L.k, L.v, L.o, L.gate, L.up, L.down}) biased = biased || (op && op->weights.size() > 1);
  pl_ = persistent_plan(c, cfg_, wt_, arch_, biased);
  if (!pl_) return;
  const LoadedKernel& k = load_kernel(pl_->v);
  int per_sm = 0;
  CU_CHECK(drv().cuFuncSetAttribute(k.fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(pl_->smem)));
  CU_CHECK(drv().cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k.fn, pl_->v.threads(), pl_->smem));
  // Every block must be resident at once (they wait on one another): one per SM.
  if (per_sm < 1) throw_internal("decode_layers.persistent", k.name + " cannot be resident on an SM");
  std::vector<PersistentLayer> t;
  for (size_t l = 0; l < ops_.layers.size(); ++l) {
    const LayerOps& L = ops_.layers[l];
    t.push_back(PersistentLayer{wptr(L.input_norm, 0), reinterpret_cast<const void*>(fw_->wqkv[l].ptr()),
                                L.q_norm ? wptr(L.q_norm, 0) : nullptr, L.k_norm ? wptr(L.k_norm, 0) : nullptr,
                                wptr(L.o, 0), wptr(L.post_norm, 0), wptr(L.gate, 0), wptr(L.up, 0), wptr(L.down, 0),
                                kcache_[l].as<unsigned short>(), vcache_[l].as<unsigned short>()});
  }
  pl_layers_ = DeviceBuffer(t.size() * sizeof(PersistentLayer));
  pl_layers_.upload(t.data(), t.size() * sizeof(PersistentLayer), s_);
  const size_t counters = size_t(c.num_layers) * 5 + size_t(c.num_kv_heads) + 1;
  pl_counters_ = DeviceBuffer(counters * 4);
  CU_CHECK(drv().cuMemsetD32Async(pl_counters_.ptr(), 0, counters, s_));
  const size_t parts = size_t(c.num_heads) * size_t(pl_->v.param("SPLITS"));
  pl_part_o_ = DeviceBuffer(parts * size_t(c.head_dim) * 4);
  pl_part_ml_ = DeviceBuffer(parts * 2 * 4);
  CU_CHECK(drv().cuStreamSynchronize(s_));  // t goes out of scope
}

void FastExecutor::persistent_layers() {
  const ModelConfig& c = g_.config;
  PersistentParams p{pl_layers_.as<PersistentLayer>(), resid_.as<float>(), qkv_.as<float>(), attn_.as<float>(),
                     gate_.as<float>(), pl_part_o_.as<float>(), pl_part_ml_.as<float>(), pl_counters_.as<unsigned>(),
                     rope_cos_.as<float>(), rope_sin_.as<float>(), in_.positions(), in_.slots(), c.num_layers,
                     c.hidden_size, c.intermediate_size, c.num_heads, c.num_kv_heads, lim_.max_seq, pl_->stage_bytes,
                     float(c.rms_norm_eps), 1.0f / std::sqrt(float(c.head_dim))};
  launch(load_kernel(pl_->v), Dim3{unsigned(dev_.info().sm_count)}, unsigned(pl_->v.threads()), pl_->smem, &p, cfg_.pdl);
}

}  // namespace ac::cuda
