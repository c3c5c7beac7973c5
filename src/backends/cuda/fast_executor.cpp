#include "backends/cuda/fast_executor.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "agentcompile/core/error.h"
#include "agentcompile/plan/plan.h"

namespace ac::cuda {

const GemvSlotField& gemv_slot(const std::string& name) {
  for (const GemvSlotField& s : kGemvSlots)
    if (name == s.name) return s;
  throw_internal("fast path", "no GEMV region named " + name);
}

bool valid_carveout_region(const std::string& name) {
  const auto& names = plan_carveout_regions();
  return std::find(names.begin(), names.end(), name) != names.end();
}

FastConfig apply_fast_config_override(FastConfig cfg, const std::string& spec) {
  std::map<std::string, GemvChoice FastConfig::*> gemvs;
  std::map<std::string, MmaChoice FastConfig::*> mmas;
  for (const GemvSlotField& s : kGemvSlots) {
    gemvs[s.name] = s.gemv;
    mmas[std::string(s.name) + "_mma"] = s.mma;
  }
  const std::map<std::string, int FastConfig::*> ints = {{"attn_block", &FastConfig::attn_block},
                                                         {"mma_terms", &FastConfig::mma_terms},
                                                         {"mma_min_batch", &FastConfig::mma_min_batch},
                                                         {"attn_tile", &FastConfig::attn_tile},
                                                         {"attn_split", &FastConfig::attn_split},
                                                         {"attn_ilp", &FastConfig::attn_ilp},
                                                         {"attn_split_long", &FastConfig::attn_split_long},
                                                         {"attn_long_from", &FastConfig::attn_long_from},
                                                         {"attn_cluster", &FastConfig::attn_cluster},
                                                         {"attn_cluster_long", &FastConfig::attn_cluster_long},
                                                         {"attn_o", &FastConfig::attn_o},
                                                         {"attn_o_late", &FastConfig::attn_o_late},
                                                         {"attn_merge_o", &FastConfig::attn_merge_o},
                                                         {"attn_cluster_long_split", &FastConfig::attn_cluster_long_split},
                                                         {"mlp_fused_batch", &FastConfig::mlp_fused_batch},
                                                         {"qkv_post_block", &FastConfig::qkv_post_block},
                                                         {"top_k_block", &FastConfig::top_k_block},
                                                         {"persistent", &FastConfig::persistent},
                                                         {"persistent_block", &FastConfig::persistent_block},
                                                         {"persistent_stages", &FastConfig::persistent_stages},
                                                         {"persistent_splits", &FastConfig::persistent_splits},
                                                         {"persistent_stage_kb", &FastConfig::persistent_stage_kb},
                                                         {"smem_carveout", &FastConfig::smem_carveout}};
  const std::map<std::string, bool FastConfig::*> bools = {{"cuda_graph", &FastConfig::cuda_graph},
                                                           {"pdl", &FastConfig::pdl},
                                                           {"batched_mma", &FastConfig::batched_mma},
                                                           {"gpu_top_k", &FastConfig::gpu_top_k},
                                                           {"decode_ahead", &FastConfig::decode_ahead},
                                                           {"device_chain", &FastConfig::device_chain}};
  auto number = [&](const std::string& key, const std::string& text) {
    size_t used = 0;
    int v = 0;
    try {
      v = std::stoi(text, &used);
    } catch (const std::exception&) {
      used = std::string::npos;
    }
    if (used != text.size() || text.empty()) throw_input("fast config override", "'" + key + "': '" + text + "' is not an integer");
    return v;
  };
  std::stringstream items(spec);
  std::string item;
  while (std::getline(items, item, ',')) {
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string::npos) throw_input("fast config override", "'" + item + "' is not key=value");
    const std::string key = item.substr(0, eq), val = item.substr(eq + 1);
    if (auto g = mmas.find(key); g != mmas.end()) {
      std::vector<int> f;
      std::stringstream parts(val);
      for (std::string x; std::getline(parts, x, ':');) f.push_back(number(key, x));
      if (f.size() != 4) throw_input("fast config override", "'" + key + "' needs block:mt:unroll:splitk");
      cfg.*(g->second) = MmaChoice{f[0], f[1], f[2], f[3]};
    } else if (auto g = gemvs.find(key); g != gemvs.end()) {
      std::vector<int> f;
      std::stringstream parts(val);
      for (std::string x; std::getline(parts, x, ':');) f.push_back(number(key, x));
      if (f.size() != 4) throw_input("fast config override", "'" + key + "' needs block:rows:unroll:splitk");
      cfg.*(g->second) = GemvChoice{f[0], f[1], f[2], f[3]};
    } else if (key == "mlp") {
      std::vector<int> f;
      std::stringstream parts(val);
      for (std::string x; std::getline(parts, x, ':');) f.push_back(number(key, x));
      if (f.size() != 5) throw_input("fast config override", "'mlp' needs block:kc:rows:unroll:bps");
      cfg.mlp = MlpChoice{f[0], f[1], f[2], f[3], f[4]};
    } else if (auto i = ints.find(key); i != ints.end()) {
      cfg.*(i->second) = number(key, val);
      if ((key == "attn_cluster" || key == "attn_cluster_long") && !valid_attn_cluster(cfg.*(i->second)))
        throw_input("fast config override", "'" + key + "' must be 0, 2, 4, 8 or 16");
      if (key == "attn_o" && !valid_attn_o(cfg.attn_o)) throw_input("fast config override", "'attn_o' must be 0, 1, 2 or 4");
      if (key == "attn_merge_o" && cfg.attn_merge_o != 0 && cfg.attn_merge_o != 1)
        throw_input("fast config override", "'attn_merge_o' must be 0 or 1");
      if (key == "attn_o_late" && (cfg.attn_o_late < 0 || cfg.attn_o_late > 2))
        throw_input("fast config override", "'attn_o_late' must be 0, 1 or 2");
      if (key == "smem_carveout" && (cfg.smem_carveout < -1 || cfg.smem_carveout > 100))
        throw_input("fast config override", "'smem_carveout' must be -1 (none) or a percentage 0-100");
      if (key == "attn_cluster_long_split" && cfg.attn_cluster_long_split != 0) {
        const auto& dom = find_family("attn_decode", "cluster").params;
        const auto split = std::find_if(dom.begin(), dom.end(), [](const auto& d) { return d.name == "SPLIT"; });
        if (std::find(split->values.begin(), split->values.end(), cfg.attn_cluster_long_split) == split->values.end())
          throw_input("fast config override", "'attn_cluster_long_split' must be 0 or one of attn_decode.cluster's SPLITs");
      }
      if (key == "top_k_block" && cfg.top_k_block != 256 && cfg.top_k_block != 512 && cfg.top_k_block != 1024)
        throw_input("fast config override", "'top_k_block' must be 256, 512 or 1024");
    } else if (auto b = bools.find(key); b != bools.end()) {
      cfg.*(b->second) = number(key, val) != 0;
    } else if (key.rfind("carveout.", 0) == 0) {
      const std::string region = key.substr(9);
      if (!valid_carveout_region(region))
        throw_input("fast config override", "'" + key + "': no such region (qkv, o, gate_up, down, lm_head, attention)");
      const int v = number(key, val);
      if (v < -1 || v > 100) throw_input("fast config override", "'" + key + "' must be -1 (none) or a percentage 0-100");
      if (v < 0) cfg.region_carveout.erase(region);
      else cfg.region_carveout[region] = v;
    } else {
      throw_input("fast config override", "unknown key '" + key + "'");
    }
  }
  return cfg;
}

}  // namespace ac::cuda
