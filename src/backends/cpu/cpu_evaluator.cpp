// The CPU evaluator: a region's ops run through cpu::run_op, the candidate's family on the steps
// it applies to and the reference ops elsewhere (exactly what the CPU executor runs for a plan).
// A fused span (RegionTask::span_instances) runs as the merged steps of its regions, or with a
// fused candidate as one cpu::mlp_fused call, as the executor runs a fused route.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <map>
#include <optional>

#include "agentcompile/backends/cpu/op_runner.h"
#include "agentcompile/backends/cpu/cpu_evaluator.h"
#include "agentcompile/core/error.h"
#include "agentcompile/core/rng.h"
#include "agentcompile/ir/rope.h"

namespace ac {

namespace {

constexpr float kPoison = std::numeric_limits<float>::quiet_NaN();

// One shape the region is run at: tokens of the step and where each sits in the cache.
struct StepShape {
  std::vector<int32_t> tokens, positions, slots, logit_rows;
  int64_t max_seq = 1;
  int slots_used = 1;
};

StepShape decode_shape(int64_t batch, int64_t context, int64_t ragged_step) {
  StepShape s;
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t ctx = std::max<int64_t>(1, context - b * ragged_step);
    s.positions.push_back(int32_t(ctx - 1));
    s.slots.push_back(int32_t(b));
    s.logit_rows.push_back(int32_t(b));
    s.max_seq = std::max(s.max_seq, ctx);
  }
  s.tokens.assign(size_t(batch), 0);
  s.slots_used = int(batch);
  return s;
}

StepShape prefill_shape(int64_t tokens) {
  StepShape s;
  for (int64_t t = 0; t < tokens; ++t) {
    s.positions.push_back(int32_t(t));
    s.slots.push_back(0);
  }
  s.logit_rows.push_back(int32_t(tokens - 1));
  s.tokens.assign(size_t(tokens), 0);
  s.max_seq = tokens;
  return s;
}

// What a candidate runs: a binding per step, or one fused kernel for the whole span.
struct Binding {
  std::vector<cpu::OpBinding> steps;
  std::optional<cpu::MlpFusedParams> fused;
};

struct RegionRun {
  std::map<int, std::vector<float>> values;   // value id -> [rows, width]
  std::vector<int32_t> tokens;                // token ids (embed)
  std::vector<std::vector<float>> k, v;       // per layer touched: cache
};

class CpuEvaluator final : public Evaluator {
 public:
  CpuEvaluator(const Graph& g, const Partition& p) : g_(g), part_(p) {
    inv_freq_ = rope_inv_freq(g.config.rope, g.config.head_dim);
  }
  std::string backend() const override { return "cpu"; }
  std::string timing_method() const override {
    return "wall clock of one run of the region's ops at the summary's shape point (steady_clock), after warm-up; "
           "median of the repeats; weights as the executor holds them (f32)";
  }

  void begin(const RegionTask& w) override {
    work_ = &w;
    region_ = &part_.regions.at(size_t(w.summary.representative));
    if (w.is_span()) begin_span(w.span_instances.front());
    for (const RegionStep& st : region_->steps)
      for (const TensorInfo* t : g_.ops.at(size_t(st.op)).weights)
        if (t && !weights_.count(t)) {
          std::vector<float> f(size_t(t->numel()));
          for (size_t i = 0; i < f.size(); ++i) f[i] = load_as_f32(t->data, t->dtype, i);
          weights_[t] = std::move(f);
        }
    const bool decode = w.summary.phase == Phase::Decode;
    const ShapePoint& pt = w.summary.point;
    checks_.clear();
    if (decode) {
      const int64_t ctx = std::min<int64_t>(pt.context, g_.config.max_position_embeddings);
      checks_.push_back(decode_shape(1, std::min<int64_t>(ctx, 37), 0));
      checks_.push_back(decode_shape(3, std::min<int64_t>(ctx, 70), 23));
      timing_ = decode_shape(pt.batch, ctx, 0);
    } else {
      const int64_t cap = g_.config.max_position_embeddings;
      checks_.push_back(prefill_shape(std::min<int64_t>(cap, 13)));
      checks_.push_back(prefill_shape(std::min<int64_t>(cap, 29)));
      timing_ = prefill_shape(std::min<int64_t>(cap, pt.tokens));
    }
    bound_ = work_->summary.numerics.activations == DType::F32 ? 1e-5 : 1e-2;
    timing_inputs_ = make_inputs(timing_, 777);
  }

