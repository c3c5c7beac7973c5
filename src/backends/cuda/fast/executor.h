#pragma once
// The CUDA fast path's executor (make_fast_executor), declared once for the files that define it
// by concern: executor.cpp (construction, forward, logits), kv_cache.cpp, graphs.cpp (launches, CUDA
// graphs), decode_step.cpp, prefill.cpp, sampling.cpp, decode_ahead.cpp, persistent.cpp, profile.cpp.
// Private to the CUDA backend: callers use fast_executor.h.
#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agentcompile/ir/decoder_layers.h"
#include "backends/cuda/cublas_route.h"
#include "backends/cuda/cublaslt_route.h"
#include "backends/cuda/device.h"
#include "backends/cuda/fast/weights.h"
#include "backends/cuda/fast_executor.h"
#include "backends/cuda/kernel_loader.h"
#include "backends/cuda/step_inputs.h"

extern "C" {
#include "../../../../kernels/cuda/common/params.h"
}

namespace ac::cuda {

// The reference kernels' block, and the most tokens (one per sequence) of a decode step.
inline constexpr unsigned kRefBlock = 256;
inline constexpr int kMaxBatch = 8;

class FastExecutor final : public Executor {
 public:
  FastExecutor(const Graph& g, const ExecutorLimits& lim, const FastConfig& cfg, ExecutorShare* share);
  ~FastExecutor() override;

  std::string name() const override { return "cuda"; }
  int64_t vocab_size() const override { return g_.config.vocab_size; }
  const ExecutorLimits& limits() const override { return lim_; }

  void forward(const StepBatch& b) override;
  const float* logits() const override;
  // sampling.cpp
  bool argmax_rows(std::vector<int32_t>& out) override;
  bool count_expert_reads(bool on) override;
  ExpertReads expert_reads() const override;
  // profile.cpp
  bool profile_kernels(bool on) override;
  KernelProfile kernel_profile() const override;
  bool top_k_rows(int k, std::vector<std::pair<float, int32_t>>& out) override;
  // decode_ahead.cpp
  void decode_ahead(const StepBatch& b, bool chained) override;
  void next_greedy(std::vector<int32_t>& out) override;
  void end_ahead() override;

 private:
  // decode_ahead.cpp
  void drop_ahead();

  // decode_step.cpp: a decode step as the fused kernels' chain.
  static bool is_decode_step(const StepBatch& b);
  void run_decode(long long n);
  void record_decode(long long n);
  // `ws`, `ws2`: FP8 weights' scales (then gemv.fp8 runs), else null.
  void gemv(const char* region, const GemvChoice& ch, const MmaChoice& mma, int epi, long long n, const float* x,
            const void* gamma, const void* w, const void* w2, const void* bias, float* out, long long N, long long K,
            const float* ws = nullptr, const float* ws2 = nullptr);
  void mlp(const Variant& v, const LayerOps& L, size_t layer, long long n);
  void fused_attention(const LayerOps& L, size_t layer, long long n, const Variant* parts = nullptr);
  FusedAttnParams attn_params(size_t layer, const LayerOps& L, long long n) const;
  void attention_and_output(const AttnOPlan& ao, const LayerOps& L, size_t layer, long long n);

  // kv_cache.cpp
  void setup_kv_cache();
  // Blocks per (token, KV head) for splits of `split` positions over the whole cache.
  long long splits_of(int split) const { return (lim_.max_seq + split - 1) / split; }

  // graphs.cpp: the step replayed from its CUDA graph; every launch.
  void run_decode_step(long long n);
  void launch(const LoadedKernel& k, Dim3 grid, unsigned threads, size_t smem, const void* params, bool pdl = false,
              const char* region = nullptr);
  const LoadedKernel& ref(const std::string& op, std::map<std::string, int> params, std::vector<DType> types = {});

  // A weight's device pointer (null for none).
  const void* wptr(const TensorInfo* t) const { return t ? reinterpret_cast<const void*>(fw_->w.at(t).ptr()) : nullptr; }
  const void* wptr(const Op* op, size_t k) const { return k < op->weights.size() ? wptr(op->weights[k]) : nullptr; }
  // An FP8 projection's scales on the device (null for a 16-bit weight).
  const float* sptr(const Op* op) const {
    const auto it = fw_->scale.find(op->weights.at(0));
    return it == fw_->scale.end() ? nullptr : it->second.as<float>();
  }
  const float* sqkv(size_t layer) const { return fw_->sqkv.empty() ? nullptr : fw_->sqkv.at(layer).as<float>(); }

