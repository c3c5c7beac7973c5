// attn_prefill.pipe's query tiles (backends/cuda/fast/prefill_tiles.h): runs of one slot's
// consecutive rows, cut at the block's row count; every row in exactly one tile.
#include <gtest/gtest.h>

#include "backends/cuda/fast/prefill_tiles.h"

using ac::cuda::prefill_query_tiles;

TEST(PrefillTiles, RunsOfOneSlotCutAtTheTileSize) {
  EXPECT_EQ(prefill_query_tiles({0, 0, 0, 1, 1, 0}, 2), (std::vector<int32_t>{0, 2, 2, 1, 3, 2, 5, 1}));
  EXPECT_EQ(prefill_query_tiles({3}, 64), (std::vector<int32_t>{0, 1}));
  EXPECT_TRUE(prefill_query_tiles({}, 64).empty());
  // 129 rows of one slot at 64 rows per tile: 64 + 64 + 1; then 7 decode-like single rows of other slots.
  std::vector<int32_t> slots(129, 0);
  for (int32_t s = 1; s <= 7; ++s) slots.push_back(s);
  const auto t = prefill_query_tiles(slots, 64);
  ASSERT_EQ(t.size(), 2u * 10);
  EXPECT_EQ(std::vector<int32_t>(t.begin(), t.begin() + 6), (std::vector<int32_t>{0, 64, 64, 64, 128, 1}));
  int32_t covered = 0;
  for (size_t i = 0; i < t.size(); i += 2) {
    EXPECT_EQ(t[i], covered);
    EXPECT_GE(t[i + 1], 1);
    EXPECT_LE(t[i + 1], 64);
    for (int32_t r = t[i]; r < t[i] + t[i + 1]; ++r) EXPECT_EQ(slots[size_t(r)], slots[size_t(t[i])]);
    covered += t[i + 1];
  }
  EXPECT_EQ(covered, int32_t(slots.size()));
}
