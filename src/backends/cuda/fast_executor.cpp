#include "backends/cuda/fast_executor.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <sstream>

#include "agentcompile/core/error.h"
#include "agentcompile/ir/decoder_layers.h"
#include "agentcompile/ir/rope.h"
#include "agentcompile/plan/plan.h"
#include "backends/cuda/cublas_route.h"
#include "backends/cuda/device.h"
#include "backends/cuda/kernel_loader.h"
#include "backends/cuda/step_inputs.h"
#include "backends/cuda/timeline.h"

extern "C" {
#include "../../../kernels/cuda/common/params.h"
}

namespace ac::cuda {

namespace {

constexpr unsigned kRefBlock = 256;
constexpr int kMaxBatch = 8;

bool is16(DType t) { return t == DType::BF16 || t == DType::F16; }

}  // namespace

int batch_template(long long n) { return n <= 1 ? 1 : n <= 2 ? 2 : n <= 4 ? 4 : 8; }

const GemvSlotField& gemv_slot(const std::string& name) {
  for (const GemvSlotField& s : kGemvSlots)
    if (name == s.name) return s;
  throw_internal("fast path", "no GEMV region named " + name);
}

TopKShape topk_shape(long long vocab, int k) {
  const long long chunk = std::max<long long>(4096, k);
  return TopKShape{chunk, (vocab + chunk - 1) / chunk};
}

std::string fast_path_unsupported(const Graph& g) {
  const ModelConfig& c = g.config;
  if (c.mlp_bias) return "MLP biases";
  if (c.head_dim != 32 && c.head_dim != 64 && c.head_dim != 128 && c.head_dim != 256)
    return "head_dim " + std::to_string(c.head_dim) + " (the fused attention handles 32, 64, 128, 256)";
  const int64_t group = c.num_heads / c.num_kv_heads;
  if (group > 8 || group == 7) return "GQA group of " + std::to_string(group);
  if (c.hidden_size % 8 || c.q_dim() % 8 || c.intermediate_size % 8) return "dimensions not multiples of 8";
  if ((group * c.head_dim) % 64 != 0) return "GQA group x head_dim not a multiple of 64";
  for (const Op& op : g.ops)
    for (const TensorInfo* w : op.weights)
      if (!is16(w->dtype)) return "weight " + w->name + " is " + std::string(dtype_user_name(w->dtype));
  DType first = g.ops.front().weights.at(0)->dtype;
  for (const Op& op : g.ops)
    for (const TensorInfo* w : op.weights)
      if (w->dtype != first) return "mixed weight dtypes";
  try {
    match_decoder_ops(g);
  } catch (const Error& e) {
    return e.reason();
  }
  return "";
}

namespace {

Variant topk_variant(const FastConfig& cfg, const std::string& arch) {
  return make_variant(find_family("topk", "radix"), {{"BLOCK", cfg.top_k_block}}, {}, arch);
}
Variant qkv_post_variant(const FastConfig& cfg, DType wt, const std::string& arch) {
  return make_variant(find_family("qkv_post", "fused"), {{"BLOCK", cfg.qkv_post_block}}, {wt}, arch);
}
// The split length of the decode attention: the configured one, halved until the fused kernel's
// rows fit its shared-memory budget (long head dims): attn_short_smem_budget for short contexts
// (prefill attention uses the same splits); for long contexts attn_split_long within what `arch`
// allows (on the H200 Qwen3's head dim 128 keeps splits of 256 there).
int attn_split(const ModelConfig& c, const FastConfig& cfg, const std::string& arch, bool long_ctx = false) {
  int split = long_ctx ? cfg.attn_split_long : cfg.attn_split;
  const int group = int(c.num_heads / c.num_kv_heads);
  const int budget = long_ctx ? max_dynamic_smem(arch) : attn_short_smem_budget(arch);
  while (split > 16 && attn_fused_smem_bytes(split, int(c.head_dim), group) > budget) split /= 2;
  return split;
}
// The attention block shrinks (down to 64 threads) until the group's outputs divide among its threads.
int attn_block(const ModelConfig& c, const FastConfig& cfg) {
  const int outputs = int(c.num_heads / c.num_kv_heads * c.head_dim);
  int block = cfg.attn_block;
  while (block > 64 && outputs % block != 0) block /= 2;
  return block;
}
Variant attn_variant(const ModelConfig& c, const FastConfig& cfg, const std::string& arch) {
  return make_variant(find_family("attn_decode", "split"),
                      {{"BLOCK", std::min(attn_block(c, cfg), 256)}, {"TILE", std::min(cfg.attn_tile, attn_split(c, cfg, arch))},
                       {"SPLIT", attn_split(c, cfg, arch)}, {"HD", int(c.head_dim)}, {"GROUP", int(c.num_heads / c.num_kv_heads)}},
                      {}, arch);
}
Variant fused_attn_variant(const ModelConfig& c, const FastConfig& cfg, DType wt, const std::string& arch,
                           bool long_ctx = false) {
  return make_variant(find_family("attn_decode", "fused"),
                      {{"BLOCK", attn_block(c, cfg)}, {"SPLIT", attn_split(c, cfg, arch, long_ctx)}, {"HD", int(c.head_dim)},
                       {"GROUP", int(c.num_heads / c.num_kv_heads)}, {"ILP", cfg.attn_ilp}},
                      {wt}, arch);
}
// attn_decode.cluster for the short-context steps, when configured and possible: CLUSTER blocks
// of at most SPLIT rows cover attn_long_from positions (SPLIT the power of two that does, 16 to
// 128), on sm_90 and later.
std::optional<Variant> cluster_attn_variant(const ModelConfig& c, const FastConfig& cfg, DType wt, const std::string& arch) {
  const int cl = cfg.attn_cluster;
  if (cl == 0 || cfg.attn_long_from <= 0) return std::nullopt;
  const Family& f = find_family("attn_decode", "cluster");
  if (!arch_constraint(f, arch).empty()) return std::nullopt;
  int split = 16;
  while (split * cl < cfg.attn_long_from) split *= 2;
  if (split > 128) return std::nullopt;
  const std::map<std::string, int> values = {{"BLOCK", attn_block(c, cfg)},
                                             {"SPLIT", split},
                                             {"HD", int(c.head_dim)},
                                             {"GROUP", int(c.num_heads / c.num_kv_heads)},
                                             {"CLUSTER", cl}};
  if (!f.constraint(values).empty()) return std::nullopt;
  return make_variant(f, values, {wt}, arch);
}
// attn_decode.cluster for batch-1 steps past attn_long_from, when configured and possible, shortest
// reach first: blocks of attn_cluster_long_split rows (0: 256, halved until they fit), then of 512
// rows where the GPU's shared memory holds them, each covering CLUSTER * SPLIT positions (a split
// that covers no more than the one before, or than the short range, is left out). Two splits
// because on the H200 the longer one was faster only beyond the shorter one's reach; 512 rows
// because head dim 128's 384 (212 of the SM's 228 KiB) were -5.6% to +2.9% by model and plan
// (bench/results/2026-11-30-cluster-long/).
std::vector<Variant> cluster_long_attn_variants(const ModelConfig& c, const FastConfig& cfg, DType wt,
                                                const std::string& arch) {
  const int cl = cfg.attn_cluster_long;
  if (cl == 0 || cfg.attn_long_from <= 0) return {};
  const Family& f = find_family("attn_decode", "cluster");
  if (!arch_constraint(f, arch).empty()) return {};
  const int hd = int(c.head_dim), group = int(c.num_heads / c.num_kv_heads);
  const auto fits = [&](int split) { return attn_fused_smem_bytes(split, hd, group) <= max_dynamic_smem(arch); };
  int first = cfg.attn_cluster_long_split > 0 ? cfg.attn_cluster_long_split : 256;
  while (cfg.attn_cluster_long_split == 0 && first > 16 && !fits(first)) first /= 2;
  const int splits[] = {first, 512};
  std::vector<Variant> out;
  int reach = cfg.attn_long_from;
  for (int split : splits) {
    if (!fits(split) || split * cl <= reach) continue;
    const std::map<std::string, int> values = {
        {"BLOCK", attn_block(c, cfg)}, {"SPLIT", split}, {"HD", hd}, {"GROUP", group}, {"CLUSTER", cl}};
    if (!f.constraint(values).empty()) continue;
    out.push_back(make_variant(f, values, {wt}, arch));
    reach = split * cl;
  }
  return out;
}
Variant combine_variant(const ModelConfig& c, const FastConfig& cfg, const std::string& arch) {
  return make_variant(find_family("attn_combine", "split"), {{"SPLIT", attn_split(c, cfg, arch)}, {"HD", int(c.head_dim)}}, {},
                      arch);
}

}  // namespace

// A batch of B tokens turns the GEMV into a skinny GEMM: rows per warp, then the unroll, shrink
// until accumulators and loads in flight fit the registers without spilling (at batch 1 every
// valid point is kept as it is).
Variant fast_gemv_variant(const GemvChoice& ch, int epi, int batch, DType wt, const std::string& arch) {
  const int mats = epi == kEpiSwiglu ? 2 : 1;
  int rows = ch.rows, unroll = ch.unroll;
  while (rows > 1 && rows * batch * mats > 8) rows /= 2;
  while (unroll > 1 && rows * batch * mats * unroll > 8) unroll /= 2;
  return make_variant(find_family("gemv", "fused"),
                      {{"BLOCK", ch.block}, {"ROWS", rows}, {"UNROLL", unroll},
                       {"SPLITK", epi == kEpiResidual ? ch.splitk : 1}, {"BATCH", batch}, {"EPI", epi}},
                      {wt}, arch);
}

namespace {
// gemv.mma's dynamic shared memory: the warps' partial tiles.
size_t mma_smem(int block, int mt, int mats) { return size_t(block / 32 * mats * mt * 128) * 4; }
}  // namespace

std::optional<Variant> fast_mma_variant(const MmaChoice& ch, int terms, int epi, int batch, long long K, DType wt,
                                        const std::string& arch) {
  if (wt != DType::BF16 || K % 32 != 0 || arch.size() < 4 || std::atoi(arch.c_str() + 3) < 80) return std::nullopt;
  const int mats = epi == kEpiSwiglu ? 2 : 1;
  int mt = ch.mt, unroll = ch.unroll;
  while (mt > 1 && mt * unroll * mats > 4) mt /= 2;
  while (unroll > 1 && mt * unroll * mats > 4) unroll /= 2;
  const int splitk = epi == kEpiResidual ? ch.splitk : 1;
  return make_variant(find_family("gemv", "mma"),
                      {{"BLOCK", ch.block}, {"MT", mt}, {"UNROLL", unroll}, {"SPLITK", splitk}, {"TERMS", terms},
                       {"BATCH", batch}, {"EPI", epi}},
                      {}, arch);
}

Variant fast_decode_gemv(const FastConfig& cfg, const GemvChoice& gemv, const MmaChoice& mma, int epi, int batch,
                         long long K, DType wt, const std::string& arch) {
  if (cfg.batched_mma && batch > 1 && batch >= cfg.mma_min_batch)
    if (auto v = fast_mma_variant(mma, cfg.mma_terms, epi, batch, K, wt, arch)) return *v;
  return fast_gemv_variant(gemv, epi, batch, wt, arch);
}

std::vector<long long> cluster_long_reaches(const ModelConfig& c, const FastConfig& cfg, DType wt, const std::string& arch) {
  std::vector<long long> r;
  for (const Variant& v : cluster_long_attn_variants(c, cfg, wt, arch)) r.push_back((long long)v.param("CLUSTER") * v.param("SPLIT"));
  return r;
}

AttnRange attn_range_of(const FastConfig& cfg, int batch, long long longest, const std::vector<long long>& reaches) {
  if (cfg.attn_long_from <= 0 || longest <= cfg.attn_long_from) return AttnRange::Short;
  if (batch == 1)
    for (size_t i = 0; i < reaches.size(); ++i)
      if (longest <= reaches[i]) return i == 0 ? AttnRange::ClusterLong : AttnRange::ClusterLonger;
  return AttnRange::Long;
}

AttnRange decode_attention_range(const ModelConfig& c, const FastConfig& cfg, DType wt, const std::string& arch, int batch,
                                 long long longest) {
  return attn_range_of(cfg, batch, longest, cluster_long_reaches(c, cfg, wt, arch));
}

Variant decode_attention_variant(const ModelConfig& c, const FastConfig& cfg, DType wt, const std::string& arch, int batch,
                                 long long longest) {
  switch (decode_attention_range(c, cfg, wt, arch, batch, longest)) {
    case AttnRange::Short:
      if (batch == 1)
        if (auto cv = cluster_attn_variant(c, cfg, wt, arch)) return *cv;
      return fused_attn_variant(c, cfg, wt, arch, false);
    case AttnRange::ClusterLong:
      return cluster_long_attn_variants(c, cfg, wt, arch).at(0);
    case AttnRange::ClusterLonger:
      return cluster_long_attn_variants(c, cfg, wt, arch).at(1);
    case AttnRange::Long:
      break;
  }
  return fused_attn_variant(c, cfg, wt, arch, true);
}

std::optional<AttnOPlan> attn_o_plan(const ModelConfig& c, const FastConfig& cfg, DType wt, const std::string& arch, int batch,
                                     long long longest, bool o_bias) {
  if (cfg.attn_o == 0 || o_bias || batch != 1) return std::nullopt;
  if (!valid_attn_o(cfg.attn_o)) throw_input("attn_o.cluster", "attn_o must be 0, 1, 2 or 4");
  if (decode_attention_range(c, cfg, wt, arch, batch, longest) != AttnRange::Short) return std::nullopt;
  const std::optional<Variant> cv = cluster_attn_variant(c, cfg, wt, arch);
  if (!cv) return std::nullopt;
  const long long blocks = (long long)cv->param("CLUSTER") * cfg.attn_o;
  if (c.hidden_size % blocks != 0) return std::nullopt;
  const int split = cv->param("SPLIT"), hd = int(c.head_dim), group = int(c.num_heads / c.num_kv_heads);
  const long long rows = c.hidden_size / blocks;
  const long long smem = attn_o_smem_bytes(split, hd, group, rows);
  if (smem > max_dynamic_smem(arch)) return std::nullopt;
  const std::map<std::string, int> values = {{"BLOCK", cv->param("BLOCK")}, {"SPLIT", split},     {"HD", hd},
                                             {"GROUP", group},              {"CLUSTER", cv->param("CLUSTER")},
                                             {"COPIES", cfg.attn_o},        {"LATE", cfg.attn_o_late}};
  const Family& f = find_family("attn_o", "cluster");
  if (!f.constraint(values).empty()) return std::nullopt;
  return AttnOPlan{make_variant(f, values, {wt}, arch), rows, size_t(smem)};
}

std::optional<MergeOPlan> merge_o_plan(const ModelConfig& c, const FastConfig& cfg, DType wt, const std::string& arch,
                                       int batch, long long longest, bool o_bias) {
  if (cfg.attn_merge_o == 0 || batch != 1 || attn_o_plan(c, cfg, wt, arch, batch, longest, o_bias)) return std::nullopt;
  if (decode_attention_range(c, cfg, wt, arch, batch, longest) != AttnRange::Short) return std::nullopt;
  const std::optional<Variant> cv = cluster_attn_variant(c, cfg, wt, arch);
  if (!cv) return std::nullopt;
  const int parts = cv->param("CLUSTER");
  const std::map<std::string, int> av = {{"BLOCK", cv->param("BLOCK")}, {"SPLIT", cv->param("SPLIT")},
                                         {"HD", cv->param("HD")},       {"GROUP", cv->param("GROUP")},
                                         {"PARTS", parts}};
  const Family& fa = find_family("attn_decode", "parts");
  if (!fa.constraint(av).empty()) return std::nullopt;
  const Variant o = fast_gemv_variant(cfg.o, kEpiResidual, 1, wt, arch);
  const std::map<std::string, int> ov = {{"BLOCK", o.param("BLOCK")},   {"ROWS", o.param("ROWS")},
                                         {"UNROLL", o.param("UNROLL")}, {"SPLITK", o.param("SPLITK")},
                                         {"BATCH", 1},                  {"PARTS", parts}};
  return MergeOPlan{make_variant(fa, av, {wt}, arch), make_variant(find_family("gemv", "merged"), ov, {wt}, arch)};
}

long long decode_attention_blocks(const Variant& v, long long max_seq) {
  if (v.family->name == "cluster") return v.param("CLUSTER");
  if (v.family->name == "parts") return v.param("PARTS");
  return (max_seq + v.param("SPLIT") - 1) / v.param("SPLIT");
}

LaunchShape gemv_launch_shape(const Variant& v, long long N, long long K) {
  if (v.family->name == "mma") {
    const int splitk = v.param("SPLITK"), mt = v.param("MT"), block = v.param("BLOCK");
    return LaunchShape{unsigned((N + 16 * mt - 1) / (16 * mt)), unsigned(splitk), unsigned(block),
                       mma_smem(block, mt, v.param("EPI") == kEpiSwiglu ? 2 : 1)};
  }
  const int splitk = v.param("SPLITK"), block = v.param("BLOCK"), rows = v.param("ROWS");
  const long long kchunk = gemv_kchunk(K, splitk);
  const long long rows_per_block = block / 32 * rows;
  return LaunchShape{unsigned((N + rows_per_block - 1) / rows_per_block), unsigned(splitk), unsigned(block),
                     size_t(v.param("BATCH")) * size_t(kchunk) * 4};
}

void launch_argmax_finish(unsigned long long* best, int* tokens, long long B, CUstream s, bool pdl,
                          const std::string& arch, int carveout, int* positions, int* host_tokens, long long slot_len) {
  ArgmaxFinishParams f{best, tokens, B, positions, host_tokens, slot_len};
  const Variant v = make_variant(find_family("argmax_finish", "ref"), {{"BLOCK", int(kRefBlock)}}, {}, arch);
  launch_kernel(load_kernel(v), Dim3{1}, kRefBlock, 0, s, &f, pdl, carveout);
}

std::optional<Variant> fast_mlp_variant(const FastConfig& cfg, int batch, long long H, long long I, DType wt,
                                        const std::string& arch) {
  if (batch > cfg.mlp_fused_batch || batch > 2 || H % 8 || I % 8) return std::nullopt;
  const MlpChoice& m = cfg.mlp;
  if (m.bps < 1 || m.bps > 8) throw_input("mlp.fused", "blocks per SM must be 1..8");
  try {  // make_variant checks the domains and the constraint; a configured point is input
    return make_variant(find_family("mlp", "fused"),
                        {{"BLOCK", m.block}, {"KC", m.kc}, {"ROWS", m.rows}, {"UNROLL", m.unroll}, {"BATCH", batch}}, {wt}, arch);
  } catch (const Error& e) {
    throw_input("mlp.fused", e.reason());
  }
}

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

std::vector<uint16_t> tile_mlp_down(const void* w, long long H, long long I, int kc) {
  const long long units = (I + kc - 1) / kc;
  const auto* bytes = static_cast<const uint8_t*>(w);  // may be unaligned (a mapped safetensors file)
  std::vector<uint16_t> t(size_t(units * H * kc), 0);
  for (long long r = 0; r < H; ++r)
    for (long long i = 0; i < I; ++i) std::memcpy(&t[size_t(((i / kc) * H + r) * kc + i % kc)], bytes + 2 * (r * I + i), 2);
  return t;
}

LaunchShape mlp_launch_shape(const LoadedKernel& k, const Variant& v, long long H, long long I, int bps) {
  const size_t smem = size_t(2 * v.param("BATCH") * H) * 4;
  int per_sm = 0;
  CU_CHECK(drv().cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k.fn, v.threads(), smem));
  if (per_sm < 1) throw_internal("mlp.fused", k.name + " cannot be resident on an SM");
  const long long units = (I + v.param("KC") - 1) / v.param("KC");
  const long long grid = std::min<long long>(units, (long long)Device::get().info().sm_count * std::min(per_sm, bps));
  return LaunchShape{unsigned(grid), 1, unsigned(v.threads()), smem};
}