  // prefill.cpp: cuBLAS GEMMs over the step's tokens (the layers as prefill_w16 says).
  void run_prefill(long long n, long long r);
  void prefill_layers_w16(long long n, const std::optional<Variant>& flash);
  void prefill_layers_f32(long long n, const std::optional<Variant>& flash);
  void attention(const LayerOps& L, size_t layer, long long n, bool pdl);
  // moe.cpp: a sparse layer's MLP over the step's n rows, added into the residual stream.
  // decode: a decode step's (the expert count, while on, counts its picks).
  void moe_mlp(const LayerOps& L, size_t layer, long long n, bool decode = false);
  // A prompt's n0.. n0 + rows tokens through the grouped expert GEMMs (moe_prefill_grouped), after
  // the router picked theirs.
  void moe_grouped(size_t layer, long long t0, long long rows);
  void prefill_attention(const LayerOps& L, size_t layer, long long n, const Variant& v, void* out16);
  // out [n, out_dim] (out_t) = x16 [n, in] (wt_) * w^T, plus beta times out. `ws`: an FP8
  // weight's scales (it is dequantized into wdq_ first), else null. `kind`: its name in the profile.
  // `slot`: the projection (null: the lm_head), whose prompt GEMM route the config holds: our own
  // GEMM (prefill_gemm_point), else cuBLASLt's prefill_algo rank from kLtFromTokens tokens on, else
  // cublasGemmEx.
  void gemm(const void* w, const float* ws, const void* x16, long long n, long long in, long long out_dim, void* out,
            DType out_t, float beta, const char* kind, const GemvSlotField* slot = nullptr);
  // A dense layer's gate and up GEMMs and SwiGLU as one launch of our own GEMM (EPI 3), where the
  // gate/up projection runs on it (prefill_gemm_point, prefill_swiglu_epilogue; 16-bit weights): the
  // down projection's input (in gate_), or null when the caller runs the two GEMMs and swiglu.w16.
  const void* gemm_swiglu(const LayerOps& L, const void* x16, long long n);
  // Our own GEMM (gemm.wgmma or gemm.mma, at store EPI) for a prompt GEMM of `slot` (null: the
  // lm_head) over n rows, K `in` and N `out_dim`, where the config routes it there and the shape
  // fits; and its launch.
  std::optional<Variant> own_gemm(const GemvSlotField* slot, int epi, long long n, long long in, long long out_dim) const;
  void launch_own_gemm(const Variant& v, const GemmW16Params& p);
  void bias_add(float* out, const void* bias, long long n, long long cols);
  // RMSNorm of f32 rows into wt_ (rms_norm.cast): a GEMM's input.
  void norm16(const Op* norm, const float* x, long long rows, long long dim, void* out);

  // sampling.cpp
  void setup_top_k();

  // persistent.cpp
  void setup_persistent();
  void persistent_layers();

  // AGENTCOMPILE_PROFILE=1: decode steps run launch by launch with events in between; each
  // kernel's time and the bytes it must move (the GEMMs': their FLOPs) are summed per kind and
  // printed at exit, the prompt steps' apart from the decode steps'.
  struct ProfileEntry {
    double ms = 0.0, bytes = 0.0, flops = 0.0;
    long long calls = 0;
  };
  struct Mark {
    CUevent e;
    std::string kind;
    double bytes, flops;
  };
  void mark(const std::string& kind, double bytes, double flops = 0.0);
  void flush_profile(bool prefill = false);
  void print_profile() const;

