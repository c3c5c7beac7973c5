// The mixture-of-experts reference (graph op MoeMlp), as transformers' Qwen3MoeSparseMoeBlock and
// MixtralSparseMoeBlock compute it: router, f32 softmax, top-k, optional renormalisation, the
// picked SwiGLU experts weighted and added in expert order.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "agentcompile/core/threads.h"
#include "agentcompile/tuning/reference_ops.h"

namespace ac::ref {

void moe_route(const float* logits, int64_t experts, int64_t top_k, bool renormalise, int32_t* ids, float* weights) {
  std::vector<float> p(static_cast<size_t>(experts));
  float mx = -INFINITY;
  for (int64_t e = 0; e < experts; ++e) mx = std::max(mx, logits[e]);
  float sum = 0.0f;
  for (int64_t e = 0; e < experts; ++e) sum += (p[size_t(e)] = std::exp(logits[e] - mx));
  for (float& v : p) v /= sum;
  // torch.topk on the CPU orders equal values only under torch.use_deterministic_algorithms (lower
  // index first); otherwise std::nth_element leaves them in no specified order. Equal f32
  // probabilities need bitwise-equal router logits, so HF's pick among ties is arbitrary only for
  // degenerate inputs; we always take the lower index, a stable sort on descending probability.
  std::vector<int32_t> order(static_cast<size_t>(experts));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return p[size_t(a)] > p[size_t(b)]; });
  float picked = 0.0f;
  for (int64_t j = 0; j < top_k; ++j) {
    ids[j] = order[size_t(j)];
    weights[j] = p[size_t(order[size_t(j)])];
    picked += weights[j];
  }
  if (renormalise)
    for (int64_t j = 0; j < top_k; ++j) weights[j] /= picked;
}

void moe_mlp(const float* x, int64_t n, int64_t hidden, const float* router, const std::vector<ExpertView>& experts,
             int64_t inter, int64_t top_k, bool renormalise, float* out, int32_t* ids_out) {
  const int64_t num = int64_t(experts.size());
  parallel_for(size_t(n), 1, [&](size_t tb, size_t te) {
    std::vector<float> logits(static_cast<size_t>(num)), w(static_cast<size_t>(top_k));
    std::vector<float> gate(static_cast<size_t>(inter)), up(static_cast<size_t>(inter));
    std::vector<int32_t> ids(static_cast<size_t>(top_k));
    for (size_t t = tb; t < te; ++t) {
      const float* xt = x + int64_t(t) * hidden;
      float* ot = out + int64_t(t) * hidden;
      for (int64_t e = 0; e < num; ++e) logits[size_t(e)] = dot(xt, router + e * hidden, hidden);
      moe_route(logits.data(), num, top_k, renormalise, ids.data(), w.data());
      if (ids_out) std::copy(ids.begin(), ids.end(), ids_out + int64_t(t) * top_k);
      std::vector<size_t> by_expert(static_cast<size_t>(top_k));
      std::iota(by_expert.begin(), by_expert.end(), size_t(0));
      std::sort(by_expert.begin(), by_expert.end(), [&](size_t a, size_t b) { return ids[a] < ids[b]; });
      std::fill_n(ot, hidden, 0.0f);
      for (size_t j : by_expert) {
        const ExpertView& ex = experts[size_t(ids[j])];
        for (int64_t i = 0; i < inter; ++i) {
          gate[size_t(i)] = dot(xt, ex.gate + i * hidden, hidden);
          up[size_t(i)] = dot(xt, ex.up + i * hidden, hidden);
        }
        swiglu(gate.data(), up.data(), inter, gate.data());
        for (int64_t o = 0; o < hidden; ++o) ot[o] += w[j] * dot(gate.data(), ex.down + o * inter, inter);
      }
    }
  });
}

}  // namespace ac::ref
