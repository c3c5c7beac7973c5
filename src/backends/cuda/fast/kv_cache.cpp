// The KV cache: bf16 K and V rows of every layer by slot, KV head and position, and the rope
// tables the decode attention writes them with.
#include "backends/cuda/fast/executor.h"

#include <vector>

#include "agentcompile/ir/rope.h"

namespace ac::cuda {

// The rope tables and the K/V caches of every layer; in the constructor, after the weights' upload.
void FastExecutor::setup_kv_cache() {
  const ModelConfig& c = g_.config;
  std::vector<float> inv = rope_inv_freq(c.rope, c.head_dim);
  inv_freq_ = DeviceBuffer(inv.size() * 4);
  inv_freq_.upload(inv.data(), inv.size() * 4, s_);
  // cos/sin of every position the cache can hold, computed as the reference does: the decode
  // attention kernel reads its row instead of evaluating trigonometry per block.
  {
    const size_t half = size_t(c.head_dim / 2), npos = size_t(lim_.max_seq);
    std::vector<float> cs(npos * half), sn(npos * half);
    for (size_t p = 0; p < npos; ++p) rope_cos_sin(inv, int64_t(p), cs.data() + p * half, sn.data() + p * half);
    rope_cos_ = DeviceBuffer(cs.size() * 4);
    rope_sin_ = DeviceBuffer(sn.size() * 4);
    rope_cos_.upload(cs.data(), cs.size() * 4, s_);
    rope_sin_.upload(sn.data(), sn.size() * 4, s_);
    dev_.synchronize();  // the host vectors go out of scope
  }
  const size_t kv = size_t(lim_.max_slots) * size_t(c.num_kv_heads) * size_t(lim_.max_seq) * size_t(c.head_dim) * 2;
  for (int64_t l = 0; l < c.num_layers; ++l) {
    kcache_.emplace_back(kv);
    vcache_.emplace_back(kv);
  }
}

}  // namespace ac::cuda
