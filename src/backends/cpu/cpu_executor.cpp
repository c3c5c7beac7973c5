#include "agentcompile/backends/cpu/cpu_executor.h"

#include <unistd.h>

#include <algorithm>
#include <map>

#include "agentcompile/backends/cpu/ref_ops.h"
#include "agentcompile/core/error.h"
#include "agentcompile/core/threads.h"
#include "agentcompile/ir/rope.h"

namespace ac {

namespace {

// A stored tensor as f32 (bf16 and f16 widen exactly).
std::vector<float> to_f32(const TensorInfo& t) {
  const size_t n = size_t(t.numel());
  std::vector<float> out(n);
  parallel_for(n, 1 << 16, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) out[i] = load_as_f32(t.data, t.dtype, i);
  });
  return out;
}

class CpuExecutor final : public Executor {
 public:
  CpuExecutor(const Graph& g, const ExecutorLimits& limits) : g_(g), limits_(limits), last_use_(g.last_uses()) {
    const ModelConfig& c = g.config;
    if (limits_.max_slots < 1 || limits_.max_seq < 1) throw_internal("cpu executor", "bad limits");
    // Reserve before widening anything: a huge model should fail with a clear message, not swap.
    uint64_t weight_bytes = 0;
    std::map<const TensorInfo*, bool> seen;
    for (const Op& op : g.ops)
      for (const TensorInfo* w : op.weights)
        if (!seen[w]) { seen[w] = true; weight_bytes += uint64_t(w->numel()) * 4; }
    const uint64_t kv_bytes = uint64_t(c.num_layers) * 2 * uint64_t(limits_.max_slots) * uint64_t(limits_.max_seq) *
                              uint64_t(c.kv_dim()) * 4;
    const uint64_t budget = uint64_t(double(::sysconf(_SC_PHYS_PAGES)) * double(::sysconf(_SC_PAGE_SIZE)) * 0.75);
    if (weight_bytes + kv_bytes > budget)
      throw_input("--backend cpu", "the CPU reference backend would need " + std::to_string((weight_bytes + kv_bytes) >> 20) +
                                       " MiB of f32 weights and KV cache; use a smaller model or the cuda backend");
    for (const auto& [w, _] : seen) weights_[w] = to_f32(*w);
    inv_freq_ = rope_inv_freq(c.rope, c.head_dim);
    const size_t kv_elems = size_t(limits_.max_slots) * size_t(limits_.max_seq) * size_t(c.kv_dim());
    k_cache_.assign(size_t(c.num_layers), std::vector<float>(kv_elems));
    v_cache_.assign(size_t(c.num_layers), std::vector<float>(kv_elems));
  }

  std::string name() const override { return "cpu"; }
  const float* logits() const override { return logits_.data(); }
  int64_t vocab_size() const override { return g_.config.vocab_size; }
  const ExecutorLimits& limits() const override { return limits_; }

  void forward(const StepBatch& b) override {
    validate_step(b, limits_, g_.config.vocab_size);
    const int64_t n = int64_t(b.tokens.size());
    const int64_t r = int64_t(b.logit_rows.size());
    std::vector<std::vector<float>> vals(g_.values.size());
    for (size_t i = 0; i < g_.ops.size(); ++i) {
      const Op& op = g_.ops[i];
      const int64_t width = g_.value(op.output).width;
      std::vector<float>& out = vals[size_t(op.output)];
      out.resize(size_t((op.kind == OpKind::Logits ? r : n) * width));
      auto in = [&](size_t k) { return vals[size_t(op.inputs[k])].data(); };
      auto w = [&](size_t k) { return k < op.weights.size() ? weights_.at(op.weights[k]).data() : nullptr; };
      switch (op.kind) {
        case OpKind::Embed:
          cpu::embed(b.tokens.data(), n, w(0), width, out.data());
          break;
        case OpKind::RmsNorm:
          cpu::rms_norm(in(0), n * op.groups, width / op.groups, w(0), op.eps, out.data());
          break;
        case OpKind::Linear:
          cpu::linear(in(0), n, g_.value(op.inputs[0]).width, w(0), w(1), width, out.data());
          break;
        case OpKind::Rope:
          cpu::rope(in(0), n, op.heads, op.head_dim, b.positions.data(), inv_freq_, out.data());
          break;
        case OpKind::Attention: {
          cpu::KvCacheView kv{k_cache_[size_t(op.layer)].data(), v_cache_[size_t(op.layer)].data(), limits_.max_seq,
                              op.kv_heads * op.head_dim};
          cpu::attention(in(0), in(1), in(2), n, b.positions.data(), b.slots.data(), op.heads, op.kv_heads, op.head_dim,
                         kv, out.data());
          break;
        }
        case OpKind::SwiGlu:
          cpu::swiglu(in(0), in(1), n * width, out.data());
          break;
        case OpKind::Add:
          cpu::add(in(0), in(1), n * width, out.data());
          break;
        case OpKind::Logits: {
          const int64_t hidden = g_.value(op.inputs[0]).width;
          std::vector<float> rows(size_t(r * hidden));
          for (int64_t j = 0; j < r; ++j)
            std::copy_n(in(0) + int64_t(b.logit_rows[size_t(j)]) * hidden, hidden, rows.data() + j * hidden);
          cpu::linear(rows.data(), r, hidden, w(0), nullptr, width, out.data());
          break;
        }
      }
      // Free what no later op reads.
      for (int v : op.inputs)
        if (last_use_[size_t(v)] == int(i)) std::vector<float>().swap(vals[size_t(v)]);
    }
    logits_ = std::move(vals[size_t(g_.logits)]);
  }

 private:
  const Graph& g_;
  ExecutorLimits limits_;
  std::vector<int> last_use_;
  std::map<const TensorInfo*, std::vector<float>> weights_;
  std::vector<float> inv_freq_;
  std::vector<std::vector<float>> k_cache_, v_cache_;  // [layer][slot][pos][kv_dim]
  std::vector<float> logits_;
};

}  // namespace

std::unique_ptr<Executor> make_cpu_executor(const Graph& graph, const ExecutorLimits& limits) {
  return std::make_unique<CpuExecutor>(graph, limits);
}

}  // namespace ac