  // No prepare(): CPU variants are built into the binary, so there is nothing to build ahead.
  std::string compile(const Candidate& c) override {
    // Binding the parameters is the compile step.
    bindings(c);
    return "";
  }

  CorrectnessResult check(const Candidate& c) override {
    CorrectnessResult r;
    r.ok = true;
    const auto bind = bindings(c);
    const Binding ref{std::vector<cpu::OpBinding>(region_->steps.size()), std::nullopt};
    for (uint64_t seed : {11u, 29u})
      for (size_t si = 0; si < checks_.size(); ++si) {
        const StepShape& sh = checks_[si];
        const RegionRun in = make_inputs(sh, seed * 1000 + si);
        RegionRun want = in, got = in;
        run(sh, ref, want);
        run(sh, bind, got);
        ++r.checks;
        for (const auto& [vid, wv] : want.values) {
          if (!is_output(vid)) continue;
          const std::string what = g_.value(vid).name;
          const std::string where = " (seed " + std::to_string(seed) + ", " + std::to_string(sh.tokens.size()) + " tokens)";
          std::string why = compare(wv, got.values.at(vid), &r.rel_err);
          if (!why.empty()) return fail(r, what + ": " + why + where);
        }
        for (size_t l = 0; l < want.k.size(); ++l) {
          std::string why = compare(want.k[l], got.k[l], &r.rel_err);
          if (why.empty()) why = compare(want.v[l], got.v[l], &r.rel_err);
          if (!why.empty()) return fail(r, "KV cache: " + why + " (seed " + std::to_string(seed) + ")");
        }
      }
    return r;
  }

  TimingResult time(const Candidate& c, int warmup, int repeats) override {
    TimingResult t;
    const auto bind = bindings(c);
    RegionRun io = timing_inputs_;
    for (int i = 0; i < warmup; ++i) run(timing_, bind, io);
    for (int i = 0; i < repeats; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      run(timing_, bind, io);
      const auto t1 = std::chrono::steady_clock::now();
      t.samples_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    std::vector<double> s = t.samples_us;
    std::sort(s.begin(), s.end());
    t.median_us = s.empty() ? 0 : (s.size() % 2 ? s[s.size() / 2] : 0.5 * (s[s.size() / 2 - 1] + s[s.size() / 2]));
    t.ok = !s.empty();
    return t;
  }

 private:
  static CorrectnessResult fail(CorrectnessResult r, std::string why) {
    r.ok = false;
    r.reason = std::move(why);
    return r;
  }

  // Relative L2 error of got against want, NaN and unwritten (still poisoned) elements first.
  std::string compare(const std::vector<float>& want, const std::vector<float>& got, double* worst) const {
    if (want.size() != got.size()) return "output size differs";
    double num = 0, den = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      if (std::isnan(got[i]) && !std::isnan(want[i])) return "NaN or element not written at " + std::to_string(i);
      if (std::isnan(want[i])) continue;  // a cache row no one writes (outside the step)
      const double d = double(got[i]) - double(want[i]);
      num += d * d;
      den += double(want[i]) * double(want[i]);
    }
    const double err = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
    *worst = std::max(*worst, err);
    if (!(err <= bound_)) {
      char b[96];
      std::snprintf(b, sizeof b, "relative L2 error %.3g exceeds %.0e", err, bound_);
      return b;
    }
    return "";
  }

  bool is_output(int vid) const {
    return std::find(region_->outputs.begin(), region_->outputs.end(), vid) != region_->outputs.end();
  }

