#include "agentcompile/backends/cpu/cpu_executor.h"

#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>

#include "agentcompile/backends/cpu/op_runner.h"
#include "agentcompile/tuning/reference_ops.h"
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
    for (const Op& op : g.ops) {
      std::vector<const float*>& ws = op_weights_.emplace_back();
      for (const TensorInfo* w : op.weights) ws.push_back(weights_.at(w).data());
    }
    inv_freq_ = rope_inv_freq(c.rope, c.head_dim);
    const size_t kv_elems = size_t(limits_.max_slots) * size_t(limits_.max_seq) * size_t(c.kv_dim());
    k_cache_.assign(size_t(c.num_layers), std::vector<float>(kv_elems));
    v_cache_.assign(size_t(c.num_layers), std::vector<float>(kv_elems));
  }

  std::string name() const override { return "cpu"; }
  bool count_expert_reads(bool on) override {
    if (!g_.config.is_moe()) return false;
    counting_ = on;
    if (on) reads_ = {};
    return true;
  }
  ExpertReads expert_reads() const override { return reads_; }
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
    const PhaseBinding& bind = prefill ? prefill_ : decode_;
    std::vector<std::vector<float>> vals(g_.values.size());
    for (size_t i = 0; i < g_.ops.size(); ++i) {
      const Op& op = g_.ops[i];
      // Free what no later op reads (also after ops a fused span stands in for).
      auto release_inputs = [&] {
        for (int v : op.inputs)
          if (last_use_[size_t(v)] == int(i)) std::vector<float>().swap(vals[size_t(v)]);
      };
      if (!bind.skipped.empty() && bind.skipped[i]) {
        release_inputs();
        continue;
      }
      if (!bind.fused_at.empty() && bind.fused_at[i] >= 0) {
        const FusedRun& f = bind.fused[size_t(bind.fused_at[i])];
        const cpu::MlpSpan& sp = spans_[f.span];
        std::vector<float>& out = vals[size_t(sp.out)];
        out.resize(size_t(n * sp.hidden));
        cpu::mlp_fused(vals[size_t(sp.x)].data(), vals[size_t(sp.residual)].data(), n, sp.hidden, sp.inter, f.weights,
                       out.data(), f.params);
        release_inputs();
        continue;
      }
      const int64_t width = g_.value(op.output).width;
      std::vector<float>& out = vals[size_t(op.output)];
      out.resize(size_t((op.kind == OpKind::Logits ? r : n) * width));
      cpu::OpArgs a;
      for (size_t k = 0; k < op.inputs.size() && k < 3; ++k) a.in[k] = vals[size_t(op.inputs[k])].data();
      for (size_t k = 0; k < op.weights.size() && k < 2; ++k) a.w[k] = op_weights_[i][k];
      a.all_w = &op_weights_[i];
      a.out = out.data();
      a.set_step(n, b.tokens.data(), b.positions.data(), b.slots.data(), b.logit_rows.data(), r, &inv_freq_);
      if (op.kind == OpKind::Attention)
        a.kv = ref::KvCacheView{k_cache_[size_t(op.layer)].data(), v_cache_[size_t(op.layer)].data(), limits_.max_seq,
                                op.kv_heads * op.head_dim};
      std::vector<int32_t> picks;
      const bool count = counting_ && !prefill && op.kind == OpKind::MoeMlp;
      if (count) a.picks = &picks;
      cpu::run_op(g_, op, bind.ops.empty() ? cpu::OpBinding{} : bind.ops[i], a);
      if (count) {  // the step's union of picks in this layer
        std::sort(picks.begin(), picks.end());
        reads_.experts += int64_t(std::unique(picks.begin(), picks.end()) - picks.begin());
        ++reads_.layer_steps;
      }
      release_inputs();
    }
    logits_ = std::move(vals[size_t(g_.logits)]);
  }

  // The plan's family bindings per op and phase (validated against this graph).
  void bind_plan(const Plan& plan) {
    for (PhaseBinding* pb : {&decode_, &prefill_}) {
      pb->ops.assign(g_.ops.size(), cpu::OpBinding{});
      pb->fused_at.assign(g_.ops.size(), -1);
      pb->skipped.assign(g_.ops.size(), 0);
      pb->claimed.assign(g_.ops.size(), "");
    }
    for (size_t i = 0; i < g_.ops.size(); ++i) index_[g_.ops[i].name] = i;
    for (const PlanRoute& r : plan.routes) {
      if (r.route == "fallback") continue;
      const std::string subject = "plan route " + r.region + " " + r.phase;
      PhaseBinding& pb = r.phase == "decode" ? decode_ : prefill_;
      if (r.route == "fused") {
        bind_fused(r, subject, pb);
        continue;
      }
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
        const size_t i = op_index(subject, name);
        const OpKind k = g_.ops[i].kind;
        const bool fits = b.kind == cpu::OpBinding::Kind::LinearBlocked ? (k == OpKind::Linear || k == OpKind::Logits)
                                                                         : k == OpKind::Attention;
        if (!fits) throw_input(subject, r.family + " cannot run op " + json_quote(name));
        claim(pb, i, subject);
        pb.ops[i] = b;
      }
    }
  }

 private:
  bool counting_ = false;
  ExpertReads reads_;
  // A layer MLP span run by mlp.fused (spans_[span]) with its weights and parameters.
  struct FusedRun {
    size_t span = 0;
    cpu::MlpWeights weights;
    cpu::MlpFusedParams params;
  };
  // One phase's bindings, per op; empty: reference ops everywhere.
  struct PhaseBinding {
    std::vector<cpu::OpBinding> ops;
    std::vector<int> fused_at;        // the span's first op: index into fused; else -1
    std::vector<char> skipped;        // the span's other ops: the fused kernel computed them
    std::vector<FusedRun> fused;
    std::vector<std::string> claimed;  // the route that binds each op (plan checks)
  };

  size_t op_index(const std::string& subject, const std::string& name) const {
    auto it = index_.find(name);
    if (it == index_.end()) throw_input(subject, "names op " + json_quote(name) + ", which this model does not have");
    return it->second;
  }
  void claim(PhaseBinding& pb, size_t op, const std::string& subject) {
    if (!pb.claimed[op].empty())
      throw_input(subject, "op " + json_quote(g_.ops[op].name) + " is bound by " + pb.claimed[op] + " too");
    pb.claimed[op] = subject;
  }

  // A fused route's ops must be whole layer MLP spans (every op of mlp_in and mlp_out of each
  // layer it touches, nothing else), and its instances those layers' two regions.
  void bind_fused(const PlanRoute& r, const std::string& subject, PhaseBinding& pb) {
    if (r.family != "cpu:mlp.fused") throw_input(subject, "family " + json_quote(r.family) + " is not a CPU fused family");
    cpu::MlpFusedParams params;
    try {
      params = cpu::mlp_fused_params(r.params);
    } catch (const Error& e) {
      throw_input(subject, e.reason());
    }
    if (spans_.empty()) spans_ = cpu::mlp_spans(g_);
    std::map<size_t, size_t> span_of_op;
    for (size_t s = 0; s < spans_.size(); ++s)
      for (int op : spans_[s].ops) span_of_op[size_t(op)] = s;
    std::map<size_t, std::set<size_t>> named;  // span -> its ops the route names
    for (const std::string& name : r.ops) {
      const size_t i = op_index(subject, name);
      auto it = span_of_op.find(i);
      if (it == span_of_op.end())
        throw_input(subject, "fused route names op " + json_quote(name) + ", which is not in a layer's MLP (mlp_in + mlp_out)");
      if (!named[it->second].insert(i).second) throw_input(subject, "fused route names op " + json_quote(name) + " twice");
    }
    if (named.empty()) throw_input(subject, "fused route names no ops");
    std::set<std::string> want_instances;
    for (const auto& [s, ops] : named) {
      const cpu::MlpSpan& sp = spans_[s];
      for (int op : sp.ops)
        if (!ops.count(size_t(op)))
          throw_input(subject, "fused route does not cover layer " + std::to_string(sp.layer) + "'s whole MLP span (" +
                                   json_quote(g_.ops[size_t(op)].name) + " is missing)");
      const std::string l = "layers." + std::to_string(sp.layer) + ".";
      want_instances.insert(l + "mlp_in");
      want_instances.insert(l + "mlp_out");
    }
    if (std::set<std::string>(r.instances.begin(), r.instances.end()) != want_instances || r.instances.size() != want_instances.size())
      throw_input(subject, "fused route instances do not match its ops (expected mlp_in and mlp_out of the layers it names)");
    for (const auto& [s, ops] : named) {
      const cpu::MlpSpan& sp = spans_[s];
      for (int op : sp.ops) {
        claim(pb, size_t(op), subject);
        pb.skipped[size_t(op)] = op != sp.ops.front();
      }
      pb.fused_at[size_t(sp.ops.front())] = int(pb.fused.size());
      const auto f32_of = [&](const TensorInfo* t) { return weights_.at(t).data(); };
      pb.fused.push_back({s, cpu::mlp_span_weights(g_, sp, f32_of), params});
    }
  }

  const Graph& g_;
  ExecutorLimits limits_;
  std::vector<int> last_use_;
  std::map<const TensorInfo*, std::vector<float>> weights_;
  std::vector<std::vector<const float*>> op_weights_;  // per op: its weights in weights_, op.weights order
  std::vector<float> inv_freq_;
  std::vector<std::vector<float>> k_cache_, v_cache_;  // [layer][slot][pos][kv_dim]
  std::vector<float> logits_;
  std::map<std::string, size_t> index_;  // op name -> index
  std::vector<cpu::MlpSpan> spans_;      // layer MLP spans, found when a plan fuses them
  PhaseBinding decode_, prefill_;
};

}  // namespace

std::unique_ptr<Executor> make_cpu_executor(const Graph& graph, const ExecutorLimits& limits, const Plan* plan) {
  auto ex = std::make_unique<CpuExecutor>(graph, limits);
  if (plan) ex->bind_plan(*plan);
  return ex;
}

}  // namespace ac