std::vector<Variant> fast_path_variants(const ModelConfig& c, DType wt, const FastConfig& cfg, const std::string& arch) {
  std::vector<Variant> v;
  for (int batch : {1, 2, 4, 8}) {
    v.push_back(fast_decode_gemv(cfg, cfg.qkv, cfg.qkv_mma, kEpiStore, batch, c.hidden_size, wt, arch));
    v.push_back(fast_decode_gemv(cfg, cfg.o, cfg.o_mma, kEpiResidual, batch, c.q_dim(), wt, arch));
    v.push_back(fast_decode_gemv(cfg, cfg.gate_up, cfg.gate_up_mma, kEpiSwiglu, batch, c.hidden_size, wt, arch));
    v.push_back(fast_decode_gemv(cfg, cfg.down, cfg.down_mma, kEpiResidual, batch, c.intermediate_size, wt, arch));
    v.push_back(fast_decode_gemv(cfg, cfg.lm_head, cfg.lm_head_mma, kEpiArgmax, batch, c.hidden_size, wt, arch));
    if (auto m = fast_mlp_variant(cfg, batch, c.hidden_size, c.intermediate_size, wt, arch)) v.push_back(*m);
  }
  v.push_back(qkv_post_variant(cfg, wt, arch));
  if (cfg.gpu_top_k) v.push_back(topk_variant(cfg, arch));
  v.push_back(fused_attn_variant(c, cfg, wt, arch));
  if (cfg.attn_long_from > 0) v.push_back(fused_attn_variant(c, cfg, wt, arch, true));
  if (auto cv = cluster_attn_variant(c, cfg, wt, arch)) v.push_back(*cv);
  for (Variant& cv : cluster_long_attn_variants(c, cfg, wt, arch)) v.push_back(std::move(cv));
  // Biases are a property of the weights, not the config: listed as if none (the executor asks again).
  if (auto ao = attn_o_plan(c, cfg, wt, arch, 1, 0, false)) v.push_back(ao->v);
  v.push_back(attn_variant(c, cfg, arch));
  v.push_back(combine_variant(c, cfg, arch));
  if (auto pl = persistent_plan(c, cfg, wt, arch, false)) v.push_back(pl->v);
  if (auto mo = merge_o_plan(c, cfg, wt, arch, 1, 0, false)) {
    v.push_back(mo->attn);
    v.push_back(mo->o);
  }
  return v;
}

