// The fast path's developer override (AGENTCOMPILE_FAST_CONFIG): what it sets, what it refuses.
#ifdef AGENTCOMPILE_HAVE_CUDA
#include <gtest/gtest.h>

#include <set>

#include "agentcompile/core/error.h"
#include "agentcompile/model/hf_config.h"
#include "agentcompile/model/synth_model.h"
#include "backends/cuda/fast_executor.h"
#include "backends/cuda/plan_config.h"

namespace ac {
namespace {

TEST(FastConfigOverride, SetsGemvPointsAndIntegers) {
  const cuda::FastConfig base;
  const cuda::FastConfig c = cuda::apply_fast_config_override(base, "o=128:4:2:8,attn_split=64,pdl=0,,lm_head=256:1:1:1");
  EXPECT_EQ(c.o.block, 128);
  EXPECT_EQ(c.o.rows, 4);
  EXPECT_EQ(c.o.unroll, 2);
  EXPECT_EQ(c.o.splitk, 8);
  EXPECT_EQ(c.lm_head.rows, 1);
  EXPECT_EQ(c.attn_split, 64);
  EXPECT_FALSE(c.pdl);
  EXPECT_TRUE(c.cuda_graph);
  EXPECT_EQ(c.qkv.unroll, base.qkv.unroll);  // untouched
}

TEST(FastConfigOverride, SetsTheDeviceTopK) {
  EXPECT_TRUE(cuda::FastConfig{}.gpu_top_k);
  const cuda::FastConfig c = cuda::apply_fast_config_override({}, "gpu_top_k=0,top_k_block=512");
  EXPECT_FALSE(c.gpu_top_k);
  EXPECT_EQ(c.top_k_block, 512);
}

TEST(FastConfigOverride, SetsTheLongContextAttention) {
  const cuda::FastConfig d;
  EXPECT_GT(d.attn_split_long, d.attn_split);
  EXPECT_GT(d.attn_long_from, 0);
  const cuda::FastConfig c = cuda::apply_fast_config_override({}, "attn_split_long=128,attn_long_from=0");
  EXPECT_EQ(c.attn_split_long, 128);
  EXPECT_EQ(c.attn_long_from, 0);
  EXPECT_THROW(cuda::apply_fast_config_override({}, "attn_long_from=x"), Error);
}

// The long-context attention keeps its splits within what the GPU allows: Qwen3-4B's head dim of
// 128 (4 query heads per KV head) needs 140 KiB for splits of 256, which sm_90 and sm_80 have and
// sm_86 has not (halved to 128); the short splits stay within 99 KiB everywhere.
TEST(FastConfigOverride, LongContextSplitsFitTheArch) {
  EXPECT_EQ(cuda::max_dynamic_smem("sm_90a"), (227 - 16) * 1024);
  EXPECT_EQ(cuda::max_dynamic_smem("sm_100"), (227 - 16) * 1024);
  EXPECT_EQ(cuda::max_dynamic_smem("sm_80"), (163 - 16) * 1024);
  EXPECT_EQ(cuda::max_dynamic_smem("sm_86"), (99 - 16) * 1024);
  EXPECT_EQ(cuda::attn_short_smem_budget("sm_90"), 99 * 1024);
  const ModelConfig c = parse_model_config(find_synth_preset("qwen3-4b")->config, "qwen3-4b");
  cuda::FastConfig cfg;
  cfg.attn_split = 256;  // short splits of 256 do not fit 99 KiB: halved to 128 on every arch
  for (const auto& [arch, long_split] : std::vector<std::pair<std::string, int>>{{"sm_90", 256}, {"sm_80", 256}, {"sm_86", 128}}) {
    std::vector<int> splits;
    for (const cuda::Variant& v : cuda::fast_path_variants(c, DType::BF16, cfg, arch))
      if (v.family->op == "attn_decode" && v.family->name == "fused") splits.push_back(v.param("SPLIT"));
    EXPECT_EQ(splits, (std::vector<int>{128, long_split})) << arch;
  }
}

// The preferred shared-memory carveout set on every fast-path kernel: none by default, -1 or a
// percentage, anything else a one-line error naming the key.
TEST(FastConfigOverride, SharedMemoryCarveout) {
  EXPECT_EQ(cuda::FastConfig{}.smem_carveout, -1);
  EXPECT_EQ(cuda::apply_fast_config_override({}, "smem_carveout=40").smem_carveout, 40);
  EXPECT_EQ(cuda::apply_fast_config_override({}, "smem_carveout=0").smem_carveout, 0);
  EXPECT_EQ(cuda::apply_fast_config_override({}, "smem_carveout=-1").smem_carveout, -1);
  for (const char* bad : {"smem_carveout=101", "smem_carveout=-2", "smem_carveout=x"}) {
    try {
      cuda::apply_fast_config_override({}, bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(e.reason().find("smem_carveout"), std::string::npos) << e.reason();
    }
  }
}

// Per-region carveouts: carveout.<region> sets one, -1 removes it; unknown regions and values
// outside -1..100 are refused.
TEST(FastConfigOverride, RegionCarveouts) {
  EXPECT_TRUE(cuda::FastConfig{}.region_carveout.empty());
  const cuda::FastConfig c = cuda::apply_fast_config_override({}, "carveout.down=30,carveout.attention=0,smem_carveout=40");
  const std::map<std::string, int> want = {{"down", 30}, {"attention", 0}};
  EXPECT_EQ(c.region_carveout, want);
  EXPECT_EQ(c.smem_carveout, 40);
  EXPECT_EQ(cuda::apply_fast_config_override(c, "carveout.down=-1").region_carveout,
            (std::map<std::string, int>{{"attention", 0}}));
  for (const cuda::GemvSlotField& s : cuda::kGemvSlots) EXPECT_TRUE(cuda::valid_carveout_region(s.name)) << s.name;
  EXPECT_TRUE(cuda::valid_carveout_region("attention"));
  EXPECT_FALSE(cuda::valid_carveout_region("attn_in"));
  for (const char* bad : {"carveout.mlp=30", "carveout.=30", "carveout.down=101", "carveout.down=-2", "carveout.down=x"}) {
    try {
      cuda::apply_fast_config_override({}, bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(e.reason().find("carveout."), std::string::npos) << e.reason();
    }
  }
}

// attn_decode.cluster for batch-1 steps of short contexts: on by default (8 blocks per KV head);
// its CLUSTER blocks of SPLIT rows cover attn_long_from positions, the kernel's cluster shape is
// compiled in; none where clusters do not exist (sm_80), where nothing bounds the context, or
// when switched off. Batches and long contexts keep attn_decode.fused.
TEST(FastConfigOverride, ClusterAttentionForShortContexts) {
  EXPECT_EQ(cuda::FastConfig{}.attn_cluster, 8);
  EXPECT_THROW(cuda::apply_fast_config_override({}, "attn_cluster=3"), Error);
  EXPECT_EQ(cuda::apply_fast_config_override({}, "attn_cluster=4").attn_cluster, 4);
  const cuda::FastConfig off = cuda::apply_fast_config_override({}, "attn_cluster=0");
  const ModelConfig m = parse_model_config(find_synth_preset("qwen3-1.7b")->config, "qwen3-1.7b");
  auto clusters = [&](cuda::FastConfig cfg, const char* arch) {
    cfg.attn_cluster_long = 0;  // the long range's cluster: ClusterAttentionForLongContexts
    std::vector<cuda::Variant> out;
    for (const cuda::Variant& v : cuda::fast_path_variants(m, DType::BF16, cfg, arch))
      if (v.family->name == "cluster") out.push_back(v);
    return out;
  };
  const cuda::FastConfig on;
  const auto v = clusters(on, "sm_90");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].param("SPLIT") * v[0].param("CLUSTER"), 512);  // 384 positions: 8 x 64
  EXPECT_NE(v[0].source().find("__cluster_dims__(1, CLUSTER, 1)"), std::string::npos);
  EXPECT_TRUE(clusters(off, "sm_90").empty());
  EXPECT_TRUE(clusters(on, "sm_80").empty());
  cuda::FastConfig never_long = on;
  never_long.attn_long_from = 0;
  EXPECT_TRUE(clusters(never_long, "sm_90").empty());
  // What a step runs, and how many blocks per (KV head, token) over a cache of 4096 positions.
  const auto at = [&](int batch, long long longest) {
    return cuda::decode_attention_variant(m, on, DType::BF16, "sm_90", batch, longest);
  };
  EXPECT_EQ(at(1, 384).family->name, "cluster");
  EXPECT_EQ(cuda::decode_attention_blocks(at(1, 0), 4096), 8);
  EXPECT_EQ(at(2, 100).family->name, "fused");
  EXPECT_EQ(cuda::decode_attention_blocks(at(2, 100), 4096), 4096 / on.attn_split);
  EXPECT_EQ(at(1, 385).family->name, "cluster");  // the long range's cluster (ClusterAttentionForLongContexts)
  EXPECT_EQ(at(2, 385).param("SPLIT"), on.attn_split_long);
  EXPECT_EQ(cuda::decode_attention_variant(m, on, DType::BF16, "sm_80", 1, 10).family->name, "fused");
}

// attn_o: batch-1 steps of the short range run attn_o.cluster instead of the cluster attention and
// the output GEMV, with the cluster attention's BLOCK, SPLIT and CLUSTER and attn_o clusters per KV
// head; off by default, never for batches, the long range, an o_proj bias, a hidden size that does
// not divide into the blocks' tiles or tiles past the GPU's shared memory, nor without clusters.
TEST(FastConfigOverride, AttentionWithOutputProjection) {
  EXPECT_EQ(cuda::FastConfig{}.attn_o, 0);
  for (const char* bad : {"attn_o=3", "attn_o=8", "attn_o=-1", "attn_o_late=3"})
    EXPECT_THROW(cuda::apply_fast_config_override({}, bad), Error) << bad;
  EXPECT_EQ(cuda::apply_fast_config_override({}, "attn_o=1,attn_o_late=2").attn_o_late, 2);
  const ModelConfig q = parse_model_config(find_synth_preset("qwen3-1.7b")->config, "qwen3-1.7b");
  EXPECT_FALSE(cuda::attn_o_plan(q, {}, DType::BF16, "sm_90", 1, 100, false));  // off
  for (int copies : {1, 2, 4}) {
    const cuda::FastConfig on = cuda::apply_fast_config_override({}, "attn_o=" + std::to_string(copies));
    const auto ao = cuda::attn_o_plan(q, on, DType::BF16, "sm_90", 1, 100, false);
    ASSERT_TRUE(ao) << copies;
    const cuda::Variant cl = cuda::decode_attention_variant(q, on, DType::BF16, "sm_90", 1, 100);
    for (const char* k : {"BLOCK", "SPLIT", "CLUSTER"}) EXPECT_EQ(ao->v.param(k), cl.param(k)) << k;
    EXPECT_EQ(ao->v.param("COPIES"), copies);
    EXPECT_EQ(ao->v.param("LATE"), on.attn_o_late);
    EXPECT_EQ(ao->rows * cl.param("CLUSTER") * copies, q.hidden_size);
    EXPECT_EQ(ao->smem, size_t(cuda::attn_o_smem_bytes(cl.param("SPLIT"), 128, 2, ao->rows)));
    // Listed with the variants compiled ahead (and a plan's kernels).
    bool listed = false;
    for (const cuda::Variant& v : cuda::fast_path_variants(q, DType::BF16, on, "sm_90")) listed = listed || v.name() == ao->v.name();
    EXPECT_TRUE(listed) << ao->v.name();
    EXPECT_FALSE(cuda::attn_o_plan(q, on, DType::BF16, "sm_90", 2, 100, false));    // a batch
    EXPECT_FALSE(cuda::attn_o_plan(q, on, DType::BF16, "sm_90", 1, 385, false));    // the long range
    EXPECT_FALSE(cuda::attn_o_plan(q, on, DType::BF16, "sm_90", 1, 100, true));     // an o_proj bias
    EXPECT_FALSE(cuda::attn_o_plan(q, on, DType::BF16, "sm_80", 1, 100, false));    // no clusters
  }
  // One cluster of 8 blocks per KV head holds Qwen3-4B's tiles of 320 rows x 512 columns only
  // past the shared memory (320 KiB): not applicable; two or four clusters are.
  const ModelConfig q4 = parse_model_config(find_synth_preset("qwen3-4b")->config, "qwen3-4b");
  EXPECT_FALSE(cuda::attn_o_plan(q4, cuda::apply_fast_config_override({}, "attn_o=1"), DType::BF16, "sm_90", 1, 100, false));
  EXPECT_TRUE(cuda::attn_o_plan(q4, cuda::apply_fast_config_override({}, "attn_o=2"), DType::BF16, "sm_90", 1, 100, false));
  // A hidden size that does not divide into CLUSTER * attn_o tiles.
  ModelConfig odd = q;
  odd.hidden_size = 2056;
  EXPECT_FALSE(cuda::attn_o_plan(odd, cuda::apply_fast_config_override({}, "attn_o=2"), DType::BF16, "sm_90", 1, 100, false));
}

// attn_merge_o: batch-1 steps of the short range run attn_decode.parts with the cluster
// attention's point (PARTS its CLUSTER) and gemv.merged with o's point; off by default, never for
// batches, the long range, without clusters (where the cluster attention does not run) or where
// attn_o takes the step; an o_proj bias is the GEMV's as ever.
TEST(FastConfigOverride, AttentionPartialsMergedByTheOutputProjection) {
  EXPECT_EQ(cuda::FastConfig{}.attn_merge_o, 0);
  for (const char* bad : {"attn_merge_o=2", "attn_merge_o=-1", "attn_merge_o=x"})
    EXPECT_THROW(cuda::apply_fast_config_override({}, bad), Error) << bad;
  const ModelConfig q = parse_model_config(find_synth_preset("qwen3-1.7b")->config, "qwen3-1.7b");
  EXPECT_FALSE(cuda::merge_o_plan(q, {}, DType::BF16, "sm_90", 1, 100, false));  // off
  const cuda::FastConfig on = cuda::apply_fast_config_override({}, "attn_merge_o=1,o=256:2:4:2");
  const auto mo = cuda::merge_o_plan(q, on, DType::BF16, "sm_90", 1, 100, false);
  ASSERT_TRUE(mo);
  const cuda::Variant cl = cuda::decode_attention_variant(q, on, DType::BF16, "sm_90", 1, 100);
  EXPECT_EQ(mo->attn.family->name, "parts");
  for (const char* k : {"BLOCK", "SPLIT", "HD", "GROUP"}) EXPECT_EQ(mo->attn.param(k), cl.param(k)) << k;
  EXPECT_EQ(mo->attn.param("PARTS"), cl.param("CLUSTER"));
  EXPECT_EQ(cuda::decode_attention_blocks(mo->attn, 4096), cl.param("CLUSTER"));
  EXPECT_EQ(mo->o.family->name, "merged");
  EXPECT_EQ(mo->o.param("PARTS"), cl.param("CLUSTER"));
  for (auto [k, want] : {std::pair{"BLOCK", 256}, std::pair{"ROWS", 2}, std::pair{"UNROLL", 4}, std::pair{"SPLITK", 2}})
    EXPECT_EQ(mo->o.param(k), want) << k;
  EXPECT_TRUE(cuda::merge_o_plan(q, on, DType::BF16, "sm_90", 1, 100, true));  // an o_proj bias: the GEMV adds it
  std::set<std::string> listed;  // compiled ahead with the rest
  for (const cuda::Variant& v : cuda::fast_path_variants(q, DType::BF16, on, "sm_90")) listed.insert(v.name());
  EXPECT_TRUE(listed.count(mo->attn.name()) && listed.count(mo->o.name()));
  EXPECT_FALSE(cuda::merge_o_plan(q, on, DType::BF16, "sm_90", 2, 100, false));   // a batch
  EXPECT_FALSE(cuda::merge_o_plan(q, on, DType::BF16, "sm_90", 1, 385, false));   // the long range
  EXPECT_FALSE(cuda::merge_o_plan(q, on, DType::BF16, "sm_80", 1, 100, false));   // no clusters
  EXPECT_FALSE(cuda::merge_o_plan(q, cuda::apply_fast_config_override(on, "attn_cluster=0"), DType::BF16, "sm_90", 1, 100, false));
  EXPECT_FALSE(cuda::merge_o_plan(q, cuda::apply_fast_config_override(on, "attn_o=2"), DType::BF16, "sm_90", 1, 100, false));
}

// attn_cluster_long: batch-1 steps past attn_long_from run attn_decode.cluster with that many
// blocks per KV head while CLUSTER blocks of the largest split the GPU's shared memory holds
// (at most 256 rows) cover the context, a range (and a CUDA graph) of its own; longer steps,
// batches and GPUs without clusters keep the long splits; 0, 2, 4, 8, 16 only, in overrides and
// plans alike.
TEST(FastConfigOverride, ClusterAttentionForLongContexts) {
  EXPECT_EQ(cuda::apply_fast_config_override({}, "attn_cluster_long=16").attn_cluster_long, 16);
  EXPECT_EQ(cuda::apply_fast_config_override({}, "attn_cluster=16").attn_cluster, 16);
  EXPECT_THROW(cuda::apply_fast_config_override({}, "attn_cluster_long=12"), Error);
  EXPECT_THROW(cuda::apply_fast_config_override({}, "attn_cluster_long_split=1000"), Error);
  EXPECT_EQ(cuda::apply_fast_config_override({}, "attn_cluster_long_split=96").attn_cluster_long_split, 96);
  const ModelConfig m = parse_model_config(find_synth_preset("qwen3-1.7b")->config, "qwen3-1.7b");
  const ModelConfig big = parse_model_config(find_synth_preset("llama-3.2-1b")->config, "llama-3.2-1b");
  cuda::FastConfig cfg;
  EXPECT_EQ(cfg.attn_cluster_long, 8);
  using R = cuda::AttnRange;
  const auto range = [&](const ModelConfig& mc, int batch, long long longest, const char* arch = "sm_90") {
    return cuda::decode_attention_range(mc, cfg, DType::BF16, arch, batch, longest);
  };
  EXPECT_EQ(cuda::cluster_long_reaches(m, cfg, DType::BF16, "sm_90"), (std::vector<long long>{2048}));
  EXPECT_EQ(cuda::cluster_long_reaches(big, cfg, DType::BF16, "sm_90"), (std::vector<long long>{2048, 4096}));
  EXPECT_EQ(cuda::attn_range_of(cfg, 1, 3000, {2048, 4096}), R::ClusterLonger);
  EXPECT_EQ(cuda::attn_range_of(cfg, 2, 3000, {2048, 4096}), R::Long);
  EXPECT_EQ(range(m, 1, 2048), R::ClusterLong);  // the default: 8 blocks of 256 rows
  EXPECT_EQ(range(m, 1, 2049), R::Long);  // head dim 128: 512 rows do not fit
  EXPECT_EQ(range(big, 1, 2049), R::ClusterLonger);  // head dim 64: then 8 of 512
  EXPECT_EQ(cuda::decode_attention_variant(big, cfg, DType::BF16, "sm_90", 1, 2176).param("SPLIT"), 512);
  EXPECT_EQ(range(big, 1, 4096), R::ClusterLonger);
  EXPECT_EQ(range(big, 1, 4097), R::Long);
  EXPECT_EQ(range(big, 1, 2049, "sm_80"), R::Long);  // no clusters there
  cfg.attn_cluster_long_split = 96;  // the first range's split
  EXPECT_EQ(range(m, 1, 768), R::ClusterLong);
  EXPECT_EQ(range(m, 1, 769), R::Long);
  EXPECT_EQ(range(big, 1, 769), R::ClusterLonger);
  EXPECT_EQ(cuda::decode_attention_variant(m, cfg, DType::BF16, "sm_90", 1, 500).param("SPLIT"), 96);
  cfg.attn_cluster_long_split = 0;
  cfg.attn_cluster_long = 16;
  EXPECT_EQ(range(m, 1, 384), R::Short);
  EXPECT_EQ(range(m, 1, 385), R::ClusterLong);
  EXPECT_EQ(range(m, 1, 4096), R::ClusterLong);  // head dim 128: 16 blocks of 256 rows (139 KiB each)
  EXPECT_EQ(range(m, 1, 4097), R::Long);
  EXPECT_EQ(range(big, 1, 8192), R::ClusterLonger);  // head dim 64: 16 of 512
  EXPECT_EQ(range(m, 2, 1000), R::Long);
  EXPECT_EQ(range(m, 1, 1000, "sm_80"), R::Long);
  const cuda::Variant v = cuda::decode_attention_variant(m, cfg, DType::BF16, "sm_90", 1, 2176);
  EXPECT_EQ(v.family->name, "cluster");
  EXPECT_EQ(v.param("CLUSTER"), 16);
  EXPECT_EQ(v.param("SPLIT"), 256);
  EXPECT_EQ(cuda::decode_attention_blocks(v, 40960), 16);
  EXPECT_EQ(cuda::decode_attention_variant(m, cfg, DType::BF16, "sm_90", 1, 7000).family->name, "fused");
  // Every variant the config launches includes them (compiled ahead, shipped with plans).
  const auto count16 = [&](const ModelConfig& mc) {
    int n = 0;
    for (const cuda::Variant& x : cuda::fast_path_variants(mc, DType::BF16, cfg, "sm_90"))
      n += x.family->name == "cluster" && x.param("CLUSTER") == 16;
    return n;
  };
  EXPECT_EQ(count16(m), 1);
  EXPECT_EQ(count16(big), 2);
  // Off (0, or attn_long_from 0): the long splits, or the short range everywhere.
  cfg.attn_cluster_long = 0;
  EXPECT_EQ(range(m, 1, 1000), R::Long);
  cfg.attn_cluster_long = 16;
  cfg.attn_long_from = 0;
  EXPECT_EQ(range(m, 1, 100000), R::Short);
  // A plan carries it; older plans without it keep the default.
  cfg.attn_long_from = 384;
  const KnobValues p = plan_fast_of(cfg);
  ASSERT_TRUE(p.get("attn_cluster_long"));
  EXPECT_EQ(fast_config_of(KnobValues::from_json(p.table(), p.to_json(), "cuda_fast")).attn_cluster_long, 16);
  Json bad = p.to_json();
  bad["attn_cluster_long"] = 6;
  EXPECT_THROW(KnobValues::from_json(p.table(), bad, "cuda_fast"), Error);
}

TEST(FastConfigOverride, SwitchesDecodeAhead) {
  EXPECT_TRUE(cuda::FastConfig{}.decode_ahead);
  EXPECT_FALSE(cuda::apply_fast_config_override({}, "decode_ahead=0").decode_ahead);
  EXPECT_TRUE(cuda::apply_fast_config_override({}, "decode_ahead=0,decode_ahead=1").decode_ahead);
}

TEST(FastConfigOverride, SetsTensorCorePoints) {
  const cuda::FastConfig c = cuda::apply_fast_config_override({}, "down_mma=256:2:1:4,mma_terms=3,batched_mma=0,mma_min_batch=8");
  EXPECT_EQ(c.down_mma.block, 256);
  EXPECT_EQ(c.down_mma.mt, 2);
  EXPECT_EQ(c.down_mma.unroll, 1);
  EXPECT_EQ(c.down_mma.splitk, 4);
  EXPECT_EQ(c.mma_terms, 3);
  EXPECT_EQ(c.mma_min_batch, 8);
  EXPECT_FALSE(c.batched_mma);
}

// Which GEMV family a decode step launches: gemv.mma only where it can run and is enabled.
TEST(FastDecodeGemv, TensorCoresForLargerBatchesOfBf16Weights) {
  const cuda::FastConfig cfg;
  auto family = [&](const cuda::FastConfig& c, int batch, long long K, DType wt, const char* arch) {
    return cuda::fast_decode_gemv(c, c.down, c.down_mma, cuda::kEpiResidual, batch, K, wt, arch).family->name;
  };
  EXPECT_EQ(family(cfg, 8, 8192, DType::BF16, "sm_90"), "mma");
  EXPECT_EQ(family(cfg, 4, 8192, DType::BF16, "sm_80"), "mma");
  EXPECT_EQ(family(cfg, 1, 8192, DType::BF16, "sm_90"), "fused");
  EXPECT_EQ(family(cfg, 2, 8192, DType::BF16, "sm_90"), "mma");  // from mma_min_batch (2) on
  cuda::FastConfig from3 = cfg;
  from3.mma_min_batch = 3;
  EXPECT_EQ(family(from3, 2, 8192, DType::BF16, "sm_90"), "fused");  // below mma_min_batch
  EXPECT_EQ(family(cfg, 8, 8192, DType::F16, "sm_90"), "fused");   // bf16 mma only
  EXPECT_EQ(family(cfg, 8, 8200, DType::BF16, "sm_90"), "fused");  // K % 32 != 0
  EXPECT_EQ(family(cfg, 8, 8192, DType::BF16, "sm_75"), "fused");  // no bf16 mma below sm_80
  cuda::FastConfig off = cfg;
  off.batched_mma = false;
  EXPECT_EQ(family(off, 8, 8192, DType::BF16, "sm_90"), "fused");
  // Points that would not fit the registers shrink (SwiGLU holds two matrices).
  cuda::FastConfig big = cfg;
  big.gate_up_mma = {256, 4, 4, 1};
  const auto v = cuda::fast_decode_gemv(big, big.gate_up, big.gate_up_mma, cuda::kEpiSwiglu, 8, 2048, DType::BF16, "sm_90");
  EXPECT_LE(v.param("MT") * v.param("UNROLL") * 2, 4);
  EXPECT_EQ(v.param("SPLITK"), 1);
}

// mlp.fused replaces the gate_up and down GEMVs only up to mlp_fused_batch (off by default); an
// impossible point is a one-line BadInput, not an internal error.
TEST(FastMlpFused, ChosenUpToItsBatchAndValidated) {
  const cuda::FastConfig off;
  EXPECT_FALSE(cuda::fast_mlp_variant(off, 1, 2048, 8192, DType::BF16, "sm_90"));
  const cuda::FastConfig on = cuda::apply_fast_config_override({}, "mlp_fused_batch=2,mlp=512:32:2:1:3");
  EXPECT_EQ(on.mlp.block, 512);
  EXPECT_EQ(on.mlp.kc, 32);
  EXPECT_EQ(on.mlp.bps, 3);
  auto v = cuda::fast_mlp_variant(on, 2, 2048, 8192, DType::BF16, "sm_90");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->name(), "mlp__fused__w_bf16__block512__kc32__rows2__unroll1__batch2__sm90");
  EXPECT_FALSE(cuda::fast_mlp_variant(on, 4, 2048, 8192, DType::BF16, "sm_90"));  // batch 4: the GEMVs
  size_t mlps = 0;
  ModelConfig mc;
  mc.hidden_size = 2048, mc.intermediate_size = 8192, mc.num_heads = 32, mc.num_kv_heads = 8, mc.head_dim = 64;
  for (const auto& x : cuda::fast_path_variants(mc, DType::BF16, on, "sm_90")) mlps += x.family->op == "mlp";
  EXPECT_EQ(mlps, 2u);  // batch templates 1 and 2
  for (const char* bad : {"mlp_fused_batch=1,mlp=512:16:2:1:2", "mlp_fused_batch=1,mlp=256:48:1:1:2", "mlp_fused_batch=1,mlp=256:16:1:2:0"}) {
    try {
      cuda::fast_mlp_variant(cuda::apply_fast_config_override({}, bad), 1, 2048, 8192, DType::BF16, "sm_90");
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::BadInput) << bad;
    }
  }
}

