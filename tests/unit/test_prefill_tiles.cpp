// attn_prefill.pipe's query tiles (backends/cuda/fast/prefill_tiles.h): runs of one slot's
// consecutive rows, cut at the block's row count; every row in exactly one tile.
#include <gtest/gtest.h>

#include <algorithm>

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

// Paired tiles (prefill_flash_pair): every tile in exactly one pair, an odd count padded with one
// 0-row entry, the costliest tile with the cheapest, pairs in ascending cost (the kernel launches
// the list's end first). A 2048-token prompt's 32 tiles pair into 16 of equal cost.
TEST(PrefillTiles, PairsEvenTheCausalCost) {
  using ac::cuda::pair_prefill_tiles;
  std::vector<int32_t> slots(2048, 0), positions(2048);
  for (int32_t i = 0; i < 2048; ++i) positions[size_t(i)] = i;
  const auto tiles = prefill_query_tiles(slots, 64);
  const auto paired = pair_prefill_tiles(tiles, positions);
  ASSERT_EQ(paired.size(), tiles.size());
  auto cost = [&](size_t e) {  // entry e's attended positions
    double c = 0;
    for (int32_t r = paired[2 * e]; r < paired[2 * e] + paired[2 * e + 1]; ++r) c += positions[size_t(r)] + 1.0;
    return c;
  };
  std::vector<int> seen(2048, 0);
  for (size_t e = 0; e < paired.size() / 2; ++e)
    for (int32_t r = paired[2 * e]; r < paired[2 * e] + paired[2 * e + 1]; ++r) ++seen[size_t(r)];
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), 2048);
  const double first = cost(0) + cost(1);
  for (size_t b = 0; b < paired.size() / 4; ++b) EXPECT_EQ(cost(2 * b) + cost(2 * b + 1), first) << "pair " << b;
  EXPECT_EQ(std::vector<int32_t>(paired.begin(), paired.begin() + 4), (std::vector<int32_t>{1984, 64, 0, 64}));  // ties keep their order

  // Three sequences of ragged lengths (two continuing a cached prefix): five tiles, a padding entry.
  std::vector<int32_t> s2, p2;
  for (int32_t i = 0; i < 100; ++i) s2.push_back(0), p2.push_back(i);     // tiles [0, 64), [64, 100)
  for (int32_t i = 500; i < 530; ++i) s2.push_back(1), p2.push_back(i);   // one costly tile of 30 rows
  for (int32_t i = 10; i < 90; ++i) s2.push_back(2), p2.push_back(i);     // [130, 194), [194, 210)
  const auto t2 = prefill_query_tiles(s2, 64);
  ASSERT_EQ(t2.size(), 10u);
  const auto q2 = pair_prefill_tiles(t2, p2);
  ASSERT_EQ(q2.size(), 12u);
  // By cost: [100, 130) 15465, [64, 100) 2970, [130, 194) 2720, [0, 64) 2080, [194, 210) 1320; pairs
  // (the costliest with the cheapest) 16785, 5050 and 2720 alone, listed cheapest first.
  EXPECT_EQ(q2, (std::vector<int32_t>{130, 64, 0, 0, 64, 36, 0, 64, 100, 30, 194, 16}));
  EXPECT_TRUE(pair_prefill_tiles({}, {}).empty());
  EXPECT_EQ(ac::cuda::prefill_tile_list({0, 0}, {0, 1}, 64, false, 16, 132), (std::vector<int32_t>{0, 2}));
  // Paired only past two blocks per SM: a 2048-token prompt of 16 heads (512 blocks unpaired) on
  // 132 SMs pairs; 128 tokens (32 blocks) keep one tile per block, each with a padding partner.
  EXPECT_EQ(ac::cuda::prefill_tile_list(slots, positions, 64, true, 16, 132), paired);
  const std::vector<int32_t> s128(128, 0), p128(positions.begin(), positions.begin() + 128);
  EXPECT_EQ(ac::cuda::prefill_tile_list(s128, p128, 64, true, 16, 132), (std::vector<int32_t>{0, 64, 0, 0, 64, 64, 0, 0}));
  EXPECT_EQ(ac::cuda::prefill_tile_list(s128, p128, 64, true, 16, 15), pair_prefill_tiles(prefill_query_tiles(s128, 64), p128));
  EXPECT_EQ(ac::cuda::prefill_tile_blocks(paired, true), 16);  // the grid's x: pairs, or tiles
  EXPECT_EQ(ac::cuda::prefill_tile_blocks(tiles, false), 32);
}
