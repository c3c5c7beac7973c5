// The CUDA fast path's search (search_eval.h). Modelled on tools/kernel_sweep (the GEMV
// measurement) but staged and recorded like every other candidate.
#include "backends/cuda/search_eval.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "agentcompile/backends/cpu/ref_ops.h"
#include "agentcompile/core/error.h"
#include "agentcompile/core/hash.h"
#include "agentcompile/core/rng.h"
#include "agentcompile/core/threads.h"
#include "agentcompile/model/model.h"
#include "backends/cuda/device.h"
#include "backends/cuda/fast_executor.h"
#include "backends/cuda/kernel_loader.h"
#include "backends/cuda/plan_config.h"

extern "C" {
#include "../../../kernels/cuda/common/params.h"
}

namespace ac {

namespace {

using namespace ac::cuda;


struct Slot {
  RegionKind kind;
  const char* name;
  int epi;
  bool norm;
};
constexpr Slot kSlots[] = {{RegionKind::AttnIn, "qkv", kEpiStore, true},
                           {RegionKind::AttnOut, "o", kEpiResidual, false},
                           {RegionKind::MlpIn, "gate_up", kEpiSwiglu, true},
                           {RegionKind::MlpOut, "down", kEpiResidual, false},
                           {RegionKind::Head, "lm_head", kEpiArgmax, true}};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Random 16-bit weights in the model's dtype (bf16 or f16).
std::vector<uint16_t> random_w16(size_t n, uint64_t seed, float scale, float offset, DType wt) {
  Rng r(seed);
  std::vector<uint16_t> v(n);
  for (size_t i = 0; i < n; ++i) store_from_f32(v.data(), wt, i, offset + scale * r.normal());
  return v;
}
std::vector<float> widen(const std::vector<uint16_t>& v, DType wt) {
  std::vector<float> f(v.size());
  for (size_t i = 0; i < v.size(); ++i) f[i] = load_as_f32(v.data(), wt, i);
  return f;
}

GemvChoice default_choice(const char* slot) {
  const FastConfig d;
  const std::string s = slot;
  return s == "qkv" ? d.qkv : s == "o" ? d.o : s == "gate_up" ? d.gate_up : s == "down" ? d.down : d.lm_head;
}

// ---- GEMV slots ----

class GemvEvaluator final : public Evaluator {
 public:
  GemvEvaluator(const Slot& slot, long long N, long long K, int batch, DType wt)
      : slot_(slot), N_(N), K_(K), batch_(batch), wt_(wt) {}
  std::string backend() const override { return "cuda"; }
  std::string timing_method() const override {
    return "CUDA events around a CUDA graph of 24 back-to-back launches (programmatic dependent launch) rotating "
           "over weight copies totalling >= 160 MB (L2 defeated); median of the replays per launch";
  }

  void begin(const RegionWork&) override {
    if (ready_) return;
    Device& dev = Device::get();
    arch_ = dev.info().arch();
    const CUstream s = dev.stream();
    mats_ = slot_.epi == kEpiSwiglu ? 2 : 1;
    const double bytes = double(N_) * double(K_) * 2 * mats_;
    copies_ = std::max(1, int(std::ceil(160e6 / bytes)));
    w0_ = random_w16(size_t(N_ * K_), 1, 0.03f, 0.0f, wt_);
    w1_ = random_w16(size_t(N_ * K_), 2, 0.03f, 0.0f, wt_);
    for (int i = 0; i < copies_ * mats_; ++i) {
      w_.emplace_back(size_t(N_ * K_) * 2);  // [N, K] bf16/f16
      w_.back().upload(i % mats_ == 0 ? w0_.data() : w1_.data(), w0_.size() * 2, s);
    }
    gamma_ = random_w16(size_t(K_), 3, 0.1f, 1.0f, wt_);
    dx_ = DeviceBuffer(size_t(batch_ * K_) * 4);    // [B, K] f32
    dg_ = DeviceBuffer(size_t(K_) * 2);             // [K] bf16/f16
    out_ = DeviceBuffer(size_t(batch_ * N_) * 4);   // [B, N] f32
    pv_ = DeviceBuffer(1 << 22);
    pi_ = DeviceBuffer(1 << 22);
    counter_ = DeviceBuffer(4);
    tok_ = DeviceBuffer(size_t(batch_) * 4);
    dg_.upload(gamma_.data(), gamma_.size() * 2, s);
    counter_.fill_u32(0, s);
    ready_ = true;
  }