// decode_layers.persistent: off by default; on, each op's tile fills a stage (rows 1..8), the ring
// and the largest input fit the GPU's shared memory, and models it cannot run get none.
TEST(FastPersistent, PlanFillsStagesAndFits) {
  EXPECT_FALSE(cuda::persistent_plan(parse_model_config(find_synth_preset("qwen3-1.7b")->config, "q"), cuda::FastConfig{},
                                     DType::BF16, "sm_90", false));
  const cuda::FastConfig on = cuda::apply_fast_config_override({}, "persistent=1");
  for (const char* preset : {"qwen3-1.7b", "qwen3-4b", "llama-3.2-1b", "tiny-qwen3", "tiny-llama"}) {
    const ModelConfig c = parse_model_config(find_synth_preset(preset)->config, preset);
    const auto pl = cuda::persistent_plan(c, on, DType::BF16, "sm_90", false);
    ASSERT_TRUE(pl) << preset;
    const long long stage = on.persistent_stage_kb * 1024LL;
    const long long H = c.hidden_size, I = c.intermediate_size, Q = c.q_dim();
    const struct {
      const char* p;
      long long k;
      int mats;
    } ops[] = {{"RQKV", H, 1}, {"RO", Q, 1}, {"RGU", H, 2}, {"RDOWN", I, 1}};
    for (const auto& o : ops) {
      const long long r = pl->v.param(o.p), bytes = r * o.k * 2 * o.mats;
      EXPECT_LE(bytes, pl->stage_bytes) << preset << " " << o.p;
      // As many rows as fit a stage, up to 16 accumulators (even above 8): one more (two) would not fit.
      if (r * o.mats < 16) {
        EXPECT_GT((r + (r < 8 ? 1 : 2)) * o.k * 2 * o.mats, stage) << preset << " " << o.p;
      }
    }
    EXPECT_EQ(pl->stage_bytes % 128, 0);
    EXPECT_EQ(pl->smem, size_t(pl->v.param("STAGES") * pl->stage_bytes + 4 * std::max({H, Q, I}) + 2 * H));
    EXPECT_LE(pl->smem, size_t(211 * 1024)) << preset;
    EXPECT_EQ(pl->v.param("GROUP"), c.num_heads / c.num_kv_heads);
  }
  const ModelConfig q = parse_model_config(find_synth_preset("qwen3-1.7b")->config, "q");
  EXPECT_FALSE(cuda::persistent_plan(q, on, DType::BF16, "sm_80", false));   // no bulk copies
  EXPECT_FALSE(cuda::persistent_plan(q, on, DType::BF16, "sm_90", true));    // biases
  ModelConfig odd = q;
  odd.head_dim = 96;
  EXPECT_FALSE(cuda::persistent_plan(odd, on, DType::BF16, "sm_90", false));
  // Qwen3-4B's down rows (19 KiB) fill a 32 KiB stage once; a 160 KiB ring of 5 stages plus its
  // 38 KiB input vector fits, 8 stages are cut down to what fits.
  const ModelConfig q4 = parse_model_config(find_synth_preset("qwen3-4b")->config, "q4");
  const auto eight = cuda::persistent_plan(q4, cuda::apply_fast_config_override(on, "persistent_stages=8"), DType::BF16,
                                           "sm_90", false);
  ASSERT_TRUE(eight);
  EXPECT_LT(eight->v.param("STAGES"), 8);
  EXPECT_LE(eight->smem, size_t(211 * 1024));
  for (const char* bad : {"persistent=1,persistent_splits=3", "persistent=1,persistent_stage_kb=0",
                          "persistent=1,persistent_block=256"}) {
    try {
      cuda::persistent_plan(q, cuda::apply_fast_config_override({}, bad), DType::BF16, "sm_90", false);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::BadInput) << bad;
    }
  }
}

