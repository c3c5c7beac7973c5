#pragma once
// The query tiles of attn_prefill.pipe (attention/prefill_pipe.cuh): runs of consecutive step
// rows of one KV-cache slot, cut into tiles of at most `rows` rows, as [first row, count] pairs.
// A block takes one tile (or two in turn), so every row of a tile reads the same sequence's K/V.
// Host-only.
#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

namespace ac::cuda {

inline std::vector<int32_t> prefill_query_tiles(const std::vector<int32_t>& slots, int32_t rows) {
  std::vector<int32_t> tiles;
  const int32_t n = int32_t(slots.size());
  for (int32_t i = 0; i < n;) {
    int32_t j = i + 1;
    while (j < n && j - i < rows && slots[size_t(j)] == slots[size_t(i)]) ++j;
    tiles.push_back(i);
    tiles.push_back(j - i);
    i = j;
  }
  return tiles;
}

// The list for blocks that run two tiles each (a PAIR 1 attention variant): a causal tile's cost is the
// positions its rows attend, so a prompt's last tiles cost many times its first; a block that runs
// the costliest tile left and then the cheapest evens the blocks out, so the last wave is not a few
// long tiles on otherwise idle SMs. Entries 2x and 2x + 1 are block x's; a tile of 0 rows pads an
// odd count. Pairs come in ascending cost: the kernel launches the list's end first.
inline std::vector<int32_t> pair_prefill_tiles(const std::vector<int32_t>& tiles, const std::vector<int32_t>& positions) {
  const size_t n = tiles.size() / 2;
  std::vector<double> cost(n, 0.0);
  for (size_t i = 0; i < n; ++i)
    for (int32_t r = tiles[2 * i]; r < tiles[2 * i] + tiles[2 * i + 1]; ++r) cost[i] += double(positions[size_t(r)]) + 1.0;
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return cost[a] > cost[b]; });
  std::vector<std::array<size_t, 2>> pairs;  // (costlier, cheaper or n: none)
  for (size_t lo = 0, hi = n; lo < hi; ++lo) pairs.push_back({order[lo], --hi > lo ? order[hi] : n});
  auto pair_cost = [&](const std::array<size_t, 2>& q) { return cost[q[0]] + (q[1] < n ? cost[q[1]] : 0.0); };
  std::stable_sort(pairs.begin(), pairs.end(), [&](const auto& a, const auto& b) { return pair_cost(a) < pair_cost(b); });
  std::vector<int32_t> out;
  for (const auto& q : pairs)
    for (size_t i : q) {
      out.push_back(i < n ? tiles[2 * i] : 0);
      out.push_back(i < n ? tiles[2 * i + 1] : 0);
    }
  return out;
}

// The step's tile list as a prompt attention variant with `rows` rows per tile reads it. For a
// PAIR 1 variant (`pair`) the tiles are paired only where the step has more blocks than two per SM
// (`heads` blocks per tile, `sms` SMs): a short prompt's few blocks would otherwise halve in number
// and double in length with no last wave to even out, so there each tile gets a padding partner
// and runs alone, as at PAIR 0.
inline std::vector<int32_t> prefill_tile_list(const std::vector<int32_t>& slots, const std::vector<int32_t>& positions,
                                              int32_t rows, bool pair, long long heads, int sms) {
  std::vector<int32_t> tiles = prefill_query_tiles(slots, rows);
  if (!pair) return tiles;
  if ((long long)(tiles.size() / 2) * heads > 2LL * sms) return pair_prefill_tiles(tiles, positions);
  std::vector<int32_t> alone;
  for (size_t i = 0; i < tiles.size(); i += 2) alone.insert(alone.end(), {tiles[i], tiles[i + 1], 0, 0});
  return alone;
}

// The attention grid's x for a tile list: its tiles, or its pairs for a PAIR 1 variant.
inline long long prefill_tile_blocks(const std::vector<int32_t>& list, bool pair) {
  return (long long)list.size() / (pair ? 4 : 2);
}

}  // namespace ac::cuda
