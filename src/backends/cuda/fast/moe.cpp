// A sparse (mixture-of-experts) layer's MLP on the fast path, for decode and prompt steps alike:
// the post-attention RMSNorm, the router's logits (f32 like the reference kernels: the top-k is a
// discrete choice, kept on the CPU reference's side of near ties) and the picks in one block per
// token (moe_router.fused; moe_router_split=1: the logits over blocks of experts, then the picks
// by a warp per token; 2: by the last of each token's blocks), on the device with no host round
// trip, so decode steps stay one CUDA graph; then every token's picked
// experts in one launch per projection (moe/gemv.cuh), the down projection adding into the
// residual stream.
#include "backends/cuda/fast/executor.h"
#include "backends/cuda/fast/moe_groups.h"
#include "backends/cuda/fast/variants.h"

#include <algorithm>

namespace ac::cuda {

namespace {

std::map<std::string, int> moe_gemv_point(const FastConfig& cfg) {
  return {{"BLOCK", cfg.moe_block}, {"ROWS", cfg.moe_rows}, {"ILP", cfg.moe_ilp}, {"DIRECT", cfg.moe_direct}};
}

// moe_gate_up.gemv, then moe_down.gemv, at cfg's point.
std::vector<Variant> moe_gemv_variants(const FastConfig& cfg, DType wt, const std::string& arch) {
  return {moe_gate_up_variant(cfg, wt, arch), make_variant(find_family("moe_down", "gemv"), moe_gemv_point(cfg), {wt}, arch)};
}
// moe_down.split at the same block and rows (decode steps, moe_down_split).
Variant moe_down_split_variant(const FastConfig& cfg, DType wt, const std::string& arch) {
  return make_variant(find_family("moe_down", "split"), {{"BLOCK", cfg.moe_block}, {"ROWS", cfg.moe_rows}, {"ILP", cfg.moe_ilp}},
                      {wt}, arch);
}

// One block of 16 warps per token, or eight experts per block (moe/router.cuh), which pick the
// experts themselves at moe_router_split 2; four tokens per block of the routing (moe/route.cuh).
Variant moe_router_variant(const FastConfig& cfg, DType wt, const std::string& arch) {
  return cfg.moe_router_split
             ? make_variant(find_family("moe_router", "logits"),
                            {{"BLOCK", 256},
                             {"PICK", cfg.moe_router_split == 2 ? 1 + cfg.moe_pick_redux : 0},
                             {"ILP", cfg.moe_router_ilp},
                             {"NORM", cfg.moe_router_norm}},
                            {wt}, arch)
             : make_variant(find_family("moe_router", "fused"), {{"BLOCK", 512}}, {wt}, arch);
}
Variant moe_route_variant(const std::string& arch) {
  return make_variant(find_family("moe_route", "warp"), {{"BLOCK", 128}}, {}, arch);
}
Variant moe_count_variant(const std::string& arch) {
  return make_variant(find_family("moe_count", "union"), {{"BLOCK", 128}}, {}, arch);
}

// The grouped path (moe_prefill_grouped): prompt steps of at least this many tokens, in chunks of
// at most kGroupedChunk tokens (its buffers' size).
constexpr long long kGroupedFromTokens = 64, kGroupedChunk = 1024;

Variant moe_gather_variant(DType wt, const std::string& arch) {
  return make_variant(find_family("moe_gather", "rows"), {{"BLOCK", 256}}, {wt}, arch);
}
Variant moe_combine_variant(DType wt, const std::string& arch) {
  return make_variant(find_family("moe_combine", "rows"), {{"BLOCK", 256}}, {wt}, arch);
}

}  // namespace

Variant moe_gate_up_variant(const FastConfig& cfg, DType wt, const std::string& arch) {
  std::map<std::string, int> point = moe_gemv_point(cfg);
  point["OCC"] = cfg.moe_gate_up_occ && !cfg.moe_ilp && cfg.moe_rows == 1;  // other points spill under the bound
  return make_variant(find_family("moe_gate_up", "gemv"), point, {wt}, arch);
}

std::vector<Variant> moe_variants(const FastConfig& cfg, DType wt, const std::string& arch) {
  std::vector<Variant> v = moe_gemv_variants(cfg, wt, arch);
  v.push_back(moe_router_variant(cfg, wt, arch));
  if (cfg.moe_router_split == 1) v.push_back(moe_route_variant(arch));
  if (cfg.moe_down_split) v.push_back(moe_down_split_variant(cfg, wt, arch));
  v.push_back(moe_count_variant(arch));  // while counting the experts decode steps read
  if (cfg.moe_prefill_grouped) {
    v.push_back(moe_gather_variant(wt, arch));
    v.push_back(moe_combine_variant(wt, arch));
    v.push_back(prefill_swiglu_variant(wt, arch));
  }
  return v;
}

std::string moe_unsupported(const ModelConfig& c) {
  if (!c.is_moe()) return "";
  if (c.hidden_size % 8 || c.moe.expert_intermediate % 8) return "expert dimensions not multiples of 8";
  if (c.moe.experts_per_token > 32 || c.moe.experts > 32 * 32) return "more than 32 experts per token or 1024 experts";
  if ((c.hidden_size + c.moe.experts) * 4 > kMaxDynamicSmem || c.moe.experts_per_token * c.moe.expert_intermediate * 4 > kMaxDynamicSmem)
    return "a token's experts' activations do not fit the shared memory";
  return "";
}

void FastExecutor::moe_mlp(const LayerOps& L, size_t layer, long long n, bool decode) {
  const ModelConfig& c = g_.config;
  const Op& op = *L.moe;
  const long long E = op.experts, k = op.top_k, F = op.expert_inter, H = c.hidden_size;
  const double es = double(dtype_size(wt_));
  const Variant router = moe_router_variant(cfg_, wt_, arch_);
  // Decode steps may launch the MoE kernels programmatically dependent (each waits for the one
  // before, the router after asking L2 for its weights): moe_pdl.
  const bool pdl = decode && cfg_.pdl && cfg_.moe_pdl;
  MoeRouterParams lp{resid_.as<float>(), wptr(L.post_norm, 0), wptr(L.moe, 0), h_.as<float>(), moe_logits_.as<float>(),
                     moe_ids_.as<int>(), moe_weights_.as<float>(), n, H, E, k, float(c.rms_norm_eps), op.norm_topk ? 1 : 0,
                     pdl ? 1 : 0, moe_done_.as<int>(), pdl && cfg_.moe_early ? 1 : 0};
  // fused: one block per token, the logits in shared memory too; split: blocks of experts per token
  // (which pick, the logits in shared memory too, at moe_router_split 2).
  const bool split = cfg_.moe_router_split != 0, picks = cfg_.moe_router_split != 1;
  const long long experts_per_block = router.threads() / 32;
  const Dim3 grid = split ? Dim3{unsigned((E + experts_per_block - 1) / experts_per_block), unsigned(n)} : Dim3{unsigned(n)};
  launch(load_kernel(router), grid, unsigned(router.threads()), size_t(picks ? H + E : H) * 4, &lp, pdl);
  mark("moe_router", double(n * H) * 8 + double(E * H) * es);  // rows read and written, the router's weights
  if (!picks) {
    const Variant route = moe_route_variant(arch_);
    const long long tokens_per_block = route.threads() / 32;
    MoeRouteParams rp{moe_logits_.as<float>(), moe_ids_.as<int>(), moe_weights_.as<float>(), n, E, k, op.norm_topk ? 1 : 0};
    launch(load_kernel(route), Dim3{unsigned((n + tokens_per_block - 1) / tokens_per_block)}, unsigned(route.threads()), 0, &rp,
           pdl);
    mark("moe_route", 0);
  }
  if (decode && count_experts_) {  // Executor::count_expert_reads
    MoeCountParams cp{moe_ids_.as<int>(), expert_counter_.as<unsigned long long>(), n * k};
    launch(load_kernel(moe_count_variant(arch_)), Dim3{1}, 128, 0, &cp);
    mark("moe_count", 0);
  }
  if (cfg_.moe_prefill_grouped && n >= kGroupedFromTokens) {
    for (long long t0 = 0; t0 < n; t0 += kGroupedChunk) moe_grouped(layer, t0, std::min(kGroupedChunk, n - t0));
    return;
  }
  const std::vector<Variant> v = moe_gemv_variants(cfg_, wt_, arch_);
  const unsigned per_block = unsigned(cfg_.moe_block / 32 * cfg_.moe_rows);
  MoeGemvParams mp{h_.as<float>(), moe_ids_.as<int>(), moe_weights_.as<float>(),
                   reinterpret_cast<const void* const*>(fw_->moe_table.at(layer).ptr()), moe_act_.as<float>(), resid_.as<float>(),
                   n, k, E, H, F, nullptr, nullptr, pdl && cfg_.moe_early ? 1 : 0};
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
           cfg_.moe_direct ? 0 : size_t(H) * 4, &part, pdl);
    mark("moe_gate_up", double(rows * k * 2 * F * H) * es);
    if (decode && cfg_.moe_down_split) {  // a grid row per pick; decode steps have at most kMaxBatch rows
      part.part = moe_part_.as<float>();
      part.done = moe_down_done_.as<int>();
      launch(load_kernel(moe_down_split_variant(cfg_, wt_, arch_)),
             Dim3{unsigned((H + per_block - 1) / per_block), unsigned(rows * k)}, unsigned(cfg_.moe_block), 0, &part, pdl);
    } else {
      launch(load_kernel(v[1]), Dim3{unsigned((H + per_block - 1) / per_block), unsigned(rows)}, unsigned(cfg_.moe_block),
             cfg_.moe_direct ? 0 : size_t(k * F) * 4, &part, pdl);
    }
    mark("moe_down", double(rows * k * F * H) * es);
  }
}