  // A span's regions as one region: their steps in order, the inputs from outside the span, the
  // outputs read after it; and the layer's MLP span with its weights for the fused kernel.
  void begin_span(const std::vector<int>& regions) {
    merged_ = Region{};
    merged_.name = part_.regions.at(size_t(regions.front())).name;
    std::set<int> written;
    int last_op = -1;
    for (int r : regions) {
      const Region& reg = part_.regions.at(size_t(r));
      for (int v : reg.inputs)
        if (!written.count(v) && std::find(merged_.inputs.begin(), merged_.inputs.end(), v) == merged_.inputs.end())
          merged_.inputs.push_back(v);
      for (const RegionStep& st : reg.steps) {
        merged_.steps.push_back(st);
        written.insert(g_.ops.at(size_t(st.op)).output);
        last_op = std::max(last_op, st.op);
      }
    }
    const std::vector<int> last = g_.last_uses();
    for (int v : written)
      if (last.at(size_t(v)) > last_op) merged_.outputs.push_back(v);
    region_ = &merged_;
    if (spans_.empty()) spans_ = cpu::mlp_spans(g_);
    const int layer = part_.regions.at(size_t(regions.front())).layer;
    auto it = std::find_if(spans_.begin(), spans_.end(), [&](const cpu::MlpSpan& s) { return s.layer == layer; });
    if (it == spans_.end()) throw_internal("cpu evaluator", merged_.name + ": no MLP span in layer " + std::to_string(layer));
    span_ = *it;
    have_mlp_weights_ = false;
  }

  // The binding of each step of the region for candidate c.
  Binding bindings(const Candidate& c) {
    Binding bind{std::vector<cpu::OpBinding>(region_->steps.size()), std::nullopt};
    std::vector<cpu::OpBinding>& out = bind.steps;
    const FamilySpace* f = work_->space.find(c.family);
    if (!f) throw_internal("cpu evaluator", c.family + " is not in the space");
    if (f->route == FamilyRoute::Fallback) return bind;
    if (f->route == FamilyRoute::Fused) {
      if (c.family != "cpu:mlp.fused" || !work_->is_span()) throw_internal("cpu evaluator", "no CPU implementation of " + c.family);
      bind.fused = cpu::mlp_fused_params(c.params);
      if (!have_mlp_weights_) {  // the span's steps' weights are loaded by begin
        mlp_weights_ = cpu::mlp_span_weights(g_, span_, [&](const TensorInfo* t) { return weights_.at(t).data(); });
        have_mlp_weights_ = true;
      }
      return bind;
    }
    cpu::OpBinding b;
    if (c.family == "cpu:linear.blocked") {
      b.kind = cpu::OpBinding::Kind::LinearBlocked;
      b.linear = cpu::linear_blocked_params(c.params);
    } else if (c.family == "cpu:attention.blocked") {
      b.kind = cpu::OpBinding::Kind::AttentionBlocked;
      b.attention = cpu::attention_blocked_params(c.params);
    } else {
      throw_internal("cpu evaluator", "no CPU implementation of " + c.family);
    }
    for (size_t i = 0; i < region_->steps.size(); ++i) {
      const RegionStep& st = region_->steps[i];
      const std::string name = g_.ops.at(size_t(st.op)).name;
      for (const auto& a : f->applies_to)
        if (name.size() >= a.size() && name.compare(name.size() - a.size(), a.size(), a) == 0 &&
            (name.size() == a.size() || name[name.size() - a.size() - 1] == '.') && st.role != StepRole::KvWrite)
          out[i] = b;
    }
    return bind;
  }

  // Fresh random region inputs, and a random KV cache for every layer the region touches with
  // the rows this step writes poisoned (so an unwritten row shows).
  RegionRun make_inputs(const StepShape& sh, uint64_t seed) const {
    Rng rng(seed);
    RegionRun r;
    const int64_t n = int64_t(sh.tokens.size());
    for (int64_t t = 0; t < n; ++t) r.tokens.push_back(int32_t(rng.next_u64() % uint64_t(g_.config.vocab_size)));
    for (int vid : region_->inputs) {
      std::vector<float>& v = r.values[vid];
      v.resize(size_t(n * g_.value(vid).width));
      for (auto& x : v) x = rng.normal();
    }
    const Op* attn = attention_op();
    if (attn) {
      const int64_t kv_dim = attn->kv_heads * attn->head_dim;
      const size_t elems = size_t(sh.slots_used) * size_t(sh.max_seq) * size_t(kv_dim);
      r.k.assign(1, std::vector<float>(elems));
      r.v.assign(1, std::vector<float>(elems));
      for (auto& x : r.k[0]) x = rng.normal();
      for (auto& x : r.v[0]) x = rng.normal();
      if (writes_cache())
        for (int64_t t = 0; t < n; ++t) {
          const size_t row = (size_t(sh.slots[size_t(t)]) * size_t(sh.max_seq) + size_t(sh.positions[size_t(t)])) * size_t(kv_dim);
          std::fill_n(r.k[0].begin() + long(row), kv_dim, kPoison);
          std::fill_n(r.v[0].begin() + long(row), kv_dim, kPoison);
        }
    }
    return r;
  }