  Variant variant(const Candidate& c) const {
    GemvChoice ch = default_choice(slot_.name);
    if (!c.params.empty()) ch = GemvChoice{c.params.at("BLOCK"), c.params.at("ROWS"), c.params.at("UNROLL"), c.params.at("SPLITK")};
    return fast_gemv_variant(ch, slot_.epi, batch_, wt_, arch_);  // as the executor launches it
  }

  std::string compile(const Candidate& c) override {
    const Variant v = variant(c);
    const JitResult r = jit_compile(JitRequest{v.name(), v.source(), arch_, {}});
    if (!r.ok) return "NVRTC: " + r.error;
    if (r.spill_bytes > 0) return "spills " + std::to_string(r.spill_bytes) + " bytes";
    return "";
  }

  GemvParams params(int copy) const {
    return GemvParams{dx_.as<float>(), slot_.norm ? reinterpret_cast<const void*>(dg_.ptr()) : nullptr, 1e-6f,
                      reinterpret_cast<const void*>(w_[size_t(copy * mats_)].ptr()),
                      mats_ == 2 ? reinterpret_cast<const void*>(w_[size_t(copy * mats_ + 1)].ptr()) : nullptr, nullptr,
                      out_.as<float>(), pv_.as<float>(), pi_.as<int>(), counter_.as<unsigned>(), tok_.as<int>(),
                      batch_, N_, K_};
  }

  CorrectnessResult check(const Candidate& c) override {
    CorrectnessResult r;
    const Variant v = variant(c);
    const LoadedKernel& k = load_kernel(v);
    const LaunchShape ls = gemv_launch_shape(v, N_, K_);
    const CUstream s = Device::get().stream();
    const std::vector<float> wf = widen(w0_, wt_), wf2 = mats_ == 2 ? widen(w1_, wt_) : std::vector<float>(),
                             gf = widen(gamma_, wt_);
    for (uint64_t seed : {7u, 8u}) {
      Rng rng(seed);
      std::vector<float> x(size_t(batch_ * K_)), xn(x.size()), y(size_t(batch_ * N_)), y2(y.size()), want(y.size()),
          resid(y.size(), 0.0f);
      for (auto& e : x) e = rng.normal();
      if (slot_.norm) cpu::rms_norm(x.data(), batch_, K_, gf.data(), 1e-6f, xn.data());
      else xn = x;
      cpu::linear(xn.data(), batch_, K_, wf.data(), nullptr, N_, y.data());
      want = y;
      if (slot_.epi == kEpiSwiglu) {
        cpu::linear(xn.data(), batch_, K_, wf2.data(), nullptr, N_, y2.data());
        cpu::swiglu(y.data(), y2.data(), batch_ * N_, want.data());
      }
      dx_.upload(x.data(), x.size() * 4, s);
      if (slot_.epi == kEpiResidual) {  // the residual epilogue adds into out: seed it, expect y + residual
        for (size_t i = 0; i < resid.size(); ++i) resid[i] = rng.normal();
        for (size_t i = 0; i < want.size(); ++i) want[i] += resid[i];
        out_.upload(resid.data(), resid.size() * 4, s);
      } else {
        out_.fill_u32(0x7fc00000u, s);  // NaN poison
      }
      GemvParams p = params(0);
      launch_kernel(k, Dim3{ls.grid_x, ls.grid_y}, ls.threads, ls.smem, s, &p, false);
      std::vector<float> got(want.size());
      out_.download(got.data(), got.size() * 4, s);
      Device::get().synchronize();
      double num = 0, den = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        if (std::isnan(got[i])) {
          r.reason = "NaN or element not written at " + std::to_string(i);
          return r;
        }
        num += double(got[i] - want[i]) * double(got[i] - want[i]);
        den += double(want[i]) * double(want[i]);
      }
      const double err = std::sqrt(num / std::max(den, 1e-30));
      r.rel_err = std::max(r.rel_err, err);
      ++r.checks;
      // f32 activations and accumulation over bf16 weights: the f32 bound applies.
      if (!(err <= 1e-5)) {
        r.reason = "relative L2 error " + std::to_string(err) + " exceeds 1e-5 (seed " + std::to_string(seed) + ")";
        return r;
      }
    }
    r.ok = true;
    return r;
  }

