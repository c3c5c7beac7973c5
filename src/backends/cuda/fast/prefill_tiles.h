#pragma once
// The query tiles of attn_prefill.pipe (attention/prefill_pipe.cuh): runs of consecutive step
// rows of one KV-cache slot, cut into tiles of at most `rows` rows, as [first row, count] pairs.
// A block takes one tile, so every row of a tile reads the same sequence's K/V. Host-only.
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

}  // namespace ac::cuda