namespace {

// A graph's weights on the device as the fast path reads them: every tensor in its stored dtype
// but q, k and v, which each layer holds as one [q_dim + 2 kv_dim, hidden] matrix (and bias);
// W_down also tiled by mlp.fused's unit where that may run. Immutable once uploaded, so the
// executors of one graph may share it (ExecutorShare).
struct FastWeights {
  std::map<const TensorInfo*, DeviceBuffer> w;
  std::vector<DeviceBuffer> wqkv, bqkv;  // per layer
  std::vector<DeviceBuffer> wdown_tiled;  // per layer, when cfg.mlp_fused_batch > 0
};

std::shared_ptr<FastWeights> upload_fast_weights(const Graph& g, const DecoderOps& ops, const FastConfig& cfg, DType wt,
                                                 CUstream s) {
  auto fw = std::make_shared<FastWeights>();
  const ModelConfig& c = g.config;
  for (const Op& op : g.ops)
    for (const TensorInfo* w : op.weights)
      if (!fw->w.count(w)) {
        DeviceBuffer buf(w->nbytes());
        buf.upload(w->data, w->nbytes(), s);
        fw->w.emplace(w, std::move(buf));
      }
  // q, k and v of a layer as one matrix: one GEMV (or GEMM) instead of three.
  const size_t es = dtype_size(wt);
  for (const LayerOps& L : ops.layers) {
    const size_t rows_q = size_t(c.q_dim()), rows_kv = size_t(c.kv_dim()), h = size_t(c.hidden_size);
    DeviceBuffer w((rows_q + 2 * rows_kv) * h * es);
    CU_CHECK(drv().cuMemcpyDtoDAsync(w.ptr(), fw->w.at(L.q->weights[0]).ptr(), rows_q * h * es, s));
    CU_CHECK(drv().cuMemcpyDtoDAsync(w.ptr() + rows_q * h * es, fw->w.at(L.k->weights[0]).ptr(), rows_kv * h * es, s));
    CU_CHECK(drv().cuMemcpyDtoDAsync(w.ptr() + (rows_q + rows_kv) * h * es, fw->w.at(L.v->weights[0]).ptr(),
                                     rows_kv * h * es, s));
    fw->wqkv.push_back(std::move(w));
    if (L.q->weights.size() > 1) {
      DeviceBuffer b((rows_q + 2 * rows_kv) * es);
      CU_CHECK(drv().cuMemcpyDtoDAsync(b.ptr(), fw->w.at(L.q->weights[1]).ptr(), rows_q * es, s));
      CU_CHECK(drv().cuMemcpyDtoDAsync(b.ptr() + rows_q * es, fw->w.at(L.k->weights[1]).ptr(), rows_kv * es, s));
      CU_CHECK(drv().cuMemcpyDtoDAsync(b.ptr() + (rows_q + rows_kv) * es, fw->w.at(L.v->weights[1]).ptr(), rows_kv * es, s));
      fw->bqkv.push_back(std::move(b));
    } else {
      fw->bqkv.emplace_back();
    }
  }
  // mlp.fused reads W_down tiled by its unit (kc columns); built only where it may run.
  if (cfg.mlp_fused_batch > 0)
    for (const LayerOps& L : ops.layers) {
      const TensorInfo* d = L.down->weights[0];
      std::vector<uint16_t> t = tile_mlp_down(d->data, c.hidden_size, c.intermediate_size, cfg.mlp.kc);
      DeviceBuffer b(t.size() * 2);
      b.upload(t.data(), t.size() * 2, s);
      CU_CHECK(drv().cuStreamSynchronize(s));  // t goes out of scope
      fw->wdown_tiled.push_back(std::move(b));
    }
  // The separate q/k/v copies are no longer needed: the fused matrix replaces them.
  for (const LayerOps& L : ops.layers)
    for (const Op* op : {L.q, L.k, L.v})
      for (const TensorInfo* w : op->weights) fw->w.erase(w);
  return fw;
}

// This executor's weights: the share's when it holds this graph's in cfg's layout, else uploaded
// (and left in the share, replacing what it held: one graph's weights in one layout at a time).
std::shared_ptr<const FastWeights> fast_weights(const Graph& g, const DecoderOps& ops, const FastConfig& cfg, DType wt,
                                                CUstream s, ExecutorShare* share) {
  const std::string key = fast_weights_key(cfg);
  if (share && share->graph == &g && share->key == key && share->state)
    return std::static_pointer_cast<const FastWeights>(share->state);
  if (share) share->state.reset();  // freed before the next upload (unless an executor still holds it)
  std::shared_ptr<FastWeights> fw = upload_fast_weights(g, ops, cfg, wt, s);
  if (share) {
    share->graph = &g;
    share->key = key;
    share->state = fw;
  }
  return fw;
}

class FastExecutor final : public Executor {
 public:
  FastExecutor(const Graph& g, const ExecutorLimits& lim, const FastConfig& cfg, ExecutorShare* share)
      : g_(g), ops_(match_decoder_ops(g)), lim_(lim), cfg_(cfg), dev_(Device::get()), s_(dev_.stream()),
        arch_(dev_.info().arch()), cublas_(s_) {
    if (std::string why = fast_path_unsupported(g); !why.empty()) throw_input("cuda fast path", why);
    const ModelConfig& c = g.config;
    wt_ = g.ops.front().weights.at(0)->dtype;
    cluster_reach_ = cluster_long_reaches(c, cfg_, wt_, arch_);
    fw_ = fast_weights(g, ops_, cfg_, wt_, s_, share);
    std::vector<float> inv = rope_inv_freq(c.rope, c.head_dim);
    inv_freq_ = DeviceBuffer(inv.size() * 4);
    inv_freq_.upload(inv.data(), inv.size() * 4, s_);
    // cos/sin of every position the cache can hold, computed as the reference does: the decode
    // attention kernel reads its row instead of evaluating trigonometry per block.
    {
      const size_t half = size_t(c.head_dim / 2), npos = size_t(lim_.max_seq);
      std::vector<float> cs(npos * half), sn(npos * half);
      for (size_t p = 0; p < npos; ++p) rope_cos_sin(inv, int64_t(p), cs.data() + p * half, sn.data() + p * half);
      rope_cos_ = DeviceBuffer(cs.size() * 4);
      rope_sin_ = DeviceBuffer(sn.size() * 4);
      rope_cos_.upload(cs.data(), cs.size() * 4, s_);
      rope_sin_.upload(sn.data(), sn.size() * 4, s_);
      dev_.synchronize();  // the host vectors go out of scope
    }
    const size_t kv = size_t(lim_.max_slots) * size_t(c.num_kv_heads) * size_t(lim_.max_seq) * size_t(c.head_dim) * 2;
    for (int64_t l = 0; l < c.num_layers; ++l) {
      kcache_.emplace_back(kv);
      vcache_.emplace_back(kv);
    }
    const long long nt = std::max<long long>(lim_.step_tokens(), kMaxBatch), nr = std::max<long long>(lim_.logit_rows(), kMaxBatch);
    const long long qkvd = c.q_dim() + 2 * c.kv_dim();
    max_splits_ = std::max(splits_of(attn_split(c, cfg_, arch_)), splits_of(attn_split(c, cfg_, arch_, true)));
    auto f32 = [](long long n) { return DeviceBuffer(size_t(std::max<long long>(n, 1)) * 4); };
    resid_ = f32(nt * c.hidden_size);
    h_ = f32(nt * c.hidden_size);
    qkv_ = f32(nt * qkvd);
    q_ = f32(nt * c.q_dim());
    attn_ = f32(nt * c.q_dim());
    gate_ = f32(nt * c.intermediate_size);
    up_ = f32(nt * c.intermediate_size);
    tmp_ = f32(nt * std::max(c.hidden_size, c.intermediate_size));
    cast_ = DeviceBuffer(size_t(nt) * size_t(std::max({c.hidden_size, c.q_dim(), c.intermediate_size})) * 2);
    // Also attn_decode.parts's partials (attn_merge_o): attn_cluster per (KV head, token).
    const long long parts = std::max<long long>(max_splits_, cfg_.attn_cluster);
    part_o_ = f32(nt * c.num_heads * parts * c.head_dim);
    part_ml_ = f32(nt * c.num_heads * parts * 2);
    gathered_ = f32(nr * c.hidden_size);
    logits_ = f32(nr * c.vocab_size);
    // The argmax GEMV's (logit, row) key per batch row: zero before it, zeroed again by argmax_finish.
    best_ = DeviceBuffer(size_t(kMaxBatch) * 8);
    CU_CHECK(drv().cuMemsetD32Async(best_.ptr(), 0, size_t(kMaxBatch) * 2, s_));
    mlp_counters_ = DeviceBuffer(8);
    CU_CHECK(drv().cuMemsetD32Async(mlp_counters_.ptr(), 0, 2, s_));
    attn_counters_ = DeviceBuffer(size_t(kMaxBatch * c.num_kv_heads) * 4);
    CU_CHECK(drv().cuMemsetD32Async(attn_counters_.ptr(), 0, size_t(kMaxBatch * c.num_kv_heads), s_));
    token_out_ = DeviceBuffer(size_t(nr) * 4);
    if (cfg_.gpu_top_k) {
      const size_t slots = size_t(kGpuTopKRows) * size_t(kGpuTopKMax);
      topk_ = DeviceBuffer(2 * slots * 4);
      host_topk_ = PinnedBuffer(2 * slots * 4);
      topk_parts_ = DeviceBuffer(2 * slots * size_t(topk_shape(c.vocab_size, 1).chunks) * 4);  // the most chunks: k <= 4096
      topk_counters_ = DeviceBuffer(2 * kGpuTopKRows * 4);
      CU_CHECK(drv().cuMemsetD32Async(topk_counters_.ptr(), 0, 2 * kGpuTopKRows, s_));
    }
    in_ = StepInputs(nt, nr);
    host_logits_ = PinnedBuffer(size_t(nr) * size_t(c.vocab_size) * 4);
    host_tokens_ = PinnedBuffer(size_t(nr) * 4);
    host_ahead_ = PinnedBuffer(2 * kMaxBatch * 4);
    for (CUevent& e : ahead_done_) CU_CHECK(drv().cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    // Compile (or load from the cache) every kernel now, so no step pays for it.
    for (const Variant& v : fast_path_variants(c, wt_, cfg_, arch_)) load_kernel(v);
    setup_persistent();
    for (const char* op : {"embed", "rms_norm", "cast", "bias"}) ref(op, {}, {wt_});
    for (const char* op : {"add", "swiglu", "gather_rows", "argmax", "argmax_finish"}) ref(op, {});
    profile_ = std::getenv("AGENTCOMPILE_PROFILE") != nullptr;
    dev_.synchronize();
  }

  ~FastExecutor() override {
    print_profile();
    if (const DriverApi* d = driver_api()) {
      d->cuStreamSynchronize(s_);  // steps in flight copy into host_ahead_
      for (auto& [b, exec] : graphs_) d->cuGraphExecDestroy(exec);
      for (CUevent e : ahead_done_)
        if (e) d->cuEventDestroy(e);
    }
  }

  std::string name() const override { return "cuda"; }
  int64_t vocab_size() const override { return g_.config.vocab_size; }
  const ExecutorLimits& limits() const override { return lim_; }

  void forward(const StepBatch& b) override {
    validate_step(b, lim_, g_.config.vocab_size);
    drop_ahead();
    const long long n = (long long)b.tokens.size(), r = (long long)b.logit_rows.size();
    in_.upload(b, s_);
    rows_in_step_ = r;
    last_positions_ = b.positions;
    logits_on_host_ = false;
    tokens_ready_ = false;
    host_tokens_valid_ = false;
    decode_step_ = is_decode_step(b);
    if (decode_step_) {
      run_decode(n);
      // The greedy tokens come back with the step's one synchronisation (argmax_rows reads them).
      CU_CHECK(drv().cuMemcpyDtoHAsync(host_tokens_.data(), CUdeviceptr(in_.tokens()), size_t(n) * 4, s_));
      host_tokens_valid_ = true;
    } else {
      run_prefill(n, r);
    }
    CU_CHECK(drv().cuStreamSynchronize(s_));  // staging is reused by the next step
  }

  const float* logits() const override {
    if (!logits_on_host_) {
      logits_.download(host_logits_.data(), size_t(rows_in_step_) * size_t(g_.config.vocab_size) * 4, s_);
      CU_CHECK(drv().cuStreamSynchronize(s_));
      logits_on_host_ = true;
    }
    return host_logits_.as<float>();
  }

  bool argmax_rows(std::vector<int32_t>& out) override {
    if (!decode_step_ && !tokens_ready_) {  // prefill: the reference argmax over the logit rows
      ArgmaxParams p{logits_.as<float>(), token_out_.as<int>(), rows_in_step_, g_.config.vocab_size};
      launch(ref("argmax", {}), Dim3{unsigned(rows_in_step_)}, kRefBlock, 0, &p);
    }
    if (!host_tokens_valid_) {
      // A decode step's lm_head wrote them over its token ids (the next chained step's input).
      const CUdeviceptr src = decode_step_ ? CUdeviceptr(in_.tokens()) : token_out_.ptr();
      CU_CHECK(drv().cuMemcpyDtoHAsync(host_tokens_.data(), src, size_t(rows_in_step_) * 4, s_));
      CU_CHECK(drv().cuStreamSynchronize(s_));
      host_tokens_valid_ = true;
    }
    tokens_ready_ = true;
    out.assign(host_tokens_.as<int32_t>(), host_tokens_.as<int32_t>() + rows_in_step_);
    return true;
  }

  bool top_k_rows(int k, std::vector<std::pair<float, int32_t>>& out) override {
    const int64_t vocab = g_.config.vocab_size;
    if (!cfg_.gpu_top_k || k < 1 || k > kGpuTopKMax || k >= vocab || rows_in_step_ > kGpuTopKRows) return false;
    // Values then ids, back to back in one buffer: one copy to the host.
    const size_t n = size_t(rows_in_step_) * size_t(k);
    const TopKShape sh = topk_shape(vocab, k);
    const size_t parts = size_t(rows_in_step_) * size_t(sh.chunks) * size_t(k);
    TopKParams p{logits_.as<float>(), topk_.as<float>(), reinterpret_cast<int*>(topk_.as<float>() + n),
                 topk_parts_.as<float>(), reinterpret_cast<int*>(topk_parts_.as<float>() + parts), topk_counters_.as<unsigned>(),
                 rows_in_step_, vocab, sh.chunk, k};
    launch(load_kernel(topk_variant(cfg_, arch_)), Dim3{unsigned(sh.chunks), unsigned(rows_in_step_)},
           unsigned(cfg_.top_k_block), 0, &p);
    topk_.download(host_topk_.data(), 2 * n * 4, s_);
    CU_CHECK(drv().cuStreamSynchronize(s_));
    out.resize(n);
    const float* hv = host_topk_.as<float>();
    const int32_t* hi = reinterpret_cast<const int32_t*>(hv + n);
    for (size_t i = 0; i < n; ++i) out[i] = {hv[i], hi[i]};
    return true;
  }

  // Decode ahead (Executor::decode_ahead): the step is enqueued with its greedy tokens (written
  // over the step's token ids by the lm_head's argmax, so a chained step's embedding reads them
  // there) going into one of two pinned slots, and an event; nothing waits here. With
  // device_chain the argmax writes the slot itself (slot: the step's first position % 2) and a
  // chained step whose inputs the device already advanced uploads nothing, so two steps' graphs
  // follow each other with no copy between them; otherwise one upload before and one copy after.
  void decode_ahead(const StepBatch& b, bool chained) override {
    if (!cfg_.decode_ahead) return Executor::decode_ahead(b, chained);
    validate_step(b, lim_, g_.config.vocab_size);
    const long long n = (long long)b.tokens.size();
    if (!is_decode_step(b)) throw_internal("decode ahead", "not a decode step");
    if (ahead_.size() >= 2) throw_internal("decode ahead", "more than two steps in flight");
    if (chained && ahead_n_ != n) throw_internal("decode ahead", "a chained step differs from the step before it");
    const int slot = cfg_.device_chain ? int(b.positions[0] & 1) : int(ahead_count_ % 2);
    ++ahead_count_;
    // A step in flight on the same slot (not the step before this one: a new sequence of the
    // same parity): its tokens are taken off the slot first.
    for (Ahead& a : ahead_)
      if (a.slot == slot && !a.stashed) {
        CU_CHECK(drv().cuEventSynchronize(ahead_done_[slot]));
        std::copy_n(host_ahead_.as<int32_t>() + slot * kMaxBatch, a.n, a.stash.begin());
        a.stashed = true;
      }
    if (!(cfg_.device_chain && chained && in_.on_device(b))) in_.upload(b, s_, chained);
    rows_in_step_ = n;
    last_positions_ = b.positions;
    logits_on_host_ = false;
    host_tokens_valid_ = false;
    decode_step_ = true;
    run_decode(n);
    if (!cfg_.device_chain)
      CU_CHECK(drv().cuMemcpyDtoHAsync(host_ahead_.as<int32_t>() + slot * kMaxBatch, CUdeviceptr(in_.tokens()), size_t(n) * 4, s_));
    CU_CHECK(drv().cuEventRecord(ahead_done_[slot], s_));
    ahead_.push_back({slot, n});
    ahead_n_ = n;
  }

  void next_greedy(std::vector<int32_t>& out) override {
    if (!cfg_.decode_ahead) return Executor::next_greedy(out);
    if (ahead_.empty()) throw_internal("decode ahead", "no step in flight");
    const Ahead a = ahead_.front();
    ahead_.pop_front();
    if (a.stashed) {
      out.assign(a.stash.begin(), a.stash.begin() + a.n);
      return;
    }
    CU_CHECK(drv().cuEventSynchronize(ahead_done_[a.slot]));
    const int32_t* t = host_ahead_.as<int32_t>() + a.slot * kMaxBatch;
    out.assign(t, t + a.n);
  }

  void end_ahead() override {
    if (!cfg_.decode_ahead) return Executor::end_ahead();
    drop_ahead();
  }

 private:
  // Waits for the decode-ahead steps in flight and forgets them; a later step cannot chain.
  void drop_ahead() {
    if (!ahead_.empty()) CU_CHECK(drv().cuStreamSynchronize(s_));
    ahead_.clear();
    ahead_n_ = 0;
  }

  // A decode step: at most 8 tokens, each of a different sequence, every row's logits wanted.
  static bool is_decode_step(const StepBatch& b) {
    const size_t n = b.tokens.size();
    if (n > size_t(kMaxBatch) || b.logit_rows.size() != n) return false;
    for (size_t i = 0; i < n; ++i) {
      if (b.logit_rows[i] != int32_t(i)) return false;
      for (size_t j = 0; j < i; ++j)
        if (b.slots[j] == b.slots[i]) return false;
    }
    return true;
  }

  // decode_layers.persistent (FastConfig::persistent): the layer table, its counters and partials.
  void setup_persistent() {
    const ModelConfig& c = g_.config;
    bool biased = false;
    for (const LayerOps& L : ops_.layers)
      for (const Op* op : {L.q, L.k, L.v, L.o, L.gate, L.up, L.down}) biased = biased || op->weights.size() > 1;
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

  void persistent_layers() {
    const ModelConfig& c = g_.config;
    PersistentParams p{pl_layers_.as<PersistentLayer>(), resid_.as<float>(), qkv_.as<float>(), attn_.as<float>(),
                       gate_.as<float>(), pl_part_o_.as<float>(), pl_part_ml_.as<float>(), pl_counters_.as<unsigned>(),
                       rope_cos_.as<float>(), rope_sin_.as<float>(), in_.positions(), in_.slots(), c.num_layers,
                       c.hidden_size, c.intermediate_size, c.num_heads, c.num_kv_heads, lim_.max_seq, pl_->stage_bytes,
                       float(c.rms_norm_eps), 1.0f / std::sqrt(float(c.head_dim))};
    launch(load_kernel(pl_->v), Dim3{unsigned(dev_.info().sm_count)}, unsigned(pl_->v.threads()), pl_->smem, &p, cfg_.pdl);
  }

  // Every launch of this executor on its stream, with its shared-memory carveout: the step's
  // (FastConfig::smem_carveout), or the region's where it has one (FastConfig::region_carveout,
  // both as the function's and as the launch's preference).
  void launch(const LoadedKernel& k, Dim3 grid, unsigned threads, size_t smem, const void* params, bool pdl = false,
              const char* region = nullptr) {
    const auto it = region ? cfg_.region_carveout.find(region) : cfg_.region_carveout.end();
    const int own = it != cfg_.region_carveout.end() ? it->second : -1;
    launch_kernel(k, grid, threads, smem, s_, params, pdl, own >= 0 ? own : cfg_.smem_carveout, own);
  }

  const void* wptr(const TensorInfo* t) const { return t ? reinterpret_cast<const void*>(fw_->w.at(t).ptr()) : nullptr; }
  const void* wptr(const Op* op, size_t k) const { return k < op->weights.size() ? wptr(op->weights[k]) : nullptr; }

  const LoadedKernel& ref(const std::string& op, std::map<std::string, int> params, std::vector<DType> types = {}) {
    params.emplace("BLOCK", int(kRefBlock));
    return load_kernel(make_variant(find_family(op, "ref"), std::move(params), std::move(types), arch_));
  }

  // ---- decode ----
  // `region`: the slot's name (qkv, o, ...), for its carveout.
  void gemv(const char* region, const GemvChoice& ch, const MmaChoice& mma, int epi, long long n, const float* x,
            const void* gamma, const void* w, const void* w2, const void* bias, float* out, long long N, long long K) {
    const int batch = batch_template(n);
    const Variant v = fast_decode_gemv(cfg_, ch, mma, epi, batch, K, wt_, arch_);
    GemvParams p{x, gamma, float(g_.config.rms_norm_eps), w, w2, bias, out, best_.as<unsigned long long>(), n, N, K};
    const LaunchShape ls = gemv_launch_shape(v, N, K);
    launch(load_kernel(v), Dim3{ls.grid_x, ls.grid_y}, ls.threads, ls.smem, &p, cfg_.pdl, region);
    // The tokens, over the next step's input ids, from the blocks' keys.
    if (epi == kEpiArgmax) {
      int* positions = cfg_.device_chain ? in_.positions() : nullptr;  // every decode step's lm_head is ARGMAX
      launch_argmax_finish(best_.as<unsigned long long>(), in_.tokens(), n, s_, cfg_.pdl, arch_, cfg_.smem_carveout, positions,
                           host_ahead_.as<int32_t>(), kMaxBatch);
    }
  }

  void mlp(const Variant& v, const LayerOps& L, size_t layer, long long n) {
    const ModelConfig& c = g_.config;
    const LoadedKernel& k = load_kernel(v);
    const LaunchShape ls = mlp_launch_shape(k, v, c.hidden_size, c.intermediate_size, cfg_.mlp.bps);
    MlpParams p{resid_.as<float>(), wptr(L.post_norm, 0), float(c.rms_norm_eps), wptr(L.gate, 0), wptr(L.up, 0),
                reinterpret_cast<const void*>(fw_->wdown_tiled.at(layer).ptr()), mlp_counters_.as<unsigned>(), n, c.hidden_size,
                c.intermediate_size};
    launch(k, Dim3{ls.grid_x}, ls.threads, ls.smem, &p, cfg_.pdl);
  }

  void attention(const LayerOps& L, size_t layer, long long n, bool pdl) {
    const ModelConfig& c = g_.config;
    const int hd = int(c.head_dim);
    QkvPostParams qp{qkv_.as<float>(), q_.as<float>(), L.q_norm ? wptr(L.q_norm, 0) : nullptr,
                     L.k_norm ? wptr(L.k_norm, 0) : nullptr, float(c.rms_norm_eps), in_.positions(),
                     in_.slots(), inv_freq_.as<float>(), kcache_[layer].as<unsigned short>(),
                     vcache_[layer].as<unsigned short>(), n, c.num_heads, c.num_kv_heads, c.head_dim, lim_.max_seq};
    const LoadedKernel& kp = load_kernel(qkv_post_variant(cfg_, wt_, arch_));
    launch(kp, Dim3{unsigned(c.num_heads + 2 * c.num_kv_heads), unsigned(n)}, unsigned(cfg_.qkv_post_block), 0, &qp, pdl);
    if (pdl) mark("qkv_post", 0);
    DecodeAttnParams ap{q_.as<float>(), kcache_[layer].as<unsigned short>(), vcache_[layer].as<unsigned short>(),
                        part_o_.as<float>(), part_ml_.as<float>(), attn_.as<float>(), in_.positions(),
                        in_.slots(), n, c.num_heads, c.num_kv_heads, lim_.max_seq, max_splits_,
                        1.0f / std::sqrt(float(hd))};
    const Variant va = attn_variant(c, cfg_, arch_);
    launch(load_kernel(va), Dim3{unsigned(c.num_kv_heads), unsigned(max_splits_), unsigned(n)},
           unsigned(va.threads()), 0, &ap, pdl, "attention");
    if (pdl && profile_) {  // bytes: the K and V rows every token reads (positions come from the host copy)
      double kv = 0;
      for (long long t = 0; t < n; ++t) kv += double(last_positions_[size_t(t)] + 1) * double(c.kv_dim()) * 2 * 2;
      mark("attn_decode", kv);
    }
    const LoadedKernel& kc = load_kernel(combine_variant(c, cfg_, arch_));
    launch(kc, Dim3{unsigned(c.num_heads), unsigned(n)}, unsigned(hd), 0, &ap, pdl);
    if (pdl) mark("attn_combine", 0);
  }

  // AGENTCOMPILE_PROFILE=1: decode steps run launch by launch with events in between; each
  // kernel's time and the bytes it must move are summed per kind and printed at exit.
  struct ProfileEntry {
    double ms = 0.0, bytes = 0.0;
    long long calls = 0;
  };
  void mark(const std::string& kind, double bytes) {
    if (!profile_) return;
    CUevent e;
    CU_CHECK(drv().cuEventCreate(&e, CU_EVENT_DEFAULT));
    CU_CHECK(drv().cuEventRecord(e, s_));
    marks_.push_back({e, kind, bytes});
  }
  void flush_profile() {
    if (marks_.empty()) return;
    CU_CHECK(drv().cuStreamSynchronize(s_));
    for (size_t i = 1; i < marks_.size(); ++i) {
      float ms = 0;
      CU_CHECK(drv().cuEventElapsedTime(&ms, marks_[i - 1].e, marks_[i].e));
      ProfileEntry& p = profile_sum_[marks_[i].kind];
      p.ms += ms;
      p.bytes += marks_[i].bytes;
      p.calls += 1;
    }
    for (auto& m : marks_) drv().cuEventDestroy(m.e);
    marks_.clear();
    ++profiled_steps_;
  }
  void print_profile() const {
    if (profile_sum_.empty()) return;
    double total = 0;
    for (const auto& [k, p] : profile_sum_) total += p.ms;
    std::fprintf(stderr, "profile: %lld decode steps, %.3f ms/step in kernels\n", profiled_steps_, total / double(profiled_steps_));
    for (const auto& [k, p] : profile_sum_)
      std::fprintf(stderr, "  %-16s %8.4f ms/step  %5.1f%%  %7.1f GB/s  (%lld launches/step)\n", k.c_str(),
                   p.ms / double(profiled_steps_), 100 * p.ms / total, p.bytes / (p.ms * 1e6),
                   p.calls / profiled_steps_);
  }
  struct Mark {
    CUevent e;
    std::string kind;
    double bytes;
  };

  // The decode attention of the step's range (`parts`: attn_decode.parts instead, attn_merge_o).
  void fused_attention(const LayerOps& L, size_t layer, long long n, const Variant* parts = nullptr) {
    const ModelConfig& c = g_.config;
    FusedAttnParams ap = attn_params(layer, L, n);
    const Variant va = parts ? *parts : decode_attention_variant(c, cfg_, wt_, arch_, batch_template(n), longest_);
    const size_t smem = size_t(attn_fused_smem_bytes(va.param("SPLIT"), va.param("HD"), va.param("GROUP")));
    launch(load_kernel(va), Dim3{unsigned(c.num_kv_heads), unsigned(decode_attention_blocks(va, lim_.max_seq)), unsigned(n)},
           unsigned(va.threads()), smem, &ap, cfg_.pdl, "attention");
    if (profile_) {
      double kv = 0;
      for (long long t = 0; t < n; ++t) kv += double(last_positions_[size_t(t)] + 1) * double(c.kv_dim()) * 2 * 2;
      mark("attention", kv);
    }
  }

  FusedAttnParams attn_params(size_t layer, const LayerOps& L, long long n) const {
    const ModelConfig& c = g_.config;
    return FusedAttnParams{qkv_.as<float>(), L.q_norm ? wptr(L.q_norm, 0) : nullptr, L.k_norm ? wptr(L.k_norm, 0) : nullptr,
                           float(c.rms_norm_eps), rope_cos_.as<float>(), rope_sin_.as<float>(),
                           kcache_[layer].as<unsigned short>(), vcache_[layer].as<unsigned short>(), part_o_.as<float>(),
                           part_ml_.as<float>(), attn_counters_.as<unsigned>(), attn_.as<float>(), in_.positions(),
                           in_.slots(), n, c.num_heads, c.num_kv_heads, lim_.max_seq, max_splits_,
                           1.0f / std::sqrt(float(c.head_dim))};
  }

  // attn_o.cluster: the attention and the output projection with its residual add, one kernel.
  void attention_and_output(const AttnOPlan& ao, const LayerOps& L, size_t layer, long long n) {
    const ModelConfig& c = g_.config;
    AttnOParams p{attn_params(layer, L, n), wptr(L.o, 0), resid_.as<float>(), c.hidden_size};
    launch(load_kernel(ao.v),
           Dim3{unsigned(c.num_kv_heads), unsigned(ao.v.param("CLUSTER")), unsigned(n * ao.v.param("COPIES"))},
           unsigned(ao.v.threads()), ao.smem, &p, cfg_.pdl, "attention");
    mark("attention_o", double(c.hidden_size * c.q_dim() * dtype_size(wt_)));
  }

  void record_decode(long long n) {
    const ModelConfig& c = g_.config;
    const double es = double(dtype_size(wt_));
    mark("start", 0);
    EmbedParams ep{wptr(ops_.embed, 0), in_.tokens(), resid_.as<float>(), n, c.hidden_size, c.vocab_size};
    launch(ref("embed", {}, {wt_}), Dim3{unsigned(n)}, kRefBlock, 0, &ep, cfg_.pdl);
    mark("embed", double(n * c.hidden_size) * es);
    const long long qkvd = c.q_dim() + 2 * c.kv_dim();
    const bool persistent = pl_ && n == 1;  // decode_layers.persistent runs every layer
    if (persistent) {
      persistent_layers();
      mark("decode_layers", double(ops_.layers.size()) *
                                double(qkvd * c.hidden_size + c.hidden_size * c.q_dim() + 3 * c.intermediate_size * c.hidden_size) * es);
    }
    // The same for every layer but one with an o_proj bias (attn_o_plan: then the two kernels).
    std::optional<AttnOPlan> ao;
    if (!persistent) ao = attn_o_plan(c, cfg_, wt_, arch_, batch_template(n), longest_, false);
    std::optional<MergeOPlan> mo;  // attn_merge_o (never beside attn_o): partials merged by the output GEMV
    if (!persistent) mo = merge_o_plan(c, cfg_, wt_, arch_, batch_template(n), longest_, false);
    for (size_t l = 0; !persistent && l < ops_.layers.size(); ++l) {
      const LayerOps& L = ops_.layers[l];
      gemv("qkv", cfg_.qkv, cfg_.qkv_mma, kEpiStore, n, resid_.as<float>(), wptr(L.input_norm, 0), reinterpret_cast<const void*>(fw_->wqkv[l].ptr()),
           nullptr, fw_->bqkv[l].ptr() ? reinterpret_cast<const void*>(fw_->bqkv[l].ptr()) : nullptr, qkv_.as<float>(), qkvd,
           c.hidden_size);
      mark("qkv_gemv", double(qkvd * c.hidden_size) * es);
      if (ao && L.o->weights.size() == 1) {
        attention_and_output(*ao, L, l, n);
      } else if (mo) {
        fused_attention(L, l, n, &mo->attn);
        GemvParams p{part_o_.as<float>(), nullptr, float(c.rms_norm_eps), wptr(L.o, 0), nullptr, wptr(L.o, 1),
                     resid_.as<float>(), best_.as<unsigned long long>(), n, c.hidden_size, c.q_dim(),
                     part_ml_.as<float>(), c.num_heads / c.num_kv_heads, c.head_dim};
        const LaunchShape ls = gemv_launch_shape(mo->o, c.hidden_size, c.q_dim());
        launch(load_kernel(mo->o), Dim3{ls.grid_x, ls.grid_y}, ls.threads, ls.smem, &p, cfg_.pdl, "o");
        mark("o_gemv", double(c.hidden_size * c.q_dim()) * es);
      } else {
        fused_attention(L, l, n);
        gemv("o", cfg_.o, cfg_.o_mma, kEpiResidual, n, attn_.as<float>(), nullptr, wptr(L.o, 0), nullptr, wptr(L.o, 1), resid_.as<float>(),
             c.hidden_size, c.q_dim());
        mark("o_gemv", double(c.hidden_size * c.q_dim()) * es);
      }
      if (auto mv = fast_mlp_variant(cfg_, batch_template(n), c.hidden_size, c.intermediate_size, wt_, arch_)) {
        mlp(*mv, L, l, n);
        mark("mlp_fused", double(3 * c.intermediate_size * c.hidden_size) * es);
        continue;
      }
      gemv("gate_up", cfg_.gate_up, cfg_.gate_up_mma, kEpiSwiglu, n, resid_.as<float>(), wptr(L.post_norm, 0), wptr(L.gate, 0), wptr(L.up, 0), nullptr,
           gate_.as<float>(), c.intermediate_size, c.hidden_size);
      mark("gate_up_gemv", double(2 * c.intermediate_size * c.hidden_size) * es);
      gemv("down", cfg_.down, cfg_.down_mma, kEpiResidual, n, gate_.as<float>(), nullptr, wptr(L.down, 0), nullptr, nullptr, resid_.as<float>(),
           c.hidden_size, c.intermediate_size);
      mark("down_gemv", double(c.hidden_size * c.intermediate_size) * es);
    }
    gemv("lm_head", cfg_.lm_head, cfg_.lm_head_mma, kEpiArgmax, n, resid_.as<float>(), wptr(ops_.final_norm, 0), wptr(ops_.logits, 0), nullptr,
         nullptr, logits_.as<float>(), c.vocab_size, c.hidden_size);
    mark("lm_head_gemv", double(c.vocab_size * c.hidden_size) * es);
  }

  // Blocks per (token, KV head) for splits of `split` positions over the whole cache.
  long long splits_of(int split) const { return (lim_.max_seq + split - 1) / split; }

  void run_decode(long long n) {
    long long longest = 0;
    for (int32_t p : last_positions_) longest = std::max<long long>(longest, p + 1);
    longest_ = longest;
    // The developer timeline records the kernels of one step or a few (backends/cuda/timeline.h).
    const long long step = ++decode_steps_;
    if (timeline_enabled() && step == timeline_step()) timeline_reset(s_);
    run_decode_step(n);
    if (cfg_.device_chain) in_.advanced_on_device();  // the step's argmax_finish adds one to every position
    if (timeline_enabled() && step == timeline_step() + timeline_steps() - 1) timeline_write(s_);
  }

  void run_decode_step(long long n) {
    if (profile_) {
      record_decode(n);
      flush_profile();
      tokens_ready_ = true;
      return;
    }
    if (!cfg_.cuda_graph) {
      record_decode(n);
      tokens_ready_ = true;
      return;
    }
    const int key = int(n) * 4 + int(attn_range_of(cfg_, batch_template(n), longest_, cluster_reach_));
    auto it = graphs_.find(key);
    if (it == graphs_.end()) {
      // First step of this batch size: run it directly (loads every kernel), then capture it.
      record_decode(n);
      CU_CHECK(drv().cuStreamSynchronize(s_));
      CUgraph graph;
      CU_CHECK(drv().cuStreamBeginCapture(s_, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
      try {
        record_decode(n);
      } catch (...) {
        CUgraph discard;
        drv().cuStreamEndCapture(s_, &discard);
        throw;
      }
      CU_CHECK(drv().cuStreamEndCapture(s_, &graph));
      CUgraphExec exec;
      CU_CHECK(drv().cuGraphInstantiateWithFlags(&exec, graph, 0));
      CU_CHECK(drv().cuGraphDestroy(graph));
      graphs_.emplace(key, exec);
      tokens_ready_ = true;
      return;
    }
    CU_CHECK(drv().cuGraphLaunch(it->second, s_));
    tokens_ready_ = true;
  }

  // ---- prefill: cuBLAS GEMMs over the step's tokens ----
  void linear(const void* w, const void* bias, const float* x, long long n, long long in, long long out_dim, float* out) {
    CastParams cp{x, cast_.as<void>(), n * in};
    launch(ref("cast", {}, {wt_}), Dim3{elementwise_blocks(n * in, kRefBlock)}, kRefBlock, 0, &cp);
    cublas_linear(cublas_, wt_, cast_.as<void>(), w, out, n, in, out_dim);
    if (bias) {
      BiasParams bp{out, bias, n, out_dim};
      launch(ref("bias", {}, {wt_}), Dim3{elementwise_blocks(n * out_dim, kRefBlock)}, kRefBlock, 0, &bp);
    }
  }
  void rms_norm(const Op* norm, const float* x, long long rows, long long dim, float* out) {
    RmsNormParams p{x, wptr(norm, 0), out, rows, dim, float(g_.config.rms_norm_eps)};
    launch(ref("rms_norm", {}, {wt_}), Dim3{unsigned(rows)}, kRefBlock, 0, &p);
  }
  void add(float* acc, const float* x, long long count) {
    ElementwiseParams p{acc, x, acc, count};
    launch(ref("add", {}), Dim3{elementwise_blocks(count, kRefBlock)}, kRefBlock, 0, &p);
  }

  void run_prefill(long long n, long long r) {
    const ModelConfig& c = g_.config;
    EmbedParams ep{wptr(ops_.embed, 0), in_.tokens(), resid_.as<float>(), n, c.hidden_size, c.vocab_size};
    launch(ref("embed", {}, {wt_}), Dim3{unsigned(n)}, kRefBlock, 0, &ep);
    const long long qkvd = c.q_dim() + 2 * c.kv_dim();
    for (size_t l = 0; l < ops_.layers.size(); ++l) {
      const LayerOps& L = ops_.layers[l];
      rms_norm(L.input_norm, resid_.as<float>(), n, c.hidden_size, h_.as<float>());
      linear(reinterpret_cast<const void*>(fw_->wqkv[l].ptr()),
             fw_->bqkv[l].ptr() ? reinterpret_cast<const void*>(fw_->bqkv[l].ptr()) : nullptr, h_.as<float>(), n, c.hidden_size,
             qkvd, qkv_.as<float>());
      attention(L, l, n, false);
      linear(wptr(L.o, 0), wptr(L.o, 1), attn_.as<float>(), n, c.q_dim(), c.hidden_size, tmp_.as<float>());
      add(resid_.as<float>(), tmp_.as<float>(), n * c.hidden_size);
      rms_norm(L.post_norm, resid_.as<float>(), n, c.hidden_size, h_.as<float>());
      linear(wptr(L.gate, 0), nullptr, h_.as<float>(), n, c.hidden_size, c.intermediate_size, gate_.as<float>());
      linear(wptr(L.up, 0), nullptr, h_.as<float>(), n, c.hidden_size, c.intermediate_size, up_.as<float>());
      ElementwiseParams sp{gate_.as<float>(), up_.as<float>(), gate_.as<float>(), n * c.intermediate_size};
      launch(ref("swiglu", {}), Dim3{elementwise_blocks(n * c.intermediate_size, kRefBlock)}, kRefBlock, 0, &sp);
      linear(wptr(L.down, 0), nullptr, gate_.as<float>(), n, c.intermediate_size, c.hidden_size, tmp_.as<float>());
      add(resid_.as<float>(), tmp_.as<float>(), n * c.hidden_size);
    }
    GatherRowsParams gp{resid_.as<float>(), in_.rows(), gathered_.as<float>(), r, c.hidden_size};
    launch(ref("gather_rows", {}), Dim3{unsigned(r)}, kRefBlock, 0, &gp);
    rms_norm(ops_.final_norm, gathered_.as<float>(), r, c.hidden_size, h_.as<float>());
    linear(wptr(ops_.logits, 0), nullptr, h_.as<float>(), r, c.hidden_size, c.vocab_size, logits_.as<float>());
  }

  const Graph& g_;
  DecoderOps ops_;
  ExecutorLimits lim_;
  FastConfig cfg_;
  Device& dev_;
  CUstream s_;
  std::string arch_;
  CublasHandle cublas_;
  DType wt_ = DType::BF16;
  std::shared_ptr<const FastWeights> fw_;  // the weights, perhaps shared (ExecutorShare)
  DeviceBuffer inv_freq_, rope_cos_, rope_sin_;  // rope_*: [max_seq, head_dim / 2]
  std::vector<DeviceBuffer> kcache_, vcache_;  // bf16 [slot][kv_head][position][head_dim]
  long long max_splits_ = 1;
  DeviceBuffer resid_, h_, qkv_, q_, attn_, gate_, up_, tmp_, cast_, part_o_, part_ml_, gathered_, logits_;
  DeviceBuffer best_, attn_counters_, token_out_;
  DeviceBuffer topk_;  // gpu_top_k: [rows * k] values, then [rows * k] ids (at most kGpuTopKMax per row)
  DeviceBuffer topk_parts_, topk_counters_;  // the chunks' candidates (values, then ids); counters
  PinnedBuffer host_topk_;
  std::optional<PersistentPlan> pl_;  // decode_layers.persistent for batch-1 steps, when on and able
  DeviceBuffer pl_layers_, pl_counters_, pl_part_o_, pl_part_ml_;
  DeviceBuffer mlp_counters_;  // mlp.fused: blocks that read h / blocks done (reset by its last block)
  StepInputs in_;  // token ids, positions, slots, logit rows of the step
  PinnedBuffer host_logits_, host_tokens_;
  struct Ahead {
    int slot;
    long long n;
    bool stashed = false;  // its tokens were taken off the slot early (stash)
    std::array<int32_t, kMaxBatch> stash{};
  };
  std::deque<Ahead> ahead_;   // decode-ahead steps in flight, oldest first
  PinnedBuffer host_ahead_;   // their greedy tokens: two slots of kMaxBatch
  CUevent ahead_done_[2] = {nullptr, nullptr};
  long long ahead_count_ = 0, ahead_n_ = 0;  // steps enqueued; tokens of the last (0: none to chain)
  std::map<int, CUgraphExec> graphs_;  // by batch template * 4 + the attention's AttnRange
  long long longest_ = 0;  // positions of this decode step's longest sequence (picks the attention)
  long long decode_steps_ = 0;  // decode steps run (the developer timeline records one of them)
  // How far the batch-1 long ranges' cluster attention reaches (cluster_long_reaches): computed
  // once, so that picking a step's graph builds no variants.
  std::vector<long long> cluster_reach_;
  bool profile_ = false;
  std::vector<Mark> marks_;
  std::map<std::string, ProfileEntry> profile_sum_;
  long long profiled_steps_ = 0;
  std::vector<int32_t> last_positions_;
  long long rows_in_step_ = 0;
  bool decode_step_ = false, tokens_ready_ = false;
  bool host_tokens_valid_ = false;  // host_tokens_ holds this step's token_out_ (decode steps)
  mutable bool logits_on_host_ = false;
};

}  // namespace

std::string fast_weights_key(const FastConfig& cfg) {
  return "cuda fast weights/1|mlp.fused kc " + std::to_string(cfg.mlp_fused_batch > 0 ? cfg.mlp.kc : 0);
}

std::unique_ptr<Executor> make_fast_executor(const Graph& g, const ExecutorLimits& lim, const FastConfig& cfg,
                                             ExecutorShare* share) {
  return std::make_unique<FastExecutor>(g, lim, cfg, share);
}

}  // namespace ac::cuda
