// The host side of our prompt GEMMs (backends/cuda/gemm16.h), without a GPU: the launch parameters carry
// the matrices as given, the up projection only with the SwiGLU epilogue (EPI 3), tensor maps only
// at LOAD 1 (which needs the driver: without one it is refused with a clear error, never launched
// with empty maps); the grid covers C with BN columns per block, BN / 2 at EPI 3 (a tile's B rows
// are half gate, half up).
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <tuple>

#include "agentcompile/core/error.h"
#include "backends/cuda/driver.h"
#include "backends/cuda/gemm16.h"

using namespace ac;
using namespace ac::cuda;

namespace {

Variant point(int bn, int epi, int load) {
  return make_variant(find_family("gemm", "wgmma"),
                      {{"BLOCK", 384}, {"BN", bn}, {"STAGES", 4}, {"EPI", epi}, {"PIPE", 1}, {"LOAD", load}, {"CLUSTER", 1}, {"SCHED", 0}},
                      {DType::BF16},
                      "sm_90a");
}

bool all_zero(const TmaMap& m) {
  for (unsigned long long q : m.opaque)
    if (q) return false;
  return true;
}

TEST(Gemm16Params, CarryTheMatricesAndTheUpProjectionOnlyAtEpi3) {
  // The kernel reads the maps from its parameters: each 128-byte aligned, as the driver's CUtensorMap.
  static_assert(offsetof(GemmW16Params, ta) % 128 == 0 && offsetof(GemmW16Params, tb) % 128 == 0 &&
                offsetof(GemmW16Params, tb2) % 128 == 0);
  static_assert(sizeof(GemmW16Params) <= 4096, "a kernel's parameters are at most 4 KiB");
  alignas(16) static char a[16], b[16], b2[16], c[16];
  const GemmW16Params p = gemm16_params(point(128, 2, 0), DType::BF16, a, b, c, 300, 200, 512, 520, 528, 208);
  EXPECT_EQ(p.a, a);
  EXPECT_EQ(p.b, b);
  EXPECT_EQ(p.c, c);
  EXPECT_EQ(p.b2, nullptr);
  EXPECT_EQ(p.m, 300);
  EXPECT_EQ(p.n, 200);
  EXPECT_EQ(p.k, 512);
  EXPECT_EQ(p.lda, 520);
  EXPECT_EQ(p.ldb, 528);
  EXPECT_EQ(p.ldc, 208);
  EXPECT_TRUE(all_zero(p.ta) && all_zero(p.tb) && all_zero(p.tb2));  // LOAD 0: cp.async, no maps
  const GemmW16Params s = gemm16_params(point(64, 3, 0), DType::BF16, a, b, c, 300, 200, 512, 512, 512, 200, b2);
  EXPECT_EQ(s.b2, b2);
  EXPECT_THROW(gemm16_params(point(64, 3, 0), DType::BF16, a, b, c, 300, 200, 512, 512, 512, 200), Error);
  EXPECT_THROW(gemm16_params(point(64, 0, 0), DType::BF16, a, b, c, 300, 200, 512, 512, 512, 200, b2), Error);
}

// gemm.mma (sm_80+) has no tensor maps and the same grid; each family's shared memory.
TEST(Gemm16Params, MmaPointsTakeTheSameParametersAndGrid) {
  alignas(16) static char a[16], b[16], b2[16], c[16];
  const Family& f = find_family("gemm", "mma");
  const Variant v = make_variant(f, {{"BLOCK", 256}, {"BN", 128}, {"STAGES", 3}, {"EPI", 3}}, {DType::BF16}, "sm_80");
  const GemmW16Params p = gemm16_params(v, DType::BF16, a, b, c, 300, 200, 512, 512, 512, 200, b2);
  EXPECT_EQ(p.b2, b2);
  EXPECT_TRUE(all_zero(p.ta) && all_zero(p.tb) && all_zero(p.tb2));
  EXPECT_EQ(gemm16_grid(v, 300, 200, 0).x, 4u);  // 64 columns of gate and up per block
  EXPECT_EQ(gemm16_grid(v, 300, 200, 0).y, 3u);
  EXPECT_EQ(gemm16_smem(v), gemm_mma_smem(128, 3));
  EXPECT_EQ(gemm16_smem(point(64, 0, 1)), gemm_wgmma_smem(64, 4));
}

TEST(Gemm16Params, GridCoversCWithHalfTheColumnsPerBlockAtEpi3) {
  for (int load : {0, 1}) {
    const Dim3 g0 = gemm16_grid(point(128, 0, load), 300, 200, 0);
    EXPECT_EQ(g0.x, 2u);  // ceil(200 / 128)
    EXPECT_EQ(g0.y, 3u);  // ceil(300 / 128)
    EXPECT_EQ(gemm16_grid(point(64, 2, load), 128, 200, 0).x, 4u);
    EXPECT_EQ(gemm16_grid(point(64, 2, load), 128, 200, 0).y, 1u);
    EXPECT_EQ(gemm16_grid(point(128, 3, load), 1, 200, 0).x, 4u);  // 64 columns of gate and up per block
    EXPECT_EQ(gemm16_grid(point(64, 3, load), 129, 6144, 0).x, 192u);
    EXPECT_EQ(gemm16_grid(point(64, 3, load), 129, 6144, 0).y, 2u);
  }
}

// CLUSTER 2 (pairs of row tiles sharing B): the same columns per block, the row tiles rounded up
// to whole pairs (the second block of the last pair computes zeros and stores nothing).
TEST(Gemm16Params, PairsOfRowTilesRoundTheGridUp) {
  const Variant pair = make_variant(find_family("gemm", "wgmma"),
                                    {{"BLOCK", 384}, {"BN", 128}, {"STAGES", 4}, {"EPI", 0}, {"PIPE", 1}, {"LOAD", 1}, {"CLUSTER", 2}, {"SCHED", 0}},
                                    {DType::BF16}, "sm_90a");
  EXPECT_EQ(gemm16_grid(pair, 300, 200, 0).x, 2u);
  EXPECT_EQ(gemm16_grid(pair, 300, 200, 0).y, 4u);  // 3 row tiles: 2 pairs
  EXPECT_EQ(gemm16_grid(pair, 2048, 200, 0).y, 16u);
  EXPECT_EQ(gemm16_grid(pair, 1, 200, 0).y, 2u);
  EXPECT_NE(pair.source().find("__cluster_dims__(1, CLUSTER, 1)"), std::string::npos);
  EXPECT_EQ(point(128, 0, 1).source().find("__cluster_dims__"), std::string::npos);  // CLUSTER 1: no cluster
  // A pair copies B only through the copy engine.
  EXPECT_NE(find_family("gemm", "wgmma").constraint({{"BLOCK", 384}, {"BN", 128}, {"STAGES", 4}, {"EPI", 0}, {"PIPE", 1},
                                                      {"LOAD", 0}, {"CLUSTER", 2}, {"SCHED", 0}}),
            "");
}

// SCHED 1 (persistent blocks): one row of min(tiles, SMs) blocks, each walking the tiles; only at
// LOAD 1, CLUSTER 1 and BN up to 128.
TEST(Gemm16Params, PersistentBlocksAreAtMostOnePerSm) {
  const Family& f = find_family("gemm", "wgmma");
  auto at = [&](int bn, int epi) {
    return make_variant(f, {{"BLOCK", 384}, {"BN", bn}, {"STAGES", 4}, {"EPI", epi}, {"PIPE", 1}, {"LOAD", 1}, {"CLUSTER", 1}, {"SCHED", 1}},
                        {DType::BF16}, "sm_90a");
  };
  EXPECT_EQ(gemm16_grid(at(128, 0), 2048, 2048, 132).x, 132u);  // 256 tiles
  EXPECT_EQ(gemm16_grid(at(128, 0), 2048, 2048, 132).y, 1u);
  EXPECT_EQ(gemm16_grid(at(128, 0), 300, 200, 132).x, 6u);  // 3 x 2 tiles
  EXPECT_EQ(gemm16_grid(at(128, 3), 300, 200, 132).x, 12u);  // 64 columns of gate and up per tile
  EXPECT_EQ(gemm16_grid(at(64, 0), 129, 6144, 0).x, 192u);  // no count: a block per tile
  EXPECT_EQ(gemm16_smem(at(128, 0)), gemm_wgmma_smem(128, 4));
  for (const auto& [bn, load, cluster] : {std::tuple{256, 1, 1}, std::tuple{128, 0, 1}, std::tuple{128, 1, 2}})
    EXPECT_NE(f.constraint({{"BLOCK", 384}, {"BN", bn}, {"STAGES", 3}, {"EPI", 0}, {"PIPE", 0}, {"LOAD", load}, {"CLUSTER", cluster},
                            {"SCHED", 1}}),
              "")
        << bn << " " << load << " " << cluster;
}

// LOAD 1 encodes the maps through the driver: here, without one, a clear error; on a GPU machine
// maps that are not empty (their GPU use: CudaGemmWgmma).
TEST(Gemm16Params, TmaMapsNeedTheDriver) {
  alignas(16) static char a[16], b[16], c[16];
  std::string why;
  if (!driver_api(&why)) {
    try {
      gemm16_params(point(128, 0, 1), DType::BF16, a, b, c, 300, 200, 512, 512, 512, 200);
      ADD_FAILURE() << "LOAD 1 without a driver gave parameters";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("driver"), std::string::npos) << e.what();
    }
    return;
  }
  const GemmW16Params p = gemm16_params(point(128, 0, 1), DType::BF16, a, b, c, 300, 200, 512, 512, 512, 200);
  EXPECT_FALSE(all_zero(p.ta));
  EXPECT_FALSE(all_zero(p.tb));
  EXPECT_TRUE(all_zero(p.tb2));
}

}  // namespace