  const Op* attention_op() const {
    for (const RegionStep& st : region_->steps)
      if (g_.ops.at(size_t(st.op)).kind == OpKind::Attention) return &g_.ops.at(size_t(st.op));
    return nullptr;
  }
  bool writes_cache() const {
    for (const RegionStep& st : region_->steps)
      if (st.role == StepRole::KvWrite || (st.role == StepRole::Whole && g_.ops.at(size_t(st.op)).kind == OpKind::Attention))
        return true;
    return false;
  }

  // Runs the region's steps, or the fused kernel; outputs are poisoned first.
  void run(const StepShape& sh, const Binding& b, RegionRun& io) const {
    const int64_t n = int64_t(sh.tokens.size());
    const int64_t rows = int64_t(sh.logit_rows.size());
    if (b.fused) {
      std::vector<float>& out = io.values[span_.out];
      out.assign(size_t(n * span_.hidden), kPoison);
      cpu::mlp_fused(io.values.at(span_.x).data(), io.values.at(span_.residual).data(), n, span_.hidden, span_.inter,
                     mlp_weights_, out.data(), *b.fused);
      return;
    }
    const std::vector<cpu::OpBinding>& bind = b.steps;
    for (size_t i = 0; i < region_->steps.size(); ++i) {
      const RegionStep& st = region_->steps[i];
      const Op& op = g_.ops.at(size_t(st.op));
      cpu::OpArgs a;
      for (size_t k = 0; k < op.inputs.size() && k < 3; ++k) {
        // The halves of attention read only their part: attend q, write k and v.
        if ((st.role == StepRole::Attend && k > 0) || (st.role == StepRole::KvWrite && k == 0)) continue;
        auto it = io.values.find(op.inputs[k]);
        if (it == io.values.end()) throw_internal("cpu evaluator", "value " + g_.value(op.inputs[k]).name + " not available");
        a.in[k] = it->second.data();
      }
      std::vector<const float*> all_w;
      for (const TensorInfo* t : op.weights) all_w.push_back(weights_.at(t).data());
      for (size_t k = 0; k < all_w.size() && k < 2; ++k) a.w[k] = all_w[k];
      a.all_w = &all_w;
      const int64_t width = g_.value(op.output).width;
      std::vector<float>* out = nullptr;
      if (st.role != StepRole::KvWrite) {
        out = &io.values[op.output];
        out->assign(size_t((op.kind == OpKind::Logits ? rows : n) * width), kPoison);
        a.out = out->data();
      }
      a.set_step(n, io.tokens.data(), sh.positions.data(), sh.slots.data(), sh.logit_rows.data(), rows, &inv_freq_);
      if (op.kind == OpKind::Attention)
        a.kv = ref::KvCacheView{io.k[0].data(), io.v[0].data(), sh.max_seq, op.kv_heads * op.head_dim};
      const cpu::AttentionPart part = st.role == StepRole::KvWrite ? cpu::AttentionPart::Write
                                      : st.role == StepRole::Attend ? cpu::AttentionPart::Attend
                                                                    : cpu::AttentionPart::Whole;
      cpu::run_op(g_, op, bind[i], a, part);
    }
  }

  const Graph& g_;
  const Partition& part_;
  const RegionTask* work_ = nullptr;
  const Region* region_ = nullptr;
  Region merged_;                     // a span's regions as one (region_ points here for spans)
  std::vector<cpu::MlpSpan> spans_;   // the graph's layer MLP spans, found for the first span
  cpu::MlpSpan span_;                 // the representative instance's
  cpu::MlpWeights mlp_weights_;
  bool have_mlp_weights_ = false;
  std::vector<float> inv_freq_;
  std::map<const TensorInfo*, std::vector<float>> weights_;
  std::vector<StepShape> checks_;
  StepShape timing_;
  RegionRun timing_inputs_;
  double bound_ = 1e-5;
};

}  // namespace

std::unique_ptr<Evaluator> make_cpu_evaluator(const Graph& g, const Partition& part) {
  return std::make_unique<CpuEvaluator>(g, part);
}

}  // namespace ac