  TimingResult time(const Candidate& c, int warmup, int repeats) override {
    TimingResult t;
    const Variant v = variant(c);
    const LoadedKernel& k = load_kernel(v);
    const LaunchShape ls = gemv_launch_shape(v, N_, K_);
    constexpr int kLaunches = 24;
    const CUstream s = Device::get().stream();
    std::vector<GemvParams> ps;
    for (int i = 0; i < copies_; ++i) ps.push_back(params(i));
    auto launch = [&](int i) { launch_kernel(k, Dim3{ls.grid_x, ls.grid_y}, ls.threads, ls.smem, s, &ps[size_t(i % copies_)], true); };
    for (int i = 0; i < std::max(1, warmup); ++i) launch(i);
    Device::get().synchronize();
    CUgraph g;
    CU_CHECK(drv().cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    for (int i = 0; i < kLaunches; ++i) launch(i);
    CU_CHECK(drv().cuStreamEndCapture(s, &g));
    CUgraphExec exec;
    CU_CHECK(drv().cuGraphInstantiateWithFlags(&exec, g, 0));
    EventTimer timer;
    for (int r = 0; r < repeats + 1; ++r) {
      timer.start(s);
      CU_CHECK(drv().cuGraphLaunch(exec, s));
      const double ms = timer.stop_ms(s);
      if (r > 0) t.samples_us.push_back(ms * 1000.0 / kLaunches);
    }
    drv().cuGraphExecDestroy(exec);
    drv().cuGraphDestroy(g);
    t.median_us = median(t.samples_us);
    t.ok = t.median_us > 0;
    return t;
  }

 private:
  Slot slot_;
  long long N_, K_;
  int batch_;
  DType wt_;
  bool ready_ = false;
  std::string arch_;
  int mats_ = 1, copies_ = 1;
  std::vector<uint16_t> w0_, w1_, gamma_;
  std::vector<DeviceBuffer> w_;
  DeviceBuffer dx_, dg_, out_, pv_, pi_, counter_, tok_;
};

// ---- attention parameters, through whole decode steps ----

class AttentionEvaluator final : public Evaluator {
 public:
  AttentionEvaluator(const Graph& g, int context) : g_(g), context_(context) {}
  std::string backend() const override { return "cuda"; }
  std::string timing_method() const override {
    return "wall clock of whole decode steps (batch 1) of a fast executor with the candidate's attention "
           "parameters after a prefill of the summary's context; median of the repeats";
  }
  void begin(const RegionWork&) override {
    if (!want_.empty()) return;
    want_ = decode_logits(executor(Candidate{"cuda:fallback", {}}));
  }
  FastConfig config(const Candidate& c) const {
    FastConfig cfg;
    if (c.params.empty()) return cfg;
    cfg.attn_block = c.params.at("BLOCK");
    if (c.params.count("TILE")) cfg.attn_tile = c.params.at("TILE");  // older records (the split family)
    cfg.attn_split = c.params.at("SPLIT");
    return cfg;
  }
  // One executor per candidate (weights upload and graph capture are its cost): the check and
  // the timing of a candidate share it.
  Executor& executor(const Candidate& c) {
    if (!ex_ || ex_name_ != c.name()) {
      ex_.reset();
      ExecutorLimits lim{1, context_ + 64, context_, 1};
      ex_ = make_fast_executor(g_, lim, config(c));
      ex_name_ = c.name();
    }
    return *ex_;
  }
  std::string compile(const Candidate& c) override {
    // Every variant the config launches must build (NVRTC, no launch).
    const DType wt = g_.ops.front().weights.at(0)->dtype;
    for (const Variant& v : fast_path_variants(g_.config, wt, config(c), Device::get().info().arch())) {
      const JitResult r = jit_compile(JitRequest{v.name(), v.source(), v.arch, {}});
      if (!r.ok) return v.name() + ": " + r.error;
    }
    return "";
  }
  std::vector<float> decode_logits(Executor& ex) const {
    StepBatch pre;
    for (int i = 0; i < context_; ++i) {
      pre.tokens.push_back(int32_t((i * 7919) % g_.config.vocab_size));
      pre.positions.push_back(i);
      pre.slots.push_back(0);
    }
    pre.logit_rows = {context_ - 1};
    ex.forward(pre);
    StepBatch d{{3}, {context_}, {0}, {0}};
    ex.forward(d);
    return std::vector<float>(ex.logits(), ex.logits() + g_.config.vocab_size);
  }
  CorrectnessResult check(const Candidate& c) override {
    CorrectnessResult r;
    const std::vector<float> got = decode_logits(executor(c));
    double num = 0, den = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      if (!std::isfinite(got[i])) {
        r.reason = "non-finite logit";
        return r;
      }
      num += double(got[i] - want_[i]) * double(got[i] - want_[i]);
      den += double(want_[i]) * double(want_[i]);
    }
    r.rel_err = std::sqrt(num / std::max(den, 1e-30));
    r.checks = 1;
    r.ok = r.rel_err <= 1e-2;
    if (!r.ok) r.reason = "logits differ from the default configuration: relative L2 " + std::to_string(r.rel_err);
    return r;
  }
  TimingResult time(const Candidate& c, int warmup, int repeats) override {
    TimingResult t;
    Executor* ex = &executor(c);
    decode_logits(*ex);
    int pos = context_ + 1;
    for (int i = 0; i < warmup + repeats && pos < context_ + 63; ++i, ++pos) {
      StepBatch d{{5}, {pos}, {0}, {0}};
      const auto t0 = Clock::now();
      ex->forward(d);
      std::vector<int32_t> tok;
      if (!ex->argmax_rows(tok)) (void)ex->logits();
      const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
      if (i >= warmup) t.samples_us.push_back(us);
    }
    t.median_us = median(t.samples_us);
    t.ok = t.median_us > 0;
    return t;
  }