// mlp.fused's W_down layout: unit u holds columns [u*kc, (u+1)*kc) of every row, zero past I.
TEST(FastMlpFused, TilesDownWeightsByUnit) {
  const long long H = 3, I = 20;
  const int kc = 8;
  std::vector<uint16_t> w(size_t(H * I));
  for (size_t i = 0; i < w.size(); ++i) w[i] = uint16_t(i + 1);
  const std::vector<uint16_t> t = cuda::tile_mlp_down(w.data(), H, I, kc);
  ASSERT_EQ(t.size(), size_t(3 * H * kc));  // 3 units, the last one half empty
  for (long long u = 0; u < 3; ++u)
    for (long long r = 0; r < H; ++r)
      for (int j = 0; j < kc; ++j) {
        const long long col = u * kc + j;
        EXPECT_EQ(t[size_t((u * H + r) * kc + j)], col < I ? w[size_t(r * I + col)] : 0) << u << " " << r << " " << j;
      }
}

TEST(FastConfigOverride, RefusesMalformedSpecs) {
  for (const char* bad : {"o=128:2:1", "o=128:2:1:x", "attn_split=", "attn_split=12a", "nope=1", "attn_split", "o_mma=1:2:3",
                          "mlp=256:16:1:2", "top_k_block=300"}) {
    try {
      cuda::apply_fast_config_override(cuda::FastConfig{}, bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::BadInput) << bad;
    }
  }
}

}  // namespace
}  // namespace ac
#endif  // AGENTCOMPILE_HAVE_CUDA
