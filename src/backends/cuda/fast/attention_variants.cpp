// The decode attention's kernel variants: which of attn_decode.fused, .cluster, .split and .parts,
// attn_o.cluster and gemv.merged a step runs for its batch and context, and their points.
#include <algorithm>
#include <map>

#include "agentcompile/core/error.h"
#include "backends/cuda/fast/variants.h"

namespace ac::cuda {

Variant qkv_post_variant(const FastConfig& cfg, DType wt, const std::string& arch) {
  return make_variant(find_family("qkv_post", "fused"), {{"BLOCK", cfg.qkv_post_block}}, {wt}, arch);
}
// The split length of the decode attention: the configured one, halved until the fused kernel's
// rows fit its shared-memory budget (long head dims): attn_short_smem_budget for short contexts
// (prefill attention uses the same splits); for long contexts attn_split_long within what `arch`
// allows (on the H200 Qwen3's head dim 128 keeps splits of 256 there).
int attn_split(const ModelConfig& c, const FastConfig& cfg, const std::string& arch, bool long_ctx) {
  int split = long_ctx ? cfg.attn_split_long : cfg.attn_split;
  const int group = int(c.num_heads / c.num_kv_heads);
  const int budget = long_ctx ? max_dynamic_smem(arch) : attn_short_smem_budget(arch);
  while (split > 16 && attn_fused_smem_bytes(split, int(c.head_dim), group) > budget) split /= 2;
  return split;
}
namespace {
// The attention block shrinks (down to 64 threads) until the group's outputs divide among its threads.
int attn_block(const ModelConfig& c, const FastConfig& cfg) {
  const int outputs = int(c.num_heads / c.num_kv_heads * c.head_dim);
  int block = cfg.attn_block;
  while (block > 64 && outputs % block != 0) block /= 2;
  return block;
}
}  // namespace
Variant attn_variant(const ModelConfig& c, const FastConfig& cfg, const std::string& arch) {
  return make_variant(find_family("attn_decode", "split"),
                      {{"BLOCK", std::min(attn_block(c, cfg), 256)}, {"TILE", std::min(cfg.attn_tile, attn_split(c, cfg, arch))},
                       {"SPLIT", attn_split(c, cfg, arch)}, {"HD", int(c.head_dim)}, {"GROUP", int(c.num_heads / c.num_kv_heads)}},
                      {}, arch);
}
Variant fused_attn_variant(const ModelConfig& c, const FastConfig& cfg, DType wt, const std::string& arch,
                           bool long_ctx) {
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

std::optional<Variant> prefill_flash_variant(const ModelConfig& c, const FastConfig& cfg, DType wt, const std::string& arch) {
  if (!cfg.prefill_flash || (c.head_dim != 32 && c.head_dim != 64 && c.head_dim != 128)) return std::nullopt;
  const Family& f = find_family("attn_prefill", cfg.prefill_flash_qs ? "qs" : "pipe");
  if (!arch_constraint(f, arch).empty()) return std::nullopt;
  std::map<std::string, int> values = {{"BLOCK", cfg.prefill_flash_block}, {"BK", cfg.prefill_flash_bk}, {"HD", int(c.head_dim)},
                                       {"PAIR", cfg.prefill_flash_pair}};
  if (cfg.prefill_flash_qs) values["MT"] = cfg.prefill_flash_qs;
  return make_variant(f, values, {wt}, arch);
}

size_t prefill_attention_smem(const Variant& v) {
  if (v.family->name == "qs") return size_t(attn_prefill_qs_smem(v.threads(), v.param("MT"), v.param("BK"), v.param("HD")));
  return size_t(attn_prefill_pipe_smem(v.param("BK"), v.param("HD")));
}

int prefill_tile_rows(const Variant& v) { return v.threads() / 32 * 16 * (v.family->name == "qs" ? v.param("MT") : 1); }

std::optional<Variant> prefill_qkv_post_variant(const ModelConfig& c, DType wt, const std::string& arch) {
  if (c.head_dim % 32 != 0 || c.head_dim > 256) return std::nullopt;
  return make_variant(find_family("qkv_post", "rows"), {{"BLOCK", 256}, {"HD", int(c.head_dim)}}, {wt}, arch);
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

}  // namespace ac::cuda
