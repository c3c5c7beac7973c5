// The decode GEMVs' points across batch templates: a point the search can choose at a batch runs
// as written there (the executor binds it unchanged), and a point chosen at batch 1 is adapted to
// a point the family allows at every larger template. Before the family's constraint said the
// executor's register budget, the search at batch > 1 timed points the executor rewrote.
#ifdef AGENTCOMPILE_HAVE_CUDA
#include <gtest/gtest.h>

#include "backends/cuda/fast_executor.h"

namespace ac::cuda {
namespace {

// Every point of a family's tuning parameters (BATCH and EPI bound), as a value map.
std::vector<std::map<std::string, int>> points(const Family& f, int batch, int epi, int terms) {
  std::vector<std::map<std::string, int>> out = {{{"BATCH", batch}, {"EPI", epi}}};
  if (terms) out.front()["TERMS"] = terms;
  for (const ParamDomain& d : f.params) {
    if (d.name == "BATCH" || d.name == "EPI" || d.name == "TERMS") continue;
    std::vector<std::map<std::string, int>> next;
    for (const auto& p : out)
      for (int x : d.values) {
        next.push_back(p);
        next.back()[d.name] = x;
      }
    out = std::move(next);
  }
  return out;
}

TEST(GemvBatchPoints, APointValidAtItsBatchRunsAsWritten) {
  const Family& f = find_family("gemv", "fused");
  size_t checked = 0;
  for (int batch : {1, 2, 4, 8})
    for (int epi : {kEpiStore, kEpiResidual, kEpiSwiglu, kEpiArgmax})
      for (const auto& p : points(f, batch, epi, 0)) {
        if (!f.constraint(p).empty()) continue;
        const GemvChoice ch{p.at("BLOCK"), p.at("ROWS"), p.at("UNROLL"), p.at("SPLITK")};
        const Variant v = fast_gemv_variant(ch, epi, batch, DType::F16, "sm_90");
        EXPECT_EQ(v.values, p) << v.name();
        ++checked;
      }
  EXPECT_GT(checked, 100u);
}

TEST(GemvBatchPoints, ABatchOnePointIsAdaptedToAValidPointAtEveryBatch) {
  const Family& f = find_family("gemv", "fused");
  for (int epi : {kEpiStore, kEpiResidual, kEpiSwiglu, kEpiArgmax})
    for (const auto& p : points(f, 1, epi, 0)) {
      if (!f.constraint(p).empty()) continue;
      const GemvChoice ch{p.at("BLOCK"), p.at("ROWS"), p.at("UNROLL"), p.at("SPLITK")};
      for (int batch : {2, 4, 8}) {
        const Variant v = fast_gemv_variant(ch, epi, batch, DType::BF16, "sm_90");
        EXPECT_EQ(f.constraint(v.values), "") << v.name();
        EXPECT_EQ(v.param("BLOCK"), ch.block);
        EXPECT_EQ(v.param("SPLITK"), ch.splitk);
        EXPECT_LE(v.param("ROWS"), ch.rows);
        EXPECT_LE(v.param("UNROLL"), ch.unroll);
      }
    }
}

TEST(GemvBatchPoints, MmaPointsRunAsWrittenAtEveryBatch) {
  const Family& f = find_family("gemv", "mma");
  const int terms = FastConfig{}.mma_terms;
  size_t checked = 0;
  for (int batch : {1, 2, 4, 8})
    for (int epi : {kEpiStore, kEpiResidual, kEpiSwiglu, kEpiArgmax})
      for (const auto& p : points(f, batch, epi, terms)) {
        if (!f.constraint(p).empty()) continue;
        const MmaChoice ch{p.at("BLOCK"), p.at("MT"), p.at("UNROLL"), p.at("SPLITK")};
        const std::optional<Variant> v = fast_mma_variant(ch, terms, epi, batch, 2048, DType::BF16, "sm_90");
        ASSERT_TRUE(v);
        EXPECT_EQ(v->values, p) << v->name();
        ++checked;
      }
  EXPECT_GT(checked, 100u);
}

}  // namespace
}  // namespace ac::cuda
#endif
