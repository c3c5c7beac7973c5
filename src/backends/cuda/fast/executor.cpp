// The fast path's executor: what it allocates and loads up front, and a step sent to the decode
// chain or the prefill.
#include "backends/cuda/fast/executor.h"

#include <algorithm>
#include <cstdlib>

#include "agentcompile/core/error.h"
#include "backends/cuda/fast/variants.h"

namespace ac::cuda {

FastExecutor::FastExecutor(const Graph& g, const ExecutorLimits& lim, const FastConfig& cfg, ExecutorShare* share)
    : g_(g), ops_(match_decoder_ops(g)), lim_(lim), cfg_(cfg), dev_(Device::get()), s_(dev_.stream()),
      arch_(dev_.info().arch()), cublas_(s_) {
  if (std::string why = fast_path_unsupported(g); !why.empty()) throw_input("cuda fast path", why);
  const ModelConfig& c = g.config;
  wt_ = g.ops.front().weights.at(0)->dtype;
  fp8_ = fast_fp8_scales(g);
  fp8_head_ = fast_fp8_head(g);
  if (fp8_ != Fp8Scales::None) cfg_ = fp8_fast_config(cfg_, fp8_head_);
  cluster_reach_ = cluster_long_reaches(c, cfg_, wt_, arch_);
  fw_ = fast_weights(g, ops_, cfg_, wt_, s_, share);
  setup_kv_cache();
  const long long nt = std::max<long long>(lim_.step_tokens(), kMaxBatch), nr = std::max<long long>(lim_.logit_rows(), kMaxBatch);
  const long long qkvd = c.q_dim() + 2 * c.kv_dim();
  max_splits_ = std::max(splits_of(attn_split(c, cfg_, arch_)), splits_of(attn_split(c, cfg_, arch_, true)));
  auto f32 = [](long long n) { return DeviceBuffer(size_t(std::max<long long>(n, 1)) * 4); };
  resid_ = f32(nt * c.hidden_size);
  h_ = f32(nt * c.hidden_size);
  qkv_ = f32(nt * qkvd);
  q_ = f32(nt * c.q_dim());
  attn_ = f32(nt * c.q_dim());
  gate_ = f32(nt * c.intermediate_size);
  up_ = f32(nt * c.intermediate_size);
  tmp_ = f32(nt * std::max(c.hidden_size, c.intermediate_size));
  cast_ = DeviceBuffer(size_t(nt) * size_t(std::max({c.hidden_size, c.q_dim(), c.intermediate_size})) * 2);
  if (fp8_ != Fp8Scales::None)
    wdq_ = DeviceBuffer(size_t(std::max<long long>({qkvd * c.hidden_size, c.q_dim() * c.hidden_size,
                                                    c.intermediate_size * c.hidden_size})) *
                        dtype_size(wt_));
  // Also attn_decode.parts's partials (attn_merge_o): attn_cluster per (KV head, token).
  const long long parts = std::max<long long>(max_splits_, cfg_.attn_cluster);
  part_o_ = f32(nt * c.num_heads * parts * c.head_dim);
  part_ml_ = f32(nt * c.num_heads * parts * 2);
  gathered_ = f32(nr * c.hidden_size);
  logits_ = f32(nr * c.vocab_size);
  // The argmax GEMV's (logit, row) key per batch row: zero before it, zeroed again by argmax_finish.
  best_ = DeviceBuffer(size_t(kMaxBatch) * 8);
  CU_CHECK(drv().cuMemsetD32Async(best_.ptr(), 0, size_t(kMaxBatch) * 2, s_));
  if (c.is_moe()) {  // every row's router logits, picks and their activations
    const long long E = c.moe.experts, k = c.moe.experts_per_token;
    moe_logits_ = f32(nt * E);
    moe_ids_ = f32(nt * k);
    moe_weights_ = f32(nt * k);
    moe_act_ = f32(nt * k * c.moe.expert_intermediate);
    // moe_router.logits PICK 1's count of each token's finished blocks: zero between launches.
    moe_done_ = DeviceBuffer(size_t(nt) * 4);
    CU_CHECK(drv().cuMemsetD32Async(moe_done_.ptr(), 0, size_t(nt), s_));
    if (cfg_.moe_down_split) {  // decode steps only: at most kMaxBatch rows, at most hidden output blocks each
      moe_part_ = f32(kMaxBatch * k * c.hidden_size);
      moe_down_done_ = DeviceBuffer(size_t(kMaxBatch * c.hidden_size) * 4);
      CU_CHECK(drv().cuMemsetD32Async(moe_down_done_.ptr(), 0, size_t(kMaxBatch * c.hidden_size), s_));
    }
  }
  mlp_counters_ = DeviceBuffer(8);
  CU_CHECK(drv().cuMemsetD32Async(mlp_counters_.ptr(), 0, 2, s_));
  attn_counters_ = DeviceBuffer(size_t(kMaxBatch * c.num_kv_heads) * 4);
  CU_CHECK(drv().cuMemsetD32Async(attn_counters_.ptr(), 0, size_t(kMaxBatch * c.num_kv_heads), s_));
  token_out_ = DeviceBuffer(size_t(nr) * 4);
  setup_top_k();
  in_ = StepInputs(nt, nr);
  prefill_tiles_ = DeviceBuffer(size_t(2 * nt) * 8);  // at most one tile per row, each with a padding partner
  host_logits_ = PinnedBuffer(size_t(nr) * size_t(c.vocab_size) * 4);
  host_tokens_ = PinnedBuffer(size_t(nr) * 4);
  host_ahead_ = PinnedBuffer(2 * kMaxBatch * 4);
  for (CUevent& e : ahead_done_) CU_CHECK(drv().cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
  // Compile (or load from the cache) every kernel now, so no step pays for it.
  for (const Variant& v : fast_path_variants(c, wt_, cfg_, arch_, fp8_, fp8_head_)) load_kernel(v);
  setup_persistent();
  for (const char* op : {"embed", "rms_norm", "cast", "bias"}) ref(op, {}, {wt_});
  for (const char* op : {"add", "swiglu", "gather_rows", "argmax", "argmax_finish"}) ref(op, {});
  profile_ = profile_env_ = std::getenv("AGENTCOMPILE_PROFILE") != nullptr;
  dev_.synchronize();
}

FastExecutor::~FastExecutor() {
  if (profile_env_) print_profile();
  if (const DriverApi* d = driver_api()) {
    d->cuStreamSynchronize(s_);  // steps in flight copy into host_ahead_
    for (auto& [b, exec] : graphs_) d->cuGraphExecDestroy(exec);
    for (CUevent e : ahead_done_)
      if (e) d->cuEventDestroy(e);
  }
}

void FastExecutor::forward(const StepBatch& b) {
  validate_step(b, lim_, g_.config.vocab_size);
  drop_ahead();
  const long long n = (long long)b.tokens.size(), r = (long long)b.logit_rows.size();
  in_.upload(b, s_);
  rows_in_step_ = r;
  last_positions_ = b.positions;
  last_slots_ = b.slots;
  logits_on_host_ = false;
  tokens_ready_ = false;
  host_tokens_valid_ = false;
  decode_step_ = is_decode_step(b);
  if (decode_step_) {
    run_decode(n);
    // The greedy tokens come back with the step's one synchronisation (argmax_rows reads them).
    CU_CHECK(drv().cuMemcpyDtoHAsync(host_tokens_.data(), CUdeviceptr(in_.tokens()), size_t(n) * 4, s_));
    host_tokens_valid_ = true;
  } else {
    run_prefill(n, r);
  }
  CU_CHECK(drv().cuStreamSynchronize(s_));  // staging is reused by the next step
}

const float* FastExecutor::logits() const {
  if (!logits_on_host_) {
    logits_.download(host_logits_.data(), size_t(rows_in_step_) * size_t(g_.config.vocab_size) * 4, s_);
    CU_CHECK(drv().cuStreamSynchronize(s_));
    logits_on_host_ = true;
  }
  return host_logits_.as<float>();
}

std::unique_ptr<Executor> make_fast_executor(const Graph& g, const ExecutorLimits& lim, const FastConfig& cfg,
                                             ExecutorShare* share) {
  return std::make_unique<FastExecutor>(g, lim, cfg, share);
}

}  // namespace ac::cuda