 private:
  const Graph& g_;
  int context_;
  std::vector<float> want_;
  std::unique_ptr<Executor> ex_;
  std::string ex_name_;
};

// A region work whose space is one CUDA family (plus the fallback), built from the front's
// summary of that region, then advised like any other.
RegionWork fast_work(const RegionWork& base, const std::string& family_id, const std::vector<SpaceParam>& params,
                     std::function<std::string(const ParamPoint&)> constraint, Advisor& advisor,
                     std::vector<MeasuredCandidate> history) {
  RegionWork w;
  w.class_index = base.class_index;
  w.summary = base.summary;
  w.space.signature = base.summary.signature;
  w.space.kind = base.summary.kind;
  w.space.phase = base.summary.phase;
  w.space.backend = "cuda";
  FamilySpace fb;
  fb.id = "cuda:fallback";
  fb.backend = "cuda";
  fb.route = FamilyRoute::Fallback;
  fb.family = "fallback";
  fb.description = "the fast path's default parameters (FastConfig)";
  w.space.families.push_back(fb);
  FamilySpace f;
  f.id = family_id;
  f.backend = "cuda";
  f.route = FamilyRoute::Region;
  f.op = std::string(region_kind_name(base.summary.kind));
  f.family = family_id.substr(family_id.find('.') + 1);
  f.params = params;
  f.constraint = std::move(constraint);
  f.rules = {"the family's constraint (registers, shared memory, divisibility) at this region's shape"};
  size_t raw = 1;
  for (const auto& p : params) raw *= p.values.size();
  f.raw_points = raw;
  f.valid_points = count_points(f);
  w.space.families.push_back(f);
  AdvisorRequest req{&w.summary, &w.space, std::move(history)};
  w.prompt = build_prompt(req);
  w.advice = advisor.advise(req);
  w.ordered = ordered_candidates(w.space, w.advice.advice);
  return w;
}

}  // namespace