  const Graph& g_;
  DecoderOps ops_;
  ExecutorLimits lim_;
  FastConfig cfg_;
  Device& dev_;
  CUstream s_;
  std::string arch_;
  CublasHandle cublas_;
  std::unique_ptr<LtGemm> lt_;  // made on the first GEMM that takes a cuBLASLt rank
  DType wt_ = DType::BF16;
  Fp8Scales fp8_ = Fp8Scales::None;  // the projections' FP8 scale layout (fast_fp8_scales), or none
  bool fp8_head_ = false;             // the lm_head is FP8 too (fast_fp8_head)
  DeviceBuffer wdq_;  // FP8: the largest projection dequantized to wt_, for a prefill GEMM
  std::shared_ptr<const FastWeights> fw_;  // the weights, perhaps shared (ExecutorShare)
  DeviceBuffer inv_freq_, rope_cos_, rope_sin_;  // rope_*: [max_seq, head_dim / 2]
  std::vector<DeviceBuffer> kcache_, vcache_;  // bf16 [slot][kv_head][position][head_dim]
  long long max_splits_ = 1;
  DeviceBuffer resid_, h_, qkv_, q_, attn_, gate_, up_, tmp_, cast_, part_o_, part_ml_, gathered_, logits_;
  DeviceBuffer best_, attn_counters_, token_out_;
  DeviceBuffer topk_;  // gpu_top_k: [rows * k] values, then [rows * k] ids (at most kGpuTopKMax per row)
  DeviceBuffer topk_parts_, topk_counters_;  // the chunks' candidates (values, then ids); counters
  PinnedBuffer host_topk_;
  std::optional<PersistentPlan> pl_;  // decode_layers.persistent for batch-1 steps, when on and able
  DeviceBuffer pl_layers_, pl_counters_, pl_part_o_, pl_part_ml_;
  DeviceBuffer moe_logits_, moe_ids_, moe_weights_, moe_act_;  // sparse layers: [rows, E], [rows, k] x 2, [rows * k, F]
  DeviceBuffer moe_done_;                                      // [rows] int: moe_router.logits PICK 1's counts
  DeviceBuffer moe_part_, moe_down_done_;  // moe_down.split: [kMaxBatch * k, hidden] products, [kMaxBatch * hidden] counts
  // The grouped expert GEMMs' buffers for a chunk of prompt tokens (made on first use): the sorted
  // rows (16-bit), gate and up outputs and their SwiGLU (16-bit), the down outputs (f32), the
  // sorted picks and their positions, the GEMMs' pointer arrays.
  bool count_experts_ = false;
  DeviceBuffer expert_counter_;  // [2] u64: distinct experts, (layer, step) pairs (moe/route.cuh)
  DeviceBuffer moe_xg_, moe_gate16_, moe_up16_, moe_act16_, moe_down_, moe_rows_, moe_pos_, moe_ptrs_;
  DeviceBuffer mlp_counters_;  // mlp.fused: blocks that read h / blocks done (reset by its last block)
  StepInputs in_;  // token ids, positions, slots, logit rows of the step
  PinnedBuffer host_logits_, host_tokens_;
  struct Ahead {
    int slot;
    long long n;
    bool stashed = false;  // its tokens were taken off the slot early (stash)
    std::array<int32_t, kMaxBatch> stash{};
  };
  std::deque<Ahead> ahead_;   // decode-ahead steps in flight, oldest first
  PinnedBuffer host_ahead_;   // their greedy tokens: two slots of kMaxBatch
  CUevent ahead_done_[2] = {nullptr, nullptr};
  long long ahead_count_ = 0, ahead_n_ = 0;  // steps enqueued; tokens of the last (0: none to chain)
  std::map<int, CUgraphExec> graphs_;  // by batch template * 4 + the attention's AttnRange
  long long longest_ = 0;  // positions of this decode step's longest sequence (picks the attention)
  long long decode_steps_ = 0;  // decode steps run (the developer timeline records one of them)
  // How far the batch-1 long ranges' cluster attention reaches (cluster_long_reaches): computed
  // once, so that picking a step's graph builds no variants.
  std::vector<long long> cluster_reach_;
  bool profile_ = false;
  bool profile_env_ = false;  // AGENTCOMPILE_PROFILE: profiled from the start, printed at exit
  bool prompt_ran_ = false;   // a prompt step ran (its GEMMs' cuBLAS kernels are loaded)
  std::vector<Mark> marks_;
  std::map<std::string, ProfileEntry> profile_sum_, prefill_sum_;
  long long profiled_steps_ = 0, prefill_steps_ = 0, prefill_tokens_ = 0;
  bool prefill_warm_ = false;  // the first prompt step is not profiled (it loads cuBLAS's kernels)
  std::vector<int32_t> last_positions_, last_slots_;
  DeviceBuffer prefill_tiles_;  // attn_prefill.pipe's query tiles: [2 * max_tokens][2] (PAIR 1: partners)
  long long prefill_tile_count_ = 0;  // the attention grid's x: tiles, or pairs of them (prefill_flash_pair)
  long long rows_in_step_ = 0;
  bool decode_step_ = false, tokens_ready_ = false;
  bool host_tokens_valid_ = false;  // host_tokens_ holds this step's token_out_ (decode steps)
  mutable bool logits_on_host_ = false;
};

}  // namespace ac::cuda
