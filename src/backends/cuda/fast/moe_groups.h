#pragma once
// A prompt step's picks grouped by expert, for the grouped expert GEMMs (moe.cpp): plain data, no
// CUDA, so the grouping is tested on the CPU.
#include <cstdint>
#include <vector>

namespace ac::cuda {

struct ExpertGroups {
  // rows[r]: the pick (token * top_k + j) at sorted position r; picks sorted by expert, then by
  // token and pick (the order they come in).
  std::vector<int32_t> rows;
  // pos[token * top_k + j]: that pick's sorted position (rows inverted).
  std::vector<int32_t> pos;
  // Per expert: how many picks it has, and where its run of sorted positions starts.
  std::vector<int32_t> count, start;
};

// ids: [n, top_k] expert indices in [0, experts). Throws Internal on an index outside it (the
// router's output: a bug, not input).
ExpertGroups group_by_expert(const int32_t* ids, long long n, long long top_k, long long experts);

}  // namespace ac::cuda