CudaFastSearch search_cuda_fast(const Model& m, const Graph& g, const FrontResult& front, Advisor& advisor,
                                TuningDb& db, const Environment& env, const SearchOptions& so, int batch,
                                Clock::time_point deadline, const std::function<void(const CandidateOutcome&)>& on_candidate) {
  CudaFastSearch out;
  if (std::string why = fast_path_unsupported(g); !why.empty()) {
    out.notes.push_back("the CUDA fast path cannot run this model (" + why + "): the plan uses the library route");
    return out;
  }
  const ModelConfig& c = g.config;
  const Family& gemv = find_family("gemv", "fused");
  std::vector<std::unique_ptr<Evaluator>> evs;
  std::vector<const RegionWork*> decode;
  for (const auto& w : front.work)
    if (w.summary.phase == Phase::Decode) decode.push_back(&w);
  const size_t total = std::size(kSlots) + 1;
  size_t done = 0;
  auto share = [&]() {
    const auto now = Clock::now();
    return now < deadline ? now + (deadline - now) / long(total - done) : now;
  };
  for (const Slot& slot : kSlots) {
    const RegionWork* base = nullptr;
    for (const RegionWork* w : decode)
      if (w->summary.kind == slot.kind) base = w;
    if (!base) continue;
    const long long qkvd = c.q_dim() + 2 * c.kv_dim();
    const long long N = slot.kind == RegionKind::AttnIn ? qkvd
                        : slot.kind == RegionKind::AttnOut || slot.kind == RegionKind::MlpOut ? c.hidden_size
                        : slot.kind == RegionKind::MlpIn ? c.intermediate_size : c.vocab_size;
    const long long K = slot.kind == RegionKind::AttnOut ? c.q_dim()
                        : slot.kind == RegionKind::MlpOut ? c.intermediate_size : c.hidden_size;
    std::vector<SpaceParam> params;
    for (const auto& d : gemv.params)
      if (d.name != "BATCH" && d.name != "EPI") params.push_back({d.name, d.values});
    const int epi = slot.epi;
    auto constraint = [&gemv, epi, batch](const ParamPoint& p) -> std::string {
      if (p.at("SPLITK") > 1 && epi != kEpiResidual) return "split-K needs the residual epilogue";
      std::map<std::string, int> v(p.begin(), p.end());
      v["BATCH"] = batch;
      v["EPI"] = epi;
      return gemv.constraint ? gemv.constraint(v) : std::string();
    };
    out.works.push_back(fast_work(*base, "cuda:gemv.fused", params, constraint, advisor,
                                  measured_history(db, env, base->summary.signature, "cuda")));
    evs.push_back(std::make_unique<GemvEvaluator>(slot, N, K, batch, g.ops.front().weights.at(0)->dtype));
    out.searches.push_back(search_region(out.works.back(), *evs.back(), &db, env, so, share(), on_candidate));
    ++done;
  }
  for (const RegionWork* w : decode)
    if (w->summary.kind == RegionKind::Attention) {
      // The decode step runs the fused kernel: its BLOCK and SPLIT are the space (the prefill
      // attention's TILE stays at its default; it does not run in a decode step).
      const Family& attn = find_family("attn_decode", "fused");
      const int hd = int(c.head_dim), group = int(c.num_heads / c.num_kv_heads);
      std::vector<SpaceParam> params;
      for (const auto& d : attn.params)
        if (d.name == "BLOCK" || d.name == "SPLIT") params.push_back({d.name, d.values});
      auto constraint = [&attn, hd, group](const ParamPoint& p) -> std::string {
        std::map<std::string, int> v(p.begin(), p.end());
        v["HD"] = hd;
        v["GROUP"] = group;
        return attn.constraint ? attn.constraint(v) : std::string();
      };
      out.works.push_back(fast_work(*w, "cuda:attn_decode.fused", params, constraint, advisor,
                                    measured_history(db, env, w->summary.signature, "cuda")));
      evs.push_back(std::make_unique<AttentionEvaluator>(g, int(std::min<int64_t>(w->summary.point.context, c.max_position_embeddings - 64))));
      out.searches.push_back(search_region(out.works.back(), *evs.back(), &db, env, so, share(), on_candidate));
      ++done;
      break;
    }
  (void)m;
  return out;
}

