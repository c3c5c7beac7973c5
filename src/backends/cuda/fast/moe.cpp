// A sparse (mixture-of-experts) layer's MLP on the fast path, for decode and prompt steps alike:
// the post-attention RMSNorm and the router on the reference kernels (f32: the top-k is a
// discrete choice, kept on the CPU reference's side of near ties), routing on the device
// (moe_route, no host round trip, so decode steps stay one CUDA graph), then every token's picked
// experts in one launch per projection (moe/gemv.cuh), the down projection adding into the
// residual stream.
#include "backends/cuda/fast/executor.h"
#include "backends/cuda/fast/variants.h"

#include <algorithm>

namespace ac::cuda {

namespace {

// moe_gate_up.gemv, then moe_down.gemv, at cfg's point.
std::vector<Variant> moe_gemv_variants(const FastConfig& cfg, DType wt, const std::string& arch) {
  std::vector<Variant> v;
  for (const char* op : {"moe_gate_up", "moe_down"})
    v.push_back(make_variant(find_family(op, "gemv"), {{"BLOCK", cfg.moe_block}, {"ROWS", cfg.moe_rows}}, {wt}, arch));
  return v;
}

}  // namespace

std::vector<Variant> moe_variants(const FastConfig& cfg, DType wt, const std::string& arch) {
  std::vector<Variant> v = moe_gemv_variants(cfg, wt, arch);
  for (const char* op : {"rms_norm", "linear"}) v.push_back(make_variant(find_family(op, "ref"), {{"BLOCK", int(kRefBlock)}}, {wt}, arch));
  v.push_back(make_variant(find_family("moe_route", "ref"), {{"BLOCK", int(kRefBlock)}}, {}, arch));
  return v;
}

std::string moe_unsupported(const ModelConfig& c) {
  if (!c.is_moe()) return "";
  if (c.hidden_size % 8 || c.moe.expert_intermediate % 8) return "expert dimensions not multiples of 8";
  if (c.hidden_size * 4 > kMaxDynamicSmem || c.moe.experts_per_token * c.moe.expert_intermediate * 4 > kMaxDynamicSmem)
    return "a token's experts' activations do not fit the shared memory";
  return "";
}

void FastExecutor::moe_mlp(const LayerOps& L, size_t layer, long long n) {
  const ModelConfig& c = g_.config;
  const Op& op = *L.moe;
  const long long E = op.experts, k = op.top_k, F = op.expert_inter, H = c.hidden_size;
  const double es = double(dtype_size(wt_));
  RmsNormParams np{resid_.as<float>(), wptr(L.post_norm, 0), h_.as<float>(), n, H, float(c.rms_norm_eps)};
  launch(ref("rms_norm", {}, {wt_}), Dim3{unsigned(n)}, kRefBlock, 0, &np);
  mark("moe_norm", double(n * H) * 8);
  LinearParams lp{h_.as<float>(), nullptr, wptr(L.moe, 0), nullptr, moe_logits_.as<float>(), n, H, E};
  launch(ref("linear", {}, {wt_}), Dim3{unsigned((E + kRefBlock / 32 - 1) / (kRefBlock / 32)), unsigned(n)}, kRefBlock, 0, &lp);
  mark("moe_router", double(E * H) * es);
  MoeRouteParams rp{moe_logits_.as<float>(), moe_ids_.as<int>(), moe_weights_.as<float>(), n, E, k, op.norm_topk ? 1 : 0};
  launch(ref("moe_route", {}), Dim3{unsigned(n)}, kRefBlock, 0, &rp);
  mark("moe_route", 0);
  const std::vector<Variant> v = moe_gemv_variants(cfg_, wt_, arch_);
  const unsigned per_block = unsigned(cfg_.moe_block / 32 * cfg_.moe_rows);
  MoeGemvParams mp{h_.as<float>(), moe_ids_.as<int>(), moe_weights_.as<float>(),
                   reinterpret_cast<const void* const*>(fw_->moe_table.at(layer).ptr()), moe_act_.as<float>(), resid_.as<float>(),
                   n, k, E, H, F};
  // The gate/up GEMV has one grid row per (token, pick): a long prompt's tokens go in launches of
  // at most 65535 / k of them (the grid's y limit), each chunk's down GEMV after its gate/up.
  const long long chunk = 65535 / k;
  for (long long t0 = 0; t0 < n; t0 += chunk) {
    const long long rows = std::min(chunk, n - t0);
    MoeGemvParams part = mp;
    part.x += t0 * H;
    part.ids += t0 * k;
    part.weights += t0 * k;
    part.act += t0 * k * F;
    part.out += t0 * H;
    part.n = rows;
    // bytes: each token's picks (a batch's may repeat experts)
    launch(load_kernel(v[0]), Dim3{unsigned((F + per_block - 1) / per_block), unsigned(rows * k)}, unsigned(cfg_.moe_block),
           size_t(H) * 4, &part);
    mark("moe_gate_up", double(rows * k * 2 * F * H) * es);
    launch(load_kernel(v[1]), Dim3{unsigned((H + per_block - 1) / per_block), unsigned(rows)}, unsigned(cfg_.moe_block),
           size_t(k * F) * 4, &part);
    mark("moe_down", double(rows * k * F * H) * es);
  }
}

}  // namespace ac::cuda
