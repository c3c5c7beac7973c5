#include "agentcompile/backends/cpu/cpu_executor.h"

#include <unistd.h>

#include <algorithm>
#include <map>

#include "agentcompile/backends/cpu/op_runner.h"
#include "agentcompile/backends/cpu/ref_ops.h"
#include "agentcompile/core/error.h"
#include "agentcompile/core/threads.h"
#include "agentcompile/ir/rope.h"
#include "agentcompile/plan/plan.h"

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
    // A step where some sequence has several tokens runs the plan's prefill bindings.
    bool prefill = false;
    for (int64_t i = 1; i < n; ++i) prefill = prefill || b.slots[size_t(i)] == b.slots[size_t(i - 1)];
    const std::vector<cpu::OpBinding>& bind = prefill ? prefill_ : decode_;
    std::vector<std::vector<float>> vals(g_.values.size());
    for (size_t i = 0; i < g_.ops.size(); ++i) {
      const Op& op = g_.ops[i];
      const int64_t width = g_.value(op.output).width;
      std::vector<float>& out = vals[size_t(op.output)];
      out.resize(size_t((op.kind == OpKind::Logits ? r : n) * width));
      cpu::OpArgs a;
      for (size_t k = 0; k < op.inputs.size() && k < 3; ++k) a.in[k] = vals[size_t(op.inputs[k])].data();
      for (size_t k = 0; k < op.weights.size() && k < 2; ++k) a.w[k] = op.weights[k] ? weights_.at(op.weights[k]).data() : nullptr;
      a.out = out.data();
      a.set_step(n, b.tokens.data(), b.positions.data(), b.slots.data(), b.logit_rows.data(), r, &inv_freq_);
      if (op.kind == OpKind::Attention)
        a.kv = cpu::KvCacheView{k_cache_[size_t(op.layer)].data(), v_cache_[size_t(op.layer)].data(), limits_.max_seq,
                                op.kv_heads * op.head_dim};
      cpu::run_op(g_, op, bind.empty() ? cpu::OpBinding{} : bind[i], a);
      // Free what no later op reads.
      for (int v : op.inputs)
        if (last_use_[size_t(v)] == int(i)) std::vector<float>().swap(vals[size_t(v)]);
    }
    logits_ = std::move(vals[size_t(g_.logits)]);
  }

  // The plan's family bindings per op and phase (validated against this graph).
  void bind_plan(const Plan& plan) {
    decode_.assign(g_.ops.size(), cpu::OpBinding{});
    prefill_.assign(g_.ops.size(), cpu::OpBinding{});
    std::map<std::string, size_t> index;
    for (size_t i = 0; i < g_.ops.size(); ++i) index[g_.ops[i].name] = i;
    for (const PlanRoute& r : plan.routes) {
      if (r.route == "fallback") continue;
      const std::string subject = "plan route " + r.region + " " + r.phase;
      cpu::OpBinding b;
      try {
        if (r.family == "cpu:linear.blocked") {
          b.kind = cpu::OpBinding::Kind::LinearBlocked;
          b.linear = cpu::linear_blocked_params(r.params);
        } else if (r.family == "cpu:attention.blocked") {
          b.kind = cpu::OpBinding::Kind::AttentionBlocked;
          b.attention = cpu::attention_blocked_params(r.params);
        } else {
          throw_input(subject, "family " + json_quote(r.family) + " is not a CPU family");
        }
      } catch (const Error& e) {
        if (e.kind() == ErrorKind::BadInput) throw;
        throw_input(subject, e.reason());
      }
      for (const std::string& name : r.ops) {
        auto it = index.find(name);
        if (it == index.end()) throw_input(subject, "names op " + json_quote(name) + ", which this model does not have");
        const OpKind k = g_.ops[it->second].kind;
        const bool fits = b.kind == cpu::OpBinding::Kind::LinearBlocked ? (k == OpKind::Linear || k == OpKind::Logits)
                                                                         : k == OpKind::Attention;
        if (!fits) throw_input(subject, r.family + " cannot run op " + json_quote(name));
        (r.phase == "decode" ? decode_ : prefill_)[it->second] = b;
      }
    }
  }

 private:
  const Graph& g_;
  ExecutorLimits limits_;
  std::vector<int> last_use_;
  std::map<const TensorInfo*, std::vector<float>> weights_;
  std::vector<float> inv_freq_;
  std::vector<std::vector<float>> k_cache_, v_cache_;  // [layer][slot][pos][kv_dim]
  std::vector<float> logits_;
  std::vector<cpu::OpBinding> decode_, prefill_;  // per op; empty: reference ops everywhere
};

}  // namespace

std::unique_ptr<Executor> make_cpu_executor(const Graph& graph, const ExecutorLimits& limits, const Plan* plan) {
  auto ex = std::make_unique<CpuExecutor>(graph, limits);
  if (plan) ex->bind_plan(*plan);
  return ex;
}

}  // namespace ac