// The chunk's picks come back to the host (a prompt step is not a CUDA graph), sorted by expert
// there; the rows go to the GEMMs in that order, each expert's run one group of cuBLAS's grouped
// GEMM (gate and up in one call, down in another; 16-bit outputs, the one type the grouped call
// writes from 16-bit inputs), and the combine adds each token's picks into the residual in their
// expert order.
void FastExecutor::moe_grouped(size_t layer, long long t0, long long rows) {
  const ModelConfig& c = g_.config;
  const long long E = c.moe.experts, k = c.moe.experts_per_token, F = c.moe.expert_intermediate, H = c.hidden_size;
  const size_t es = dtype_size(wt_), picks = size_t(rows * k);
  if (!moe_xg_.ptr()) {  // sized for a whole chunk
    const size_t most = size_t(kGroupedChunk * k);
    moe_xg_ = DeviceBuffer(most * size_t(H) * es);
    moe_gate16_ = DeviceBuffer(most * size_t(F) * es);
    moe_up16_ = DeviceBuffer(most * size_t(F) * es);
    moe_act16_ = DeviceBuffer(most * size_t(F) * es);
    moe_down_ = DeviceBuffer(most * size_t(H) * es);
    moe_rows_ = DeviceBuffer(most * 4);
    moe_pos_ = DeviceBuffer(most * 4);
    moe_ptrs_ = DeviceBuffer(size_t(9 * E) * sizeof(CUdeviceptr));
  }
  std::vector<int32_t> ids(picks);
  CU_CHECK(drv().cuMemcpyDtoHAsync(ids.data(), moe_ids_.ptr() + size_t(t0 * k) * 4, picks * 4, s_));
  CU_CHECK(drv().cuStreamSynchronize(s_));
  const ExpertGroups gr = group_by_expert(ids.data(), rows, k, E);
  // The pointer arrays: gate/up groups (A weights, B rows, C outputs), then down's.
  const std::vector<CUdeviceptr>& table = fw_->moe_host_table.at(layer);
  std::vector<CUdeviceptr> gu_w, gu_x, gu_out, dn_w, dn_x, dn_out;
  std::vector<int> gu_m, dn_m;
  for (int part = 0; part < 2; ++part)  // gate, then up
    for (long long e = 0; e < E; ++e) {
      const int m = gr.count[size_t(e)];
      if (m == 0) continue;
      const size_t at = size_t(gr.start[size_t(e)]);
      gu_w.push_back(table[size_t(part * E + e)]);
      gu_x.push_back(moe_xg_.ptr() + at * size_t(H) * es);
      gu_out.push_back((part ? moe_up16_ : moe_gate16_).ptr() + at * size_t(F) * es);
      gu_m.push_back(m);
      if (part) continue;
      dn_w.push_back(table[size_t(2 * E + e)]);
      dn_x.push_back(moe_act16_.ptr() + at * size_t(F) * es);
      dn_out.push_back(moe_down_.ptr() + at * size_t(H) * es);
      dn_m.push_back(m);
    }
  std::vector<CUdeviceptr> ptrs;
  for (const auto* v : {&gu_w, &gu_x, &gu_out, &dn_w, &dn_x, &dn_out}) ptrs.insert(ptrs.end(), v->begin(), v->end());
  moe_ptrs_.upload(ptrs.data(), ptrs.size() * sizeof(CUdeviceptr), s_);
  moe_rows_.upload(gr.rows.data(), picks * 4, s_);
  moe_pos_.upload(gr.pos.data(), picks * 4, s_);
  CU_CHECK(drv().cuStreamSynchronize(s_));  // the host vectors go out of scope
  auto dev = [&](size_t index) { return reinterpret_cast<void* const*>(moe_ptrs_.ptr() + index * sizeof(CUdeviceptr)); };
  const size_t g = gu_m.size(), d = dn_m.size();
  MoeGroupedParams p{h_.as<float>() + t0 * H, moe_rows_.as<int>(), moe_pos_.as<int>(), moe_weights_.as<float>() + t0 * k,
                     moe_xg_.as<void>(), moe_down_.as<void>(), resid_.as<float>() + t0 * H, rows, k, H};
  launch(load_kernel(moe_gather_variant(wt_, arch_)), Dim3{unsigned(picks)}, 256, 0, &p);
  mark("moe_gather", double(picks) * double(H) * double(4 + es));
  cublas_grouped_gemm(cublas_, wt_, reinterpret_cast<const void* const*>(dev(g)), reinterpret_cast<const void* const*>(dev(0)),
                      dev(2 * g), gu_m, H, F);
  mark("moe_gemm_gate_up", 0, 2.0 * double(picks) * double(2 * F) * double(H));
  Swiglu16Params sp{moe_gate16_.as<void>(), moe_up16_.as<void>(), moe_act16_.as<void>(), (long long)picks * F};
  launch(load_kernel(prefill_swiglu_variant(wt_, arch_)), Dim3{elementwise_blocks(((long long)picks * F + 7) / 8, kRefBlock)},
         kRefBlock, 0, &sp);
  mark("swiglu", double(picks) * double(F) * double(3 * es));
  cublas_grouped_gemm(cublas_, wt_, reinterpret_cast<const void* const*>(dev(3 * g + d)),
                      reinterpret_cast<const void* const*>(dev(3 * g)), dev(3 * g + 2 * d), dn_m, F, H);
  mark("moe_gemm_down", 0, 2.0 * double(picks) * double(F) * double(H));
  launch(load_kernel(moe_combine_variant(wt_, arch_)), Dim3{unsigned(rows)}, 256, 0, &p);
  mark("moe_combine", double(picks) * double(H) * double(es) + double(rows * H) * 8);
}

bool FastExecutor::count_expert_reads(bool on) {
  if (!g_.config.is_moe()) return false;
  drop_ahead();
  CU_CHECK(drv().cuStreamSynchronize(s_));
  if (!expert_counter_.ptr()) expert_counter_ = DeviceBuffer(16);
  if (on) CU_CHECK(drv().cuMemsetD32Async(expert_counter_.ptr(), 0, 4, s_));
  if (on != count_experts_) {  // the decode graphs hold the counting launches or not: capture again
    for (auto& [key, exec] : graphs_) drv().cuGraphExecDestroy(exec);
    graphs_.clear();
  }
  count_experts_ = on;
  return true;
}

ExpertReads FastExecutor::expert_reads() const {
  if (!expert_counter_.ptr()) return {};
  unsigned long long c[2] = {0, 0};
  CU_CHECK(drv().cuMemcpyDtoHAsync(c, expert_counter_.ptr(), sizeof c, s_));
  CU_CHECK(drv().cuStreamSynchronize(s_));
  return ExpertReads{int64_t(c[1]), int64_t(c[0])};
}

}  // namespace ac::cuda
