// mlp.fused: a layer's MLP (regions mlp_in + mlp_out) in one pass over the intermediate
// dimension, CHUNK columns at a time, so the [tokens, intermediate] gate, up and SwiGLU
// activations never exist: per chunk the gate and up rows (linear.blocked's tiles), SwiGLU in
// place, and the chunk's share of the down projection accumulated into a partial output.
#include <algorithm>
#include <vector>

#include "agentcompile/backends/cpu/cpu_families.h"
#include "agentcompile/core/error.h"
#include "backends/cpu/family_threads.h"
#include "backends/cpu/linear_tiles.h"

namespace ac::cpu {

void mlp_fused(const float* x, const float* residual, int64_t n, int64_t hidden, int64_t inter, const MlpWeights& w,
               float* out, const MlpFusedParams& p) {
  tiles::RangeFn fn = tiles::pick(p.tile.rows, p.tile.tokens, p.tile.k_unroll);
  if (fn == nullptr || p.threads < 1 || p.chunk < 1) throw_internal("mlp.fused", "parameters outside the instantiated domain");
  if (n <= 0) return;
  std::vector<float> h(size_t(n * hidden));  // the normed input, read by every chunk
  ref::rms_norm(x, n, hidden, w.norm, w.eps, h.data());
  const int64_t chunks = (inter + p.chunk - 1) / p.chunk;
  const int64_t workers = std::min<int64_t>(p.threads, chunks);
  // One partial output per worker (workers own disjoint chunks), summed below in worker order,
  // so a binding always adds in the same order.
  std::vector<float> partial(size_t(workers * n * hidden), 0.0f);
  run_threads(p.threads, chunks, [&](int worker, int64_t cb, int64_t ce) {
    float* acc = partial.data() + int64_t(worker) * n * hidden;
    std::vector<float> g(size_t(n * p.chunk)), u(g.size());  // [n, cw] of this chunk
    for (int64_t c = cb; c < ce; ++c) {
      const int64_t c0 = c * p.chunk, cw = std::min<int64_t>(p.chunk, inter - c0);
      fn({h.data(), n, hidden, w.gate + c0 * hidden, hidden, w.gate_bias ? w.gate_bias + c0 : nullptr, g.data(), cw, false},
         0, cw);
      fn({h.data(), n, hidden, w.up + c0 * hidden, hidden, w.up_bias ? w.up_bias + c0 : nullptr, u.data(), cw, false}, 0, cw);
      ref::swiglu(g.data(), u.data(), n * cw, g.data());
      // acc[t, o] += act[t, :] . down[o, c0 : c0 + cw]: a column block of down, rows inter apart.
      fn({g.data(), n, cw, w.down + c0, inter, nullptr, acc, hidden, true}, 0, hidden);
    }
  });
  for (int64_t t = 0; t < n; ++t)
    for (int64_t o = 0; o < hidden; ++o) {
      const int64_t i = t * hidden + o;
      float d = partial[size_t(i)];
      for (int64_t k = 1; k < workers; ++k) d += partial[size_t(k * n * hidden + i)];
      if (w.down_bias) d += w.down_bias[o];
      out[i] = residual[i] + d;
    }
}

}  // namespace ac::cpu
