// decode_layers.persistent (FastConfig::persistent): every decoder layer of a batch-1 decode step as
// one persistent kernel; the point it runs for a model and the GPU.
#include <algorithm>

#include "agentcompile/core/error.h"
#include "backends/cuda/fast_executor.h"

namespace ac::cuda {

std::optional<PersistentPlan> persistent_plan(const ModelConfig& c, const FastConfig& cfg, DType wt, const std::string& arch,
                                              bool biased) {
  if (!cfg.persistent) return std::nullopt;
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

}  // namespace ac::cuda
