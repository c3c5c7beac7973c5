// Sampling on the device: the greedy tokens (argmax, also as the decode GEMV's epilogue) and top-k's
// candidates (topk.radix), so that a step's logits stay on the GPU.
#include "backends/cuda/fast/executor.h"

#include <algorithm>

#include "backends/cuda/fast/variants.h"

namespace ac::cuda {

TopKShape topk_shape(long long vocab, int k) {
  const long long chunk = std::max<long long>(4096, k);
  return TopKShape{chunk, (vocab + chunk - 1) / chunk};
}

Variant topk_variant(const FastConfig& cfg, const std::string& arch) {
  return make_variant(find_family("topk", "radix"), {{"BLOCK", cfg.top_k_block}}, {}, arch);
}

void launch_argmax_finish(unsigned long long* best, int* tokens, long long B, CUstream s, bool pdl,
                          const std::string& arch, int carveout, int* positions, int* host_tokens, long long slot_len) {
  ArgmaxFinishParams f{best, tokens, B, positions, host_tokens, slot_len};
  const Variant v = make_variant(find_family("argmax_finish", "ref"), {{"BLOCK", int(kRefBlock)}}, {}, arch);
  launch_kernel(load_kernel(v), Dim3{1}, kRefBlock, 0, s, &f, pdl, carveout);
}

bool FastExecutor::argmax_rows(std::vector<int32_t>& out) {
  if (!decode_step_ && !tokens_ready_) {  // prefill: the reference argmax over the logit rows
    ArgmaxParams p{logits_.as<float>(), token_out_.as<int>(), rows_in_step_, g_.config.vocab_size};
    launch(ref("argmax", {}), Dim3{unsigned(rows_in_step_)}, kRefBlock, 0, &p);
  }
  if (!host_tokens_valid_) {
    // A decode step's lm_head wrote them over its token ids (the next chained step's input).
    const CUdeviceptr src = decode_step_ ? CUdeviceptr(in_.tokens()) : token_out_.ptr();
    CU_CHECK(drv().cuMemcpyDtoHAsync(host_tokens_.data(), src, size_t(rows_in_step_) * 4, s_));
    CU_CHECK(drv().cuStreamSynchronize(s_));
    host_tokens_valid_ = true;
  }
  tokens_ready_ = true;
  out.assign(host_tokens_.as<int32_t>(), host_tokens_.as<int32_t>() + rows_in_step_);
  return true;
}

bool FastExecutor::top_k_rows(int k, std::vector<std::pair<float, int32_t>>& out) {
  const int64_t vocab = g_.config.vocab_size;
  if (!cfg_.gpu_top_k || k < 1 || k > kGpuTopKMax || k >= vocab || rows_in_step_ > kGpuTopKRows) return false;
  // Values then ids, back to back in one buffer: one copy to the host.
  const size_t n = size_t(rows_in_step_) * size_t(k);
  const TopKShape sh = topk_shape(vocab, k);
  const size_t parts = size_t(rows_in_step_) * size_t(sh.chunks) * size_t(k);
  TopKParams p{logits_.as<float>(), topk_.as<float>(), reinterpret_cast<int*>(topk_.as<float>() + n),
               topk_parts_.as<float>(), reinterpret_cast<int*>(topk_parts_.as<float>() + parts), topk_counters_.as<unsigned>(),
               rows_in_step_, vocab, sh.chunk, k};
  launch(load_kernel(topk_variant(cfg_, arch_)), Dim3{unsigned(sh.chunks), unsigned(rows_in_step_)},
         unsigned(cfg_.top_k_block), 0, &p);
  topk_.download(host_topk_.data(), 2 * n * 4, s_);
  CU_CHECK(drv().cuStreamSynchronize(s_));
  out.resize(n);
  const float* hv = host_topk_.as<float>();
  const int32_t* hi = reinterpret_cast<const int32_t*>(hv + n);
  for (size_t i = 0; i < n; ++i) out[i] = {hv[i], hi[i]};
  return true;
}

// gpu_top_k: topk.radix's outputs (values, then ids), the chunks' candidates and its counters; in
// the constructor, after the activations.
void FastExecutor::setup_top_k() {
  const ModelConfig& c = g_.config;
  if (cfg_.gpu_top_k) {
    const size_t slots = size_t(kGpuTopKRows) * size_t(kGpuTopKMax);
    topk_ = DeviceBuffer(2 * slots * 4);
    host_topk_ = PinnedBuffer(2 * slots * 4);
    topk_parts_ = DeviceBuffer(2 * slots * size_t(topk_shape(c.vocab_size, 1).chunks) * 4);  // the most chunks: k <= 4096
    topk_counters_ = DeviceBuffer(2 * kGpuTopKRows * 4);
    CU_CHECK(drv().cuMemsetD32Async(topk_counters_.ptr(), 0, 2 * kGpuTopKRows, s_));
  }
}

}  // namespace ac::cuda
