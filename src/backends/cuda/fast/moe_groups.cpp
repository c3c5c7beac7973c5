#include "backends/cuda/fast/moe_groups.h"

#include <string>

#include "agentcompile/core/error.h"

namespace ac::cuda {

// A counting sort: stable, so each expert's picks keep the tokens' order.
ExpertGroups group_by_expert(const int32_t* ids, long long n, long long top_k, long long experts) {
  ExpertGroups g;
  const size_t picks = size_t(n * top_k);
  g.count.assign(size_t(experts), 0);
  for (size_t i = 0; i < picks; ++i) {
    if (ids[i] < 0 || ids[i] >= experts)
      throw_internal("moe", "pick " + std::to_string(i) + " names expert " + std::to_string(ids[i]) + " of " +
                                std::to_string(experts));
    ++g.count[size_t(ids[i])];
  }
  g.start.assign(size_t(experts), 0);
  for (long long e = 1; e < experts; ++e) g.start[size_t(e)] = g.start[size_t(e - 1)] + g.count[size_t(e - 1)];
  std::vector<int32_t> next = g.start;
  g.rows.assign(picks, 0);
  g.pos.assign(picks, 0);
  for (size_t i = 0; i < picks; ++i) {
    const int32_t r = next[size_t(ids[i])]++;
    g.rows[size_t(r)] = int32_t(i);
    g.pos[i] = r;
  }
  return g;
}

}  // namespace ac::cuda
