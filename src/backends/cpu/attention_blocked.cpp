// attention.blocked: online softmax (running max and sum, rescaled per block) over KV blocks of
// BLOCK_KV positions, so no score vector of the whole context is kept; with GQA_SHARE the query
// heads of one KV head are handled together and every K/V row is read once per group.
#include <algorithm>
#include <cmath>
#include <vector>

#include "agentcompile/backends/cpu/cpu_families.h"
#include "agentcompile/core/error.h"
#include "backends/cpu/family_threads.h"

namespace ac::cpu {

void attention_blocked(const float* q, int64_t n, const int32_t* positions, const int32_t* slots, int64_t heads,
                       int64_t kv_heads, int64_t head_dim, const ref::KvCacheView& cache, float* out,
                       const AttentionBlockedParams& p, int64_t window) {
  if (p.block_kv < 1 || p.threads < 1 || kv_heads < 1 || heads % kv_heads != 0)
    throw_internal("attention.blocked", "bad parameters or head counts");
  const int64_t group = heads / kv_heads;
  const int64_t kv_dim = cache.kv_dim;
  const int64_t per_item = p.gqa_share ? group : 1;  // query heads one work item handles
  const int64_t items_per_token = heads / per_item;
  const int64_t block = p.block_kv;
  const float scale = 1.0f / std::sqrt(float(head_dim));
  run_threads(p.threads, n * items_per_token, [&](int, int64_t ib, int64_t ie) {
    std::vector<float> scores(static_cast<size_t>(per_item * block)), acc(static_cast<size_t>(per_item * head_dim));
    std::vector<float> m(static_cast<size_t>(per_item)), l(static_cast<size_t>(per_item));
    for (int64_t item = ib; item < ie; ++item) {
      const int64_t t = item / items_per_token, h0 = (item % items_per_token) * per_item, kvh = h0 / group;
      const int64_t first = ref::attention_start(positions[t], window);
      const int64_t len = int64_t(positions[t]) + 1;
      const float* kbase = cache.k + int64_t(slots[t]) * cache.max_seq * kv_dim + kvh * head_dim;
      const float* vbase = cache.v + int64_t(slots[t]) * cache.max_seq * kv_dim + kvh * head_dim;
      const float* qt = q + (t * heads + h0) * head_dim;
      std::fill(m.begin(), m.end(), -INFINITY);
      std::fill(l.begin(), l.end(), 0.0f);
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t p0 = first; p0 < len; p0 += block) {
        const int64_t pn = std::min(block, len - p0);
        for (int64_t i = 0; i < pn; ++i) {  // each K row once for every head of the item
          const float* krow = kbase + (p0 + i) * kv_dim;
          for (int64_t j = 0; j < per_item; ++j) scores[size_t(j * block + i)] = ref::dot(qt + j * head_dim, krow, head_dim) * scale;
        }
        for (int64_t j = 0; j < per_item; ++j) {
          float* s = scores.data() + j * block;
          float bm = -INFINITY;
          for (int64_t i = 0; i < pn; ++i) bm = std::max(bm, s[i]);
          const float new_m = std::max(m[size_t(j)], bm);
          const float corr = std::exp(m[size_t(j)] - new_m);  // 0 on the first block (m = -inf)
          float sum = 0.0f;
          for (int64_t i = 0; i < pn; ++i) sum += (s[i] = std::exp(s[i] - new_m));
          l[size_t(j)] = l[size_t(j)] * corr + sum;
          m[size_t(j)] = new_m;
          float* a = acc.data() + j * head_dim;
          for (int64_t d = 0; d < head_dim; ++d) a[d] *= corr;
        }
        for (int64_t i = 0; i < pn; ++i) {  // each V row once for every head of the item
          const float* vrow = vbase + (p0 + i) * kv_dim;
          for (int64_t j = 0; j < per_item; ++j) {
            const float wgt = scores[size_t(j * block + i)];
            float* a = acc.data() + j * head_dim;
            for (int64_t d = 0; d < head_dim; ++d) a[d] += wgt * vrow[d];
          }
        }
      }
      for (int64_t j = 0; j < per_item; ++j) {
        float* o = out + (t * heads + h0 + j) * head_dim;
        const float inv = 1.0f / l[size_t(j)];
        for (int64_t d = 0; d < head_dim; ++d) o[d] = acc[size_t(j * head_dim + d)] * inv;
      }
    }
  });
}

}  // namespace ac::cpu