std::vector<PlanKernelBinary> cuda_plan_kernels(const Graph& g, const PlanCudaFast& fast, const std::string& arch) {
  std::vector<PlanKernelBinary> out;
  const DType wt = g.ops.front().weights.at(0)->dtype;
  std::vector<Variant> vs = fast_path_variants(g.config, wt, fast_config_of(fast), arch);
  std::vector<JitResult> rs(vs.size());
  parallel_for(vs.size(), 1, [&](size_t b, size_t e) {  // NVRTC in parallel threads
    for (size_t i = b; i < e; ++i) rs[i] = jit_compile(JitRequest{vs[i].name(), vs[i].source(), arch, {}});
  });
  std::set<std::string> seen;
  for (size_t i = 0; i < vs.size(); ++i) {
    if (!rs[i].ok) throw_input("plan kernels", vs[i].name() + " does not compile: " + rs[i].error);
    if (!seen.insert(vs[i].name()).second) continue;
    PlanKernelBinary k;
    k.kernel.name = vs[i].name();
    k.kernel.file = "kernels/" + vs[i].name() + ".cubin";
    k.kernel.sha256 = sha256_hex(rs[i].cubin);
    k.bytes = rs[i].cubin;
    out.push_back(std::move(k));
  }
  return out;
}

PlanCudaFast cuda_fast_from_routes(const std::vector<PlanRoute>& routes) {
  FastConfig cfg;
  for (const auto& r : routes) {
    if (r.phase != "decode" || r.params.empty()) continue;
    if (r.family == "cuda:gemv.fused") {
      const GemvChoice ch{r.params.at("BLOCK"), r.params.at("ROWS"), r.params.at("UNROLL"), r.params.at("SPLITK")};
      for (const Slot& s : kSlots)
        if (region_kind_name(s.kind) == r.region) {
          const std::string n = s.name;
          (n == "qkv" ? cfg.qkv : n == "o" ? cfg.o : n == "gate_up" ? cfg.gate_up : n == "down" ? cfg.down : cfg.lm_head) = ch;
        }
    } else if (r.family == "cuda:attn_decode.fused" || r.family == "cuda:attn_decode.split") {
      cfg.attn_block = r.params.at("BLOCK");
      if (r.params.count("TILE")) cfg.attn_tile = r.params.at("TILE");
      cfg.attn_split = r.params.at("SPLIT");
    }
  }
  return plan_fast_of(cfg);
}

}  // namespace ac
