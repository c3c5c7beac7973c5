// linear.blocked: register-tiled x . w^T (the tiles are in linear_tiles.h, shared with
// mlp.fused), THREADS threads over blocks of ROWS output rows.
#include <algorithm>

#include "agentcompile/backends/cpu/cpu_families.h"
#include "agentcompile/core/error.h"
#include "backends/cpu/family_threads.h"
#include "backends/cpu/linear_tiles.h"

namespace ac::cpu {

void linear_blocked(const float* x, int64_t n, int64_t in, const float* w, const float* bias, int64_t out_dim,
                    float* out, const LinearBlockedParams& p) {
  tiles::RangeFn fn = tiles::pick(p.rows, p.tokens, p.k_unroll);
  if (fn == nullptr || p.threads < 1) throw_internal("linear.blocked", "parameters outside the instantiated domain");
  const tiles::LinearArgs a{x, n, in, w, in, bias, out, out_dim, false};
  const int64_t blocks = (out_dim + p.rows - 1) / p.rows;
  run_threads(p.threads, blocks, [&](int, int64_t b, int64_t e) {
    fn(a, b * p.rows, std::min(out_dim, e * p.rows));
  });
}

}  // namespace ac::cpu
