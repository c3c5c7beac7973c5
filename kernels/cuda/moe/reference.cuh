// Mixture-of-experts MLP, reference (graph op MoeMlp; its router linear runs before as a plain
// linear into [n, experts] logits). moe_route_ref picks each token's experts; moe_gate_up_ref
// computes silu(gate x) * (up x) for every (token, pick); moe_down_ref sums the picks' weighted
// down projections in increasing expert index, the order HF (and the CPU reference) adds them.
// Expert weights are reached through per-expert pointer tables: each expert is its own tensor.
#pragma once
#include "common/params.h"
#include "common/reduce.cuh"
#include "common/types.cuh"

// One block per token; one thread does the (small) routing, as tuning/reference_moe.cpp does:
// softmax in f32, the top_k largest probabilities (ties to the lower index), renormalised over
// the picks in pick order when asked; stored in increasing expert index.
// Grid: (n).
template <int BLOCK>
__device__ void moe_route_ref(const MoeRouteParams& p) {
  if (threadIdx.x != 0) return;
  const long long t = blockIdx.x;
  const float* l = p.logits + t * p.experts;
  float mx = AC_NEG_INF;
  for (long long e = 0; e < p.experts; ++e) mx = fmaxf(mx, l[e]);
  float sum = 0.0f;
  for (long long e = 0; e < p.experts; ++e) sum += expf(l[e] - mx);
  int* ids = p.ids + t * p.top_k;
  float* w = p.weights + t * p.top_k;
  float picked = 0.0f;
  for (long long j = 0; j < p.top_k; ++j) {  // j-th largest: strictly greater wins, so ties keep the lower index
    long long best = -1;
    float best_p = 0.0f;
    for (long long e = 0; e < p.experts; ++e) {
      bool taken = false;
      for (long long i = 0; i < j; ++i) taken = taken || ids[i] == e;
      const float pe = expf(l[e] - mx) / sum;
      if (!taken && (best < 0 || pe > best_p)) best = e, best_p = pe;
    }
    ids[j] = int(best);
    w[j] = best_p;
    picked += best_p;
  }
  if (p.renormalise)
    for (long long j = 0; j < p.top_k; ++j) w[j] /= picked;
  for (long long j = 1; j < p.top_k; ++j)  // insertion sort by expert index
    for (long long i = j; i > 0 && ids[i - 1] > ids[i]; --i) {
      const int id = ids[i]; ids[i] = ids[i - 1]; ids[i - 1] = id;
      const float v = w[i]; w[i] = w[i - 1]; w[i - 1] = v;
    }
}

// One warp per (token x pick, intermediate feature): act = silu(gate . x) * (up . x).
// Grid: (ceil(inter / (BLOCK/32)), n * top_k).
template <int BLOCK, typename W>
__device__ void moe_gate_up_ref(const MoeExpertParams& p) {
  const long long row = blockIdx.y, t = row / p.top_k;
  const long long f = (long long)blockIdx.x * (BLOCK / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (f >= p.inter) return;
  const int e = p.ids[row];
  const float* x = p.x + t * p.hidden;
  const W* gate = static_cast<const W*>(p.w1[e]) + f * p.hidden;
  const W* up = static_cast<const W*>(p.w2[e]) + f * p.hidden;
  float g = 0.0f, u = 0.0f;
  for (long long i = lane; i < p.hidden; i += 32) {
    g += x[i] * to_f32(gate[i]);
    u += x[i] * to_f32(up[i]);
  }
  g = warp_sum(g);
  u = warp_sum(u);
  if (lane == 0) p.out[row * p.inter + f] = g / (1.0f + expf(-g)) * u;
}

// One warp per (token, hidden output): out = sum over the picks, in increasing expert index, of
// weight * (down . act). Grid: (ceil(hidden / (BLOCK/32)), n).
template <int BLOCK, typename W>
__device__ void moe_down_ref(const MoeExpertParams& p) {
  const long long t = blockIdx.y;
  const long long o = (long long)blockIdx.x * (BLOCK / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (o >= p.hidden) return;
  float total = 0.0f;
  for (long long j = 0; j < p.top_k; ++j) {
    const long long row = t * p.top_k + j;
    const float* a = p.x + row * p.inter;
    const W* down = static_cast<const W*>(p.w1[p.ids[row]]) + o * p.inter;
    float acc = 0.0f;
    for (long long i = lane; i < p.inter; i += 32) acc += a[i] * to_f32(down[i]);
    total += p.weights[row] * warp_sum(acc);
  }
  if (lane == 0) p.out[t * p.hidden + o] = total;
}
