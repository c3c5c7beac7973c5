// The CUDA fast path's search (search_eval.h). Modelled on tools/kernel_sweep (the GEMV
// measurement) but staged and recorded like every other candidate.
#include "backends/cuda/search_eval.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "agentcompile/tuning/reference_ops.h"
#include "agentcompile/core/error.h"
#include "agentcompile/core/hash.h"
#include "agentcompile/core/rng.h"
#include "agentcompile/core/stats.h"
#include "agentcompile/core/threads.h"
#include "agentcompile/ir/rope.h"
#include "agentcompile/model/fp8_quantize.h"
#include "agentcompile/model/model.h"
#include "backends/cuda/device.h"
#include "backends/cuda/fast/prefill_tiles.h"
#include "backends/cuda/fast/variants.h"
#include "backends/cuda/fast_executor.h"
#include "backends/cuda/gemm16.h"
#include "backends/cuda/kernel_loader.h"
#include "backends/cuda/plan_config.h"
#include "backends/cuda/search_build.h"
#include "backends/cuda/search_util.h"

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

// Times `run(i)` the way a decode step runs it: `launches` back-to-back launches (programmatic
// dependent launch) captured in one CUDA graph, replayed repeats + 1 times between CUDA events
// (the first replay discarded); a sample is a replay's time per launch.
TimingResult time_graph(int launches, int warmup, int repeats, const std::function<void(int)>& run) {
  TimingResult t;
  const CUstream s = Device::get().stream();
  for (int i = 0; i < std::max(1, warmup); ++i) run(i);
  Device::get().synchronize();
  CUgraph g;
  CU_CHECK(drv().cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  for (int i = 0; i < launches; ++i) run(i);
  CU_CHECK(drv().cuStreamEndCapture(s, &g));
  CUgraphExec exec;
  CU_CHECK(drv().cuGraphInstantiateWithFlags(&exec, g, 0));
  EventTimer timer;
  for (int r = 0; r < repeats + 1; ++r) {
    timer.start(s);
    CU_CHECK(drv().cuGraphLaunch(exec, s));
    const double ms = timer.stop_ms(s);
    if (r > 0) t.samples_us.push_back(ms * 1000.0 / launches);
  }
  drv().cuGraphExecDestroy(exec);
  drv().cuGraphDestroy(g);
  t.median_us = median(t.samples_us);
  t.ok = t.median_us > 0;
  return t;
}


// ---- GEMV slots ----

class GemvEvaluator final : public Evaluator {
 public:
  // mma: the region runs gemv.mma at this batch (the executor's choice), so its points are searched.
  // fp8: the region's weights are FP8 with this scale layout (gemv.fp8's points are searched, or
  // with mma gemv.mma_fp8's, over e4m3 codes and scales; the answer from their dequantized values).
  GemvEvaluator(const Slot& slot, long long N, long long K, int batch, DType wt, bool mma, Fp8Scales fp8)
      : slot_(slot), N_(N), K_(K), batch_(batch), wt_(wt), mma_(mma), fp8_(fp8) {}
  std::string backend() const override { return "cuda"; }
  std::string timing_method() const override {
    return "CUDA events around a CUDA graph of 24 back-to-back launches (programmatic dependent launch) rotating "
           "over weight copies totalling >= 160 MB (L2 defeated); median of the replays per launch";
  }

  void begin(const RegionTask&) override {
    if (ready_) return;
    Device& dev = Device::get();
    arch_ = dev.info().arch();
    const CUstream s = dev.stream();
    mats_ = slot_.epi == kEpiSwiglu ? 2 : 1;
    const bool fp8 = fp8_ != Fp8Scales::None;
    const size_t wbytes = size_t(N_ * K_) * (fp8 ? 1 : 2);  // [N, K] e4m3 or bf16/f16
    copies_ = std::max(1, int(std::ceil(160e6 / double(wbytes * size_t(mats_)))));
    w0_ = random_w16(size_t(N_ * K_), 1, 0.03f, 0.0f, wt_);
    if (mats_ == 2) w1_ = random_w16(size_t(N_ * K_), 2, 0.03f, 0.0f, wt_);  // the up half of SwiGLU only
    // The reference's f32 weights, once for all candidates (1 GB for a 128K-vocabulary LM head):
    // the 16-bit weights, or what the FP8 codes and scales of them dequantize to.
    wf_ = widen(w0_, wt_);
    if (mats_ == 2) wf2_ = widen(w1_, wt_);
    std::vector<uint8_t> codes[2];
    if (fp8) {
      for (int m = 0; m < mats_; ++m) {
        std::vector<uint8_t> sc;
        quantize_in_place(m == 0 ? wf_ : wf2_, codes[m], sc);
        scale_[m] = DeviceBuffer(sc.size());  // f32, as the fast path uploads them (one copy: they are small)
        scale_[m].upload(sc.data(), sc.size(), s);
      }
    }
    for (int i = 0; i < copies_ * mats_; ++i) {
      w_.emplace_back(wbytes);
      const int m = i % mats_;
      w_.back().upload(fp8 ? static_cast<const void*>(codes[m].data()) : (m == 0 ? w0_.data() : w1_.data()), wbytes, s);
    }
    if (fp8) Device::get().synchronize();  // the codes go out of scope
    gamma_ = random_w16(size_t(K_), 3, 0.1f, 1.0f, wt_);
    gf_ = widen(gamma_, wt_);
    dx_ = DeviceBuffer(size_t(batch_ * K_) * 4);    // [B, K] f32
    dg_ = DeviceBuffer(size_t(K_) * 2);             // [K] bf16/f16
    out_ = DeviceBuffer(size_t(batch_ * N_) * 4);   // [B, N] f32
    best_ = DeviceBuffer(size_t(batch_) * 8);
    tok_ = DeviceBuffer(size_t(batch_) * 4);
    dg_.upload(gamma_.data(), gamma_.size() * 2, s);
    best_.fill_u32(0, s);
    ready_ = true;
  }

  // The region's weights quantized as an FP8 checkpoint stores them (e4m3 codes, f32 scales of
  // the graph's layout), `w` replaced by what they dequantize to. In parallel over whole block rows
  // (the scales are row-major over blocks, so the row ranges' codes and scales concatenate): the
  // search's share of a region is seconds, and one thread took most of it for a 6144 x 2048 pair.
  void quantize_in_place(std::vector<float>& w, std::vector<uint8_t>& codes, std::vector<uint8_t>& scales) const {
    const bool block = fp8_ == Fp8Scales::Block;
    const int64_t bo = fp8_scale_rows(block), bi = fp8_scale_cols(block, K_), cols = (K_ + bi - 1) / bi;
    const int64_t rows_per = bo * std::max<int64_t>(1, 1024 / bo), parts = (N_ + rows_per - 1) / rows_per;
    codes.assign(size_t(N_ * K_), 0);
    scales.assign(size_t((N_ + bo - 1) / bo * cols) * 4, 0);
    parallel_for(size_t(parts), 1, [&](size_t b, size_t e) {
      for (size_t p = b; p < e; ++p) {
        const int64_t r0 = int64_t(p) * rows_per, n = std::min<int64_t>(rows_per, N_ - r0);
        const std::vector<float> part(w.begin() + r0 * K_, w.begin() + (r0 + n) * K_);
        std::vector<uint8_t> q, sc;
        quantize_fp8(part, n, K_, bo, bi, DType::F32, q, sc);
        const std::vector<float> dq = dequantize_fp8(q.data(), sc.data(), DType::F32, n, K_, bo, bi);
        std::copy(q.begin(), q.end(), codes.begin() + r0 * K_);
        std::copy(sc.begin(), sc.end(), scales.begin() + (r0 / bo) * cols * 4);
        std::copy(dq.begin(), dq.end(), w.begin() + r0 * K_);
      }
    });
  }

  Variant variant(const Candidate& c) const {  // as the executor launches it
    const int tmpl = batch_template(batch_);
    const GemvSlotField& field = gemv_slot(slot_.name);
    if (mma_) {  // gemv.mma, or gemv.mma_fp8 over FP8 weights, at the slot's gemv.mma point
      MmaChoice ch = FastConfig{}.*(fp8_ != Fp8Scales::None ? field.mma_fp8 : field.mma);
      if (!c.params.empty()) ch = MmaChoice{c.params.at("BLOCK"), c.params.at("MT"), c.params.at("UNROLL"), c.params.at("SPLITK")};
      const int terms = FastConfig{}.mma_terms;
      const std::optional<Variant> v = fp8_ != Fp8Scales::None
                                           ? fast_mma_fp8_variant(ch, terms, slot_.epi, tmpl, K_, fp8_, wt_, arch_,
                                                                  FastConfig{}.fp8_cvt)
                                           : fast_mma_variant(ch, terms, slot_.epi, tmpl, K_, wt_, arch_);
      if (!v) throw_internal("gemv search", "the tensor-core GEMV cannot run this region");
      return *v;
    }
    if (fp8_ != Fp8Scales::None) {
      GemvChoice ch = FastConfig{}.*field.fp8;
      if (!c.params.empty()) ch = GemvChoice{c.params.at("BLOCK"), c.params.at("ROWS"), c.params.at("UNROLL"), c.params.at("SPLITK")};
      return fast_fp8_gemv_variant(ch, slot_.epi, tmpl, fp8_, wt_, arch_, FastConfig{}.fp8_cvt);
    }
    GemvChoice ch = FastConfig{}.*field.gemv;
    if (!c.params.empty()) ch = GemvChoice{c.params.at("BLOCK"), c.params.at("ROWS"), c.params.at("UNROLL"), c.params.at("SPLITK")};
    return fast_gemv_variant(ch, slot_.epi, tmpl, wt_, arch_);
  }

  void prepare(const std::vector<Candidate>& cs, Clock::time_point deadline) override {
    std::vector<Variant> vs;
    for (const Candidate& c : cs) {
      try {
        vs.push_back(variant(c));
      } catch (const Error&) {
        // a point the executor cannot bind: compile() records why
      }
    }
    BuildMemo::get().build_all(vs, deadline);
  }

  std::string compile(const Candidate& c) override {
    const Built b = BuildMemo::get().build(variant(c));
    if (!b.ok) return "NVRTC: " + b.error;
    if (b.spill_bytes > 0) return "spills " + std::to_string(b.spill_bytes) + " bytes";
    return "";
  }

  GemvParams params(int copy) const {
    GemvParams p{dx_.as<float>(), slot_.norm ? reinterpret_cast<const void*>(dg_.ptr()) : nullptr, 1e-6f,
                 reinterpret_cast<const void*>(w_[size_t(copy * mats_)].ptr()),
                 mats_ == 2 ? reinterpret_cast<const void*>(w_[size_t(copy * mats_ + 1)].ptr()) : nullptr, nullptr,
                 out_.as<float>(), best_.as<unsigned long long>(),
                 batch_, N_, K_};
    if (fp8_ != Fp8Scales::None) {
      p.w_scale = scale_[0].as<float>();
      p.w2_scale = mats_ == 2 ? scale_[1].as<float>() : nullptr;
    }
    return p;
  }

  CorrectnessResult check(const Candidate& c) override {
    CorrectnessResult r;
    const Variant v = variant(c);
    const LoadedKernel& k = load_kernel(v);
    const LaunchShape ls = gemv_launch_shape(v, N_, K_);
    const CUstream s = Device::get().stream();
    const std::vector<float>&wf = wf_, &wf2 = wf2_, &gf = gf_;
    for (uint64_t seed : {7u, 8u}) {
      Rng rng(seed);
      std::vector<float> x(size_t(batch_ * K_)), xn(x.size()), y(size_t(batch_ * N_)), y2(y.size()), want(y.size()),
          resid(y.size(), 0.0f);
      for (auto& e : x) e = rng.normal();
      if (slot_.norm) ref::rms_norm(x.data(), batch_, K_, gf.data(), 1e-6f, xn.data());
      else xn = x;
      ref::linear(xn.data(), batch_, K_, wf.data(), nullptr, N_, y.data());
      want = y;
      if (slot_.epi == kEpiSwiglu) {
        ref::linear(xn.data(), batch_, K_, wf2.data(), nullptr, N_, y2.data());
        ref::swiglu(y.data(), y2.data(), batch_ * N_, want.data());
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
      best_.fill_u32(0, s);  // timing launches leave their keys behind
      launch_kernel(k, Dim3{ls.grid_x, ls.grid_y}, ls.threads, ls.smem, s, &p, false);
      std::vector<float> got(want.size());
      std::vector<int32_t> tok(static_cast<size_t>(batch_));
      if (slot_.epi == kEpiArgmax) {
        launch_argmax_finish(best_.as<unsigned long long>(), tok_.as<int>(), batch_, s, false, arch_);
        tok_.download(tok.data(), tok.size() * 4, s);
      }
      out_.download(got.data(), got.size() * 4, s);
      Device::get().synchronize();
      // The argmax epilogue's token is the largest of the logits it wrote (lowest row on ties).
      for (long long b = 0; slot_.epi == kEpiArgmax && b < batch_; ++b) {
        const float* row = got.data() + b * N_;
        const long long want_tok = std::max_element(row, row + N_) - row;
        if (tok[size_t(b)] != want_tok) {
          r.reason = "argmax token " + std::to_string(tok[size_t(b)]) + " for batch row " + std::to_string(b) +
                     ", the largest logit is at " + std::to_string(want_tok) + " (seed " + std::to_string(seed) + ")";
          return r;
        }
      }
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
      // f32 activations and accumulation over bf16 weights (or e4m3 codes times f32 scales, exact
      // on both sides): the f32 bound applies.
      if (!(err <= 1e-5)) {
        r.reason = "relative L2 error " + std::to_string(err) + " exceeds 1e-5 (seed " + std::to_string(seed) + ")";
        return r;
      }
    }
    r.ok = true;
    return r;
  }

  TimingResult time(const Candidate& c, int warmup, int repeats) override {
    const Variant v = variant(c);
    const LoadedKernel& k = load_kernel(v);
    const LaunchShape ls = gemv_launch_shape(v, N_, K_);
    constexpr int kLaunches = 24;
    const CUstream s = Device::get().stream();
    std::vector<GemvParams> ps;
    for (int i = 0; i < copies_; ++i) ps.push_back(params(i));
    return time_graph(kLaunches, warmup, repeats, [&](int i) {
      launch_kernel(k, Dim3{ls.grid_x, ls.grid_y}, ls.threads, ls.smem, s, &ps[size_t(i % copies_)], true);
    });
  }

 private:
  Slot slot_;
  long long N_, K_;
  int batch_;
  DType wt_;
  bool mma_ = false;
  Fp8Scales fp8_ = Fp8Scales::None;
  bool ready_ = false;
  std::string arch_;
  int mats_ = 1, copies_ = 1;
  std::vector<uint16_t> w0_, w1_, gamma_;
  std::vector<float> wf_, wf2_, gf_;
  std::vector<DeviceBuffer> w_;
  DeviceBuffer scale_[2];
  DeviceBuffer dx_, dg_, out_, best_, tok_;
};

// ---- decode attention: the fused kernel alone, at the region's shape ----

// The fast path's decode attention is one kernel (attn_decode.fused: q/k norm + rope, the new K/V
// row written to the bf16 cache, attention over every split, the splits merged by the last block),
// so the region is timed and checked as that kernel, like a GEMV slot: a whole decode step (the
// first version) is dominated by the GEMVs and says nothing about the attention's own speed.
class AttentionEvaluator final : public Evaluator {
 public:
  AttentionEvaluator(const Graph& g, int batch, int context)
      : c_(g.config), batch_(std::max(1, batch)), context_(std::max(1, context)),
        wt_(g.ops.front().weights.at(0)->dtype) {}
  std::string backend() const override { return "cuda"; }
  std::string timing_method() const override {
    return "the fused decode attention between its neighbours in a decode step: CUDA events around a CUDA graph of "
           "chains QKV GEMV -> attention -> output GEMV (programmatic dependent launch, the default GEMV points, "
           "weight and KV-cache copies rotated, L2 defeated) at the summary's batch and context, minus the same "
           "chains without the attention (measured once); median of the replays per chain";
  }

  FastConfig config(const Candidate& c) const {
    FastConfig cfg;
    if (c.params.empty()) return cfg;
    cfg.attn_block = c.params.at("BLOCK");
    if (c.params.count("CLUSTER")) {  // attn_decode.cluster: its blocks per KV head
      cfg.attn_cluster = c.params.at("CLUSTER");
      return cfg;
    }
    cfg.attn_cluster = 0;  // a point of attn_decode.fused is timed as that kernel at any batch
    if (c.params.count("TILE")) cfg.attn_tile = c.params.at("TILE");  // older records (the split family)
    cfg.attn_split = c.params.at("SPLIT");
    if (c.params.count("ILP")) cfg.attn_ilp = c.params.at("ILP");  // older records have none
    return cfg;
  }
  // Every variant the config launches (the plan ships them all), and among them the attention a
  // step of this batch runs at a short context, as the executor binds it (its BLOCK and SPLIT may
  // shrink to fit the head shape).
  std::vector<Variant> variants(const Candidate& c) const { return fast_path_variants(c_, wt_, config(c), arch_); }
  Variant attention(const Candidate& c) const {
    return decode_attention_variant(c_, config(c), wt_, arch_, batch_template(batch_), 0);
  }

  void begin(const RegionTask&) override {
    if (ready_) return;
    arch_ = Device::get().info().arch();
    const CUstream s = Device::get().stream();
    hd_ = c_.head_dim;
    max_seq_ = context_;
    slot_elems_ = size_t(c_.num_kv_heads) * size_t(max_seq_) * size_t(hd_);  // one slot of K (or V)
    // Copies of the batch's cache rows (distinct slots), enough to defeat the L2 (60 MiB on the H200); the
    // graph touches each once per replay.
    const double copy_bytes = 2.0 * double(batch_) * double(slot_elems_) * 2;
    copies_ = std::clamp(int(std::ceil(160e6 / copy_bytes)), 1, 512);
    const size_t slots = size_t(copies_) * size_t(batch_);
    kc_ = DeviceBuffer(slots * slot_elems_ * 2);  // [slots, kv_heads, max_seq, head_dim] bf16
    vc_ = DeviceBuffer(slots * slot_elems_ * 2);
    {  // random rows, never zeros (one copy's worth, uploaded to every copy)
      const std::vector<uint16_t> k = random_w16(size_t(batch_) * slot_elems_, 21, 1.0f, 0.0f, DType::BF16);
      const std::vector<uint16_t> v = random_w16(k.size(), 22, 1.0f, 0.0f, DType::BF16);
      for (int i = 0; i < copies_; ++i) {
        const size_t off = size_t(i) * k.size() * 2;
        CU_CHECK(drv().cuMemcpyHtoDAsync(kc_.ptr() + off, k.data(), k.size() * 2, s));
        CU_CHECK(drv().cuMemcpyHtoDAsync(vc_.ptr() + off, v.data(), v.size() * 2, s));
      }
    }
    std::vector<int> ids(slots);
    for (size_t i = 0; i < slots; ++i) ids[i] = int(i);
    slot_ids_ = DeviceBuffer(slots * 4);  // copy i's tokens use slots [i * batch, (i + 1) * batch)
    slot_ids_.upload(ids.data(), ids.size() * 4, s);
    positions_ = DeviceBuffer(size_t(batch_) * 4);
    const long long qkvd = c_.q_dim() + 2 * c_.kv_dim();
    qkv_ = DeviceBuffer(size_t(batch_ * qkvd) * 4);     // [batch, q_dim + 2 kv_dim] f32
    out_ = DeviceBuffer(size_t(batch_ * c_.q_dim()) * 4);  // [batch, q_dim] f32
    const long long most_splits = (max_seq_ + 15) / 16;   // the smallest SPLIT
    part_o_ = DeviceBuffer(size_t(batch_ * c_.num_heads * most_splits * hd_) * 4);
    part_ml_ = DeviceBuffer(size_t(batch_ * c_.num_heads * most_splits * 2) * 4);
    counters_ = DeviceBuffer(size_t(batch_ * c_.num_kv_heads) * 4);
    // Rope rows of every position, as the executor computes them.
    inv_freq_ = rope_inv_freq(c_.rope, hd_);
    const size_t half = size_t(hd_ / 2);
    std::vector<float> cs(size_t(max_seq_) * half), sn(cs.size());
    for (long long p = 0; p < max_seq_; ++p) rope_cos_sin(inv_freq_, p, cs.data() + size_t(p) * half, sn.data() + size_t(p) * half);
    cos_ = DeviceBuffer(cs.size() * 4);
    sin_ = DeviceBuffer(sn.size() * 4);
    cos_.upload(cs.data(), cs.size() * 4, s);
    sin_.upload(sn.data(), sn.size() * 4, s);
    if (c_.qk_norm) {  // per-head RMSNorm weights in the model's dtype, around 1
      qn_ = random_w16(size_t(hd_), 23, 0.1f, 1.0f, wt_);
      kn_ = random_w16(size_t(hd_), 24, 0.1f, 1.0f, wt_);
      dqn_ = DeviceBuffer(size_t(hd_) * 2);
      dkn_ = DeviceBuffer(size_t(hd_) * 2);
      dqn_.upload(qn_.data(), qn_.size() * 2, s);
      dkn_.upload(kn_.data(), kn_.size() * 2, s);
    }
    {  // a timing input: random q, k, v (its own rows are rewritten by every launch, identically)
      const std::vector<float> x = random_f32(size_t(batch_ * qkvd), 25);
      qkv_.upload(x.data(), x.size() * 4, s);
    }
    begin_neighbours();
    Device::get().synchronize();
    ready_ = true;
  }

  // The attention's neighbours in a decode step, for timing: the QKV GEMV that writes its input
  // (RMSNorm prologue) and the output GEMV that reads its result (residual epilogue), at the
  // default points, over weight copies of >= 100 MB together (L2 defeated). A latency-bound
  // kernel timed back to back against itself overlaps its own launches (its cache prefetch runs
  // under the previous instance); between its real neighbours it waits as it does in a step.
  void begin_neighbours() {
    const CUstream s = Device::get().stream();
    const FastConfig d;
    const int tmpl = batch_template(batch_);
    const long long H = c_.hidden_size, qkvd = c_.q_dim() + 2 * c_.kv_dim();
    vqkv_ = fast_decode_gemv(d, d.qkv, d.qkv_mma, kEpiStore, tmpl, H, wt_, arch_);
    vo_ = fast_decode_gemv(d, d.o, d.o_mma, kEpiResidual, tmpl, c_.q_dim(), wt_, arch_);
    const double bytes = double(qkvd * H + H * c_.q_dim()) * 2;
    wcopies_ = std::clamp(int(std::ceil(100e6 / bytes)), 1, 64);
    const std::vector<uint16_t> wq = random_w16(size_t(qkvd * H), 26, 0.03f, 0.0f, wt_);
    const std::vector<uint16_t> wo = random_w16(size_t(H * c_.q_dim()), 27, 0.03f, 0.0f, wt_);
    const std::vector<uint16_t> g = random_w16(size_t(H), 28, 0.1f, 1.0f, wt_);
    for (int i = 0; i < wcopies_; ++i) {
      wq_.emplace_back(wq.size() * 2);
      wq_.back().upload(wq.data(), wq.size() * 2, s);
      wo_.emplace_back(wo.size() * 2);
      wo_.back().upload(wo.data(), wo.size() * 2, s);
    }
    gamma_ = DeviceBuffer(g.size() * 2);
    gamma_.upload(g.data(), g.size() * 2, s);
    const std::vector<float> x = random_f32(size_t(batch_ * H), 29);
    x_ = DeviceBuffer(x.size() * 4);
    x_.upload(x.data(), x.size() * 4, s);
    resid_ = DeviceBuffer(x.size() * 4);
    resid_.upload(x.data(), x.size() * 4, s);
    Device::get().synchronize();  // the host vectors go out of scope
  }
  void launch_neighbour(bool qkv, int copy) const {
    const Variant& v = qkv ? vqkv_ : vo_;
    const long long H = c_.hidden_size, N = qkv ? c_.q_dim() + 2 * c_.kv_dim() : H, K = qkv ? H : c_.q_dim();
    const GemvParams p{qkv ? x_.as<float>() : out_.as<float>(), qkv ? reinterpret_cast<const void*>(gamma_.ptr()) : nullptr,
                       1e-6f, reinterpret_cast<const void*>((qkv ? wq_ : wo_)[size_t(copy % wcopies_)].ptr()), nullptr,
                       nullptr, qkv ? qkv_.as<float>() : resid_.as<float>(), nullptr, batch_, N, K};
    const LaunchShape ls = gemv_launch_shape(v, N, K);
    launch_kernel(load_kernel(v), Dim3{ls.grid_x, ls.grid_y}, ls.threads, ls.smem, Device::get().stream(), &p, true);
  }

  void prepare(const std::vector<Candidate>& cs, Clock::time_point deadline) override {
    std::vector<Variant> vs;
    for (const Candidate& c : cs) {
      try {
        for (Variant& v : variants(c)) vs.push_back(std::move(v));
      } catch (const Error&) {
        // a point the executor cannot bind: compile() records why
      }
    }
    BuildMemo::get().build_all(vs, deadline);
  }

  std::string compile(const Candidate& c) override {
    // Every variant the config launches must build (a plan ships them all). No spill rule here:
    // the fused attention spills a few bytes at most points (the default too, 16 bytes at head
    // dim 64 on sm_90), and its timing says what that costs.
    for (const Variant& v : variants(c)) {
      const Built b = BuildMemo::get().build(v);
      if (!b.ok) return v.name() + ": " + b.error;
    }
    return "";
  }

  FusedAttnParams params(const Variant& v, int copy) const {
    return FusedAttnParams{qkv_.as<float>(), c_.qk_norm ? reinterpret_cast<const void*>(dqn_.ptr()) : nullptr,
                           c_.qk_norm ? reinterpret_cast<const void*>(dkn_.ptr()) : nullptr, float(c_.rms_norm_eps),
                           cos_.as<float>(), sin_.as<float>(), kc_.as<unsigned short>(), vc_.as<unsigned short>(),
                           part_o_.as<float>(), part_ml_.as<float>(), counters_.as<unsigned>(), out_.as<float>(),
                           positions_.as<int>(), slot_ids_.as<int>() + size_t(copy) * size_t(batch_), batch_,
                           c_.num_heads, c_.num_kv_heads, max_seq_, decode_attention_blocks(v, max_seq_),
                           1.0f / std::sqrt(float(hd_))};
  }
  void launch(const LoadedKernel& k, const Variant& v, const FusedAttnParams& p, bool pdl) const {
    const size_t smem = size_t(attn_fused_smem_bytes(v.param("SPLIT"), v.param("HD"), v.param("GROUP")));
    launch_kernel(k, Dim3{unsigned(c_.num_kv_heads), unsigned(p.max_splits), unsigned(batch_)}, unsigned(v.threads()),
                  smem, Device::get().stream(), &p, pdl);
  }

  // Against the f32 CPU reference (q/k norm, rope, cpu::attention with GQA head sharing): the
  // summary's context, a ragged shorter one (a partial last split) and a short one (a single
  // split); every token of the batch in its own slot, at its own position. The cache rows from
  // the token's position on are poisoned with NaN (read one too many and it shows; the new row
  // must be written), and so is the output.
  CorrectnessResult check(const Candidate& c) override {
    CorrectnessResult r;
    const Variant v = attention(c);
    const LoadedKernel& k = load_kernel(v);
    const CUstream s = Device::get().stream();
    const long long heads = c_.num_heads, kvh = c_.num_kv_heads, qd = c_.q_dim(), kvd = c_.kv_dim(), qkvd = qd + 2 * kvd;
    const long long n = batch_;
    struct Case {
      uint64_t seed;
      long long context;  // of the first token; the others 5 fewer each
    };
    const Case cases[] = {{7, context_}, {8, context_ * 5 / 8 + 3}, {9, 2}};
    const std::vector<float> qnf = c_.qk_norm ? widen(qn_, wt_) : std::vector<float>(),
                             knf = c_.qk_norm ? widen(kn_, wt_) : std::vector<float>();
    for (const Case& cs : cases) {
      std::vector<int32_t> pos(static_cast<size_t>(n)), slot(static_cast<size_t>(n));
      for (long long t = 0; t < n; ++t) {
        pos[size_t(t)] = int32_t(std::clamp<long long>(cs.context - 5 * t, 1, max_seq_) - 1);
        slot[size_t(t)] = int32_t(t);
      }
      Rng rng(cs.seed);
      std::vector<float> qkv(size_t(n * qkvd));
      for (auto& x : qkv) x = rng.normal();
      std::vector<uint16_t> kh(size_t(n) * slot_elems_), vh(kh.size());
      for (long long t = 0; t < n; ++t)
        for (long long h = 0; h < kvh; ++h)
          for (long long p = 0; p < max_seq_; ++p)
            for (long long d = 0; d < hd_; ++d) {
              const size_t i = size_t(((t * kvh + h) * max_seq_ + p) * hd_ + d);
              const bool cached = p < pos[size_t(t)];
              kh[i] = cached ? f32_to_bf16(rng.normal()) : uint16_t(0x7fc0);  // bf16 NaN
              vh[i] = cached ? f32_to_bf16(rng.normal()) : uint16_t(0x7fc0);
            }
      // Copy 0 of the cache holds slots [0, n); the timing input is restored afterwards.
      kc_.upload(kh.data(), kh.size() * 2, s);
      vc_.upload(vh.data(), vh.size() * 2, s);
      qkv_.upload(qkv.data(), qkv.size() * 4, s);
      positions_.upload(pos.data(), pos.size() * 4, s);
      out_.fill_u32(0x7fc00000u, s);  // NaN poison
      counters_.fill_u32(0, s);
      const FusedAttnParams p = params(v, 0);
      launch(k, v, p, false);
      std::vector<float> got(size_t(n * qd));
      std::vector<uint16_t> kg(kh.size()), vg(vh.size());
      out_.download(got.data(), got.size() * 4, s);
      kc_.download(kg.data(), kg.size() * 2, s);
      vc_.download(vg.data(), vg.size() * 2, s);
      Device::get().synchronize();

      // Reference q and new k: per-head RMSNorm (qk_norm models), then rope at the position.
      std::vector<float> q(size_t(n * qd)), kn(size_t(n * kvd)), vn(size_t(n * kvd));
      for (long long t = 0; t < n; ++t) {
        std::copy_n(qkv.begin() + t * qkvd, qd, q.begin() + t * qd);
        std::copy_n(qkv.begin() + t * qkvd + qd, kvd, kn.begin() + t * kvd);
        std::copy_n(qkv.begin() + t * qkvd + qd + kvd, kvd, vn.begin() + t * kvd);
      }
      if (c_.qk_norm) {
        ref::rms_norm(q.data(), n * heads, hd_, qnf.data(), float(c_.rms_norm_eps), q.data());
        ref::rms_norm(kn.data(), n * kvh, hd_, knf.data(), float(c_.rms_norm_eps), kn.data());
      }
      ref::rope(q.data(), n, heads, hd_, pos.data(), inv_freq_, q.data());
      ref::rope(kn.data(), n, kvh, hd_, pos.data(), inv_freq_, kn.data());
      // The rows the kernel wrote (bf16: the bf16 bound), then the attention over the cache as
      // the kernel left it (identical inputs on both sides: the f32 bound).
      std::vector<float> kw(kn.size()), vw(vn.size()), vwant(vn.size());
      for (long long t = 0; t < n; ++t)
        for (long long j = 0; j < kvd; ++j) {
          const size_t i = size_t(((t * kvh + j / hd_) * max_seq_ + pos[size_t(t)]) * hd_ + j % hd_);
          kw[size_t(t * kvd + j)] = bf16_to_f32(kg[i]);
          vw[size_t(t * kvd + j)] = bf16_to_f32(vg[i]);
          vwant[size_t(t * kvd + j)] = bf16_to_f32(f32_to_bf16(vn[size_t(t * kvd + j)]));
        }
      const std::optional<double> ke = rel_l2(kw, kn), ve = rel_l2(vw, vwant);
      if (!ke || !ve) {
        r.reason = "new K/V cache row not written (NaN), seed " + std::to_string(cs.seed);
        return r;
      }
      if (!(*ke <= 1e-2 && *ve <= 1e-2)) {
        r.reason = "new K/V cache row: relative L2 error " + std::to_string(std::max(*ke, *ve)) + " exceeds 1e-2 (seed " +
                   std::to_string(cs.seed) + ")";
        return r;
      }
      std::vector<float> kcache(size_t(n * max_seq_ * kvd)), vcache(kcache.size());  // [slot, position, kv_dim]
      for (long long t = 0; t < n; ++t)
        for (long long p = 0; p < pos[size_t(t)]; ++p)
          for (long long j = 0; j < kvd; ++j) {
            const size_t i = size_t(((t * kvh + j / hd_) * max_seq_ + p) * hd_ + j % hd_);
            kcache[size_t((t * max_seq_ + p) * kvd + j)] = bf16_to_f32(kg[i]);
            vcache[size_t((t * max_seq_ + p) * kvd + j)] = bf16_to_f32(vg[i]);
          }
      std::vector<float> want(got.size());
      ref::attention(q.data(), kw.data(), vw.data(), n, pos.data(), slot.data(), heads, kvh, hd_,
                     ref::KvCacheView{kcache.data(), vcache.data(), max_seq_, kvd}, want.data());
      const std::optional<double> err = rel_l2(got, want);
      ++r.checks;
      if (!err) {
        r.reason = "NaN or output element not written (seed " + std::to_string(cs.seed) + ")";
        return r;
      }
      r.rel_err = std::max(r.rel_err, *err);
      // f32 activations and accumulation over the same bf16 cache values: the f32 bound.
      if (!(*err <= 1e-5)) {
        r.reason = "relative L2 error " + std::to_string(*err) + " exceeds 1e-5 (seed " + std::to_string(cs.seed) +
                   ", context " + std::to_string(pos[0] + 1) + ")";
        return r;
      }
    }
    restore_timing_input();
    r.ok = true;
    return r;
  }

  TimingResult time(const Candidate& c, int warmup, int repeats) override {
    const Variant v = attention(c);
    const LoadedKernel& k = load_kernel(v);
    const CUstream s = Device::get().stream();
    restore_timing_input();
    counters_.fill_u32(0, s);
    // One chain per cache copy (at least 24), so a replay reads every copy once.
    const int launches = std::max(24, copies_);
    std::vector<FusedAttnParams> ps;
    for (int i = 0; i < copies_; ++i) ps.push_back(params(v, i));
    if (!baseline_us_) {
      const TimingResult b = time_graph(launches, warmup, repeats, [&](int i) {
        launch_neighbour(true, i);
        launch_neighbour(false, i);
      });
      if (!b.ok) return b;
      baseline_us_ = b.median_us;
    }
    TimingResult t = time_graph(launches, warmup, repeats, [&](int i) {
      launch_neighbour(true, i);
      launch(k, v, ps[size_t(i % copies_)], true);
      launch_neighbour(false, i);
    });
    // What the attention adds to its chain (floored: a sample is never below 10 ns).
    for (double& x : t.samples_us) x = std::max(x - *baseline_us_, 0.01);
    t.median_us = median(t.samples_us);
    t.ok = t.ok && t.median_us > 0;
    return t;
  }

 private:
  static std::vector<float> random_f32(size_t n, uint64_t seed) {
    Rng r(seed);
    std::vector<float> v(n);
    for (auto& x : v) x = r.normal();
    return v;
  }
  // The timing shape: every token of the batch at the summary's context, random rows in copy 0.
  void restore_timing_input() {
    const CUstream s = Device::get().stream();
    const std::vector<int32_t> pos(size_t(batch_), int32_t(max_seq_ - 1));
    positions_.upload(pos.data(), pos.size() * 4, s);
    const std::vector<uint16_t> k = random_w16(size_t(batch_) * slot_elems_, 21, 1.0f, 0.0f, DType::BF16);
    const std::vector<uint16_t> v = random_w16(k.size(), 22, 1.0f, 0.0f, DType::BF16);
    kc_.upload(k.data(), k.size() * 2, s);
    vc_.upload(v.data(), v.size() * 2, s);
    const std::vector<float> x = random_f32(size_t(batch_ * (c_.q_dim() + 2 * c_.kv_dim())), 25);
    qkv_.upload(x.data(), x.size() * 4, s);
    Device::get().synchronize();
  }

  const ModelConfig& c_;
  int batch_;
  long long context_;
  DType wt_;
  bool ready_ = false;
  std::string arch_;
  long long hd_ = 0, max_seq_ = 0;
  size_t slot_elems_ = 0;
  int copies_ = 1;
  std::vector<float> inv_freq_;
  std::vector<uint16_t> qn_, kn_;
  DeviceBuffer kc_, vc_, slot_ids_, positions_, qkv_, out_, part_o_, part_ml_, counters_, cos_, sin_, dqn_, dkn_;
  // the timing chain's neighbours (begin_neighbours)
  Variant vqkv_, vo_;
  int wcopies_ = 1;
  std::vector<DeviceBuffer> wq_, wo_;
  DeviceBuffer gamma_, x_, resid_;
  std::optional<double> baseline_us_;  // the chains without the attention, per chain
};

// ---- prefill attention: attn_prefill.pipe alone, at the region's prompt length ----

// A prompt step's attention is one kernel after qkv_post.rows (attn_prefill.pipe: query tiles of
// one sequence against double-buffered K/V tiles), so the region is timed and checked as that
// kernel: one sequence from position 0, its K/V rows in the bf16 cache, the output written as the
// output projection's 16-bit input (as the executor launches it). Its (BLOCK, BK) point, the
// form (QS) and the blocks' tiles (PAIR) are the space. The plan's point runs every prompt, and the
// attention's share of a prompt grows with its length (a few percent of a 128-token prompt's time,
// a quarter of a 2048-token one's on an H100), so it is timed at kPromptTokens at least.

// The engine settings of a point of the prompt attention's space (the defaults where it is empty:
// the fallback).
FastConfig prefill_attention_config(const ParamPoint& p) {
  FastConfig cfg;
  if (p.empty()) return cfg;
  cfg.prefill_flash_block = p.at("BLOCK");
  cfg.prefill_flash_bk = p.at("BK");
  if (auto qs = p.find("QS"); qs != p.end()) cfg.prefill_flash_qs = qs->second;
  if (auto pr = p.find("PAIR"); pr != p.end()) cfg.prefill_flash_pair = pr->second;
  return cfg;
}

class PrefillAttentionEvaluator final : public Evaluator {
 public:
  PrefillAttentionEvaluator(const Graph& g, int tokens)
      : c_(g.config), n_(std::max(1, tokens)), wt_(g.ops.front().weights.at(0)->dtype) {}
  std::string backend() const override { return "cuda"; }
  // Q K^T and P V over the causal pairs of one sequence from position 0.
  double timed_flops() const override {
    return 4.0 * (double(n_) * double(n_ + 1) / 2.0) * double(c_.num_heads) * double(c_.head_dim);
  }
  std::string timing_method() const override {
    return "attn_prefill.pipe alone: CUDA events around a CUDA graph of back-to-back launches over one prompt of " +
           std::to_string(n_) + " tokens (the summary's, at least " + std::to_string(kPromptTokens) +
           "; its K/V rows in the cache, which fit the L2 as they do after qkv_post in a prompt step), 16-bit output; "
           "median of the replays per launch";
  }

  Variant attention(const Candidate& c) const {
    const std::optional<Variant> v = prefill_flash_variant(c_, prefill_attention_config(c.params), wt_, arch_);
    if (!v) throw_input("attn_prefill.pipe", "this model's head dim or this GPU does not run it");
    return *v;
  }

  void begin(const RegionTask&) override {
    if (ready_) return;
    arch_ = Device::get().info().arch();
    timing_ = Inputs(c_, n_, 31);
    Device::get().synchronize();
    ready_ = true;
  }
  void prepare(const std::vector<Candidate>& cs, Clock::time_point deadline) override {
    std::vector<Variant> vs;
    for (const Candidate& c : cs) {
      try {
        vs.push_back(attention(c));
      } catch (const Error&) {
        // compile() records why
      }
    }
    BuildMemo::get().build_all(vs, deadline);
  }
  std::string compile(const Candidate& c) override {
    const Variant v = attention(c);
    const Built b = BuildMemo::get().build(v);
    return b.ok ? "" : v.name() + ": " + b.error;
  }

  // Against a double-precision attention over the same bf16 cache (Q and P are rounded to bf16
  // in the kernel: the bf16 bound) at a ragged length (a partial last query tile and K/V tile) and
  // a short one; the 16-bit output is the f32 output rounded, element for element.
  CorrectnessResult check(const Candidate& c) override {
    CorrectnessResult r;
    const Variant v = attention(c);
    const LoadedKernel& k = load_kernel(v);
    const CUstream s = Device::get().stream();
    const long long qd = c_.q_dim(), hd = c_.head_dim, kvh = c_.num_kv_heads, group = c_.num_heads / kvh;
    for (const long long m : {std::min<long long>(n_, 129), 7LL}) {
      Inputs in(c_, m, uint64_t(40 + m));
      std::vector<float> got(size_t(m * qd));
      std::vector<uint16_t> got16(got.size());
      for (bool sixteen : {false, true}) {
        in.out.fill_u32(0x7fc00000u, s);
        in.out16.fill_u32(0xffffffffu, s);
        launch(k, v, in, sixteen);
        if (sixteen) in.out16.download(got16.data(), got16.size() * 2, s);
        else in.out.download(got.data(), got.size() * 4, s);
        Device::get().synchronize();
      }
      std::vector<float> want(got.size());
      const double scale = 1.0 / std::sqrt(double(hd));
      for (long long t = 0; t < m; ++t)
        for (long long h = 0; h < c_.num_heads; ++h) {
          const long long base = (h / group) * m * hd;  // slot 0, this head's KV head
          std::vector<double> sc(size_t(t + 1));
          double mx = -INFINITY, sum = 0;
          for (long long p = 0; p <= t; ++p) {
            double d = 0;
            for (long long j = 0; j < hd; ++j) d += double(in.q[size_t(t * qd + h * hd + j)]) * in.kf[size_t(base + p * hd + j)];
            sc[size_t(p)] = d * scale;
            mx = std::max(mx, sc[size_t(p)]);
          }
          for (double& x : sc) sum += (x = std::exp(x - mx));
          for (long long j = 0; j < hd; ++j) {
            double o = 0;
            for (long long p = 0; p <= t; ++p) o += sc[size_t(p)] * in.vf[size_t(base + p * hd + j)];
            want[size_t(t * qd + h * hd + j)] = float(o / sum);
          }
        }
      const std::optional<double> err = rel_l2(got, want);
      ++r.checks;
      if (!err) {
        r.reason = "NaN or output element not written (" + std::to_string(m) + " tokens)";
        return r;
      }
      r.rel_err = std::max(r.rel_err, *err);
      if (!(*err <= 1e-2)) {
        r.reason = "relative L2 error " + std::to_string(*err) + " exceeds 1e-2 (" + std::to_string(m) + " tokens)";
        return r;
      }
      for (size_t i = 0; i < got.size(); ++i)
        if (got16[i] != to_w16(got[i])) {
          r.reason = "16-bit output element " + std::to_string(i) + " is not the f32 output rounded";
          return r;
        }
    }
    r.ok = true;
    return r;
  }

  TimingResult time(const Candidate& c, int warmup, int repeats) override {
    const Variant v = attention(c);
    const LoadedKernel& k = load_kernel(v);
    launch(k, v, timing_, true);  // the tiles of this point, uploaded before the capture
    Device::get().synchronize();
    return time_graph(8, warmup, repeats, [&](int) { launch(k, v, timing_, true); });
  }

 private:
  // One sequence of m tokens at positions 0..m-1 in slot 0: random q (f32, as qkv_post.rows
  // writes it), random bf16 K/V rows (and their values as f32), the outputs.
  struct Inputs {
    Inputs() = default;
    Inputs(const ModelConfig& c, long long m, uint64_t seed) : m(m) {
      const CUstream s = Device::get().stream();
      Rng rng(seed);
      q.resize(size_t(m * c.q_dim()));
      for (float& x : q) x = rng.normal();
      const size_t kv = size_t(c.num_kv_heads * m * c.head_dim);  // [kv_heads, m, head_dim]
      std::vector<uint16_t> kb(kv), vb(kv);
      kf.resize(kv);
      vf.resize(kv);
      for (size_t i = 0; i < kv; ++i) {
        kb[i] = f32_to_bf16(rng.normal());
        vb[i] = f32_to_bf16(rng.normal());
        kf[i] = bf16_to_f32(kb[i]);
        vf[i] = bf16_to_f32(vb[i]);
      }
      std::vector<int32_t> pos(static_cast<size_t>(m)), slot(static_cast<size_t>(m), 0);
      for (long long t = 0; t < m; ++t) pos[size_t(t)] = int32_t(t);
      dq = DeviceBuffer(q.size() * 4);
      dq.upload(q.data(), q.size() * 4, s);
      dk = DeviceBuffer(kv * 2);
      dk.upload(kb.data(), kv * 2, s);
      dv = DeviceBuffer(kv * 2);
      dv.upload(vb.data(), kv * 2, s);
      positions = DeviceBuffer(size_t(m) * 4);
      positions.upload(pos.data(), pos.size() * 4, s);
      slots = DeviceBuffer(size_t(m) * 4);
      slots.upload(slot.data(), slot.size() * 4, s);
      tiles = DeviceBuffer(size_t(2 * m) * 8);  // at most one tile per row, each with a padding partner
      out = DeviceBuffer(q.size() * 4);
      out16 = DeviceBuffer(q.size() * 2);
      slot_rows = slot;
      pos_rows = pos;
      Device::get().synchronize();  // the host vectors go out of scope
    }
    long long m = 0;
    std::vector<float> q, kf, vf;
    std::vector<int32_t> slot_rows, pos_rows;
    DeviceBuffer dq, dk, dv, positions, slots, tiles, out, out16;
    int tile_rows = 0, tile_pair = 0;  // the rows per tile `tiles` was made for, paired or not
    long long tile_count = 0;          // the grid's x
  };

  uint16_t to_w16(float x) const {
    std::vector<uint8_t> b(2);
    store_from_f32(b.data(), wt_, 0, x);
    return uint16_t(b[0] | (b[1] << 8));
  }

  void launch(const LoadedKernel& k, const Variant& v, Inputs& in, bool sixteen) const {
    const int pair = v.param("PAIR");
    if (in.tile_rows != prefill_tile_rows(v) || in.tile_pair != pair) {  // query tiles of 16 rows per warp and m-tile
      const std::vector<int32_t> t =
          prefill_tile_list(in.slot_rows, in.pos_rows, prefill_tile_rows(v), pair != 0, c_.num_heads, Device::get().info().sm_count);
      in.tiles.upload(t.data(), t.size() * 4, Device::get().stream());
      Device::get().synchronize();
      in.tile_rows = prefill_tile_rows(v);
      in.tile_pair = pair;
      in.tile_count = prefill_tile_blocks(t, pair != 0);
    }
    const PrefillAttnParams p{in.dq.as<float>(), in.dk.as<unsigned short>(), in.dv.as<unsigned short>(), in.out.as<float>(),
                              in.positions.as<int>(), in.slots.as<int>(), in.tiles.as<int>(), in.m, c_.num_heads,
                              c_.num_kv_heads, in.m, 1.0f / std::sqrt(float(c_.head_dim)),
                              sixteen ? reinterpret_cast<void*>(in.out16.ptr()) : nullptr, 0};
    launch_kernel(k, Dim3{unsigned(in.tile_count), unsigned(c_.num_heads)}, unsigned(v.threads()), prefill_attention_smem(v),
                  Device::get().stream(), &p);
  }

  const ModelConfig& c_;
  long long n_;
  DType wt_;
  bool ready_ = false;
  std::string arch_;
  Inputs timing_;
};

// One fast-path family as a region family of the space (the fallback is the engine's defaults).
FamilySpace fast_family(const RegionSummary& s, const std::string& family_id, const std::vector<SpaceParam>& params,
                        std::function<std::string(const ParamPoint&)> constraint) {
  FamilySpace f;
  f.id = family_id;
  f.backend = "cuda";
  f.route = FamilyRoute::Region;
  f.op = std::string(region_kind_name(s.kind));
  f.family = family_id.substr(family_id.find('.') + 1);
  f.applies_to = region_step_names(s);
  f.params = params;
  f.constraint = std::move(constraint);
  f.rules = {"the family's constraint (registers, shared memory, divisibility) at this region's shape"};
  finish_family(f);
  return f;
}

const Slot* slot_of(RegionKind kind) {
  for (const Slot& s : kSlots)
    if (s.kind == kind) return &s;
  return nullptr;
}

// The GEMV region's N and K (outputs and inputs per token).
std::pair<long long, long long> gemv_shape(const ModelConfig& c, RegionKind kind) {
  const long long N = kind == RegionKind::AttnIn                                ? c.q_dim() + 2 * c.kv_dim()
                      : kind == RegionKind::AttnOut || kind == RegionKind::MlpOut ? c.hidden_size
                      : kind == RegionKind::MlpIn                                 ? c.intermediate_size
                                                                                  : c.vocab_size;
  const long long K = kind == RegionKind::AttnOut ? c.q_dim() : kind == RegionKind::MlpOut ? c.intermediate_size : c.hidden_size;
  return {N, K};
}

// Our own prompt GEMMs as families of a prompt projection's region: gemm.wgmma (sm_90) and
// gemm.mma (sm_80+) over BN and STAGES (and gemm.wgmma's PIPE, LOAD, CLUSTER, SCHED), at the store the executor
// gives the region (prefill_gemm_epi); none, with a note, where the shape or the GPU rule them out.
// Every point is searched: all passed their GPU tests (tools/gpu_wgmma.sh) on an H100, and a new
// point must pass there before it joins a space (a compile must not be where a kernel first runs,
// a hang or a fault there ending it).
std::vector<FamilySpace> own_gemm_families(const Graph& g, const RegionSummary& s, const std::string& arch,
                                           std::vector<std::string>* notes) {
  const auto [N, K] = gemv_shape(g.config, s.kind);
  if (std::string why = gemm16_shape_reason(K, N); !why.empty()) {
    notes->push_back("our own prompt GEMMs (gemm.wgmma, gemm.mma) do not take this region's shape: " + why);
    return {};
  }
  const DType wt = g.ops.front().weights.at(0)->dtype;
  const int epi = prefill_gemm_epi(gemv_slot(slot_of(s.kind)->name), FastConfig{}, fast_fp8_scales(g) != Fp8Scales::None);
  std::vector<FamilySpace> out;
  for (const char* name : {"wgmma", "mma"}) {
    const Family& f = find_family("gemm", name);
    const std::string id = std::string("cuda:gemm.") + name;
    if (f.needs_sm90a ? arch != "sm_90" : !arch_constraint(f, arch).empty()) {
      notes->push_back(id + " does not run on " + arch);
      continue;
    }
    std::vector<SpaceParam> params;
    for (const auto& d : f.params)
      if (d.name != "BLOCK" && d.name != "EPI") params.push_back({d.name, d.values});
    auto constraint = [id, epi, wt, arch](const ParamPoint& p) -> std::string {
      const OwnGemmChoice point = own_gemm_choice(id, p);
      try {
        const std::optional<Variant> v = own_gemm_variant(point, epi, wt, arch);
        if (!v) return id + " does not run on " + arch;
        if (gemm16_smem(*v) > max_dynamic_smem(arch))
          return "its stages need " + std::to_string(gemm16_smem(*v) / 1024) + " KiB of shared memory, more than this GPU's " +
                 std::to_string(max_dynamic_smem(arch) / 1024) + " KiB";
      } catch (const Error& e) {
        return e.reason();
      }
      return "";
    };
    FamilySpace fam = fast_family(s, id, params, constraint);
    if (fam.valid_points == 0) {  // say why from its first point
      ParamPoint first;
      for (const SpaceParam& p : params) first[p.name] = p.values.front();
      notes->push_back(id + " is not searched here: " + constraint(first));
      continue;
    }
    out.push_back(std::move(fam));
  }
  return out;
}

}  // namespace

std::vector<FamilySpace> cuda_fast_families(const Graph& g, const RegionSummary& s, const TargetFacts& t,
                                            std::vector<std::string>* notes) {
  if (s.phase == Phase::Prefill && s.kind != RegionKind::Attention &&
      (slot_of(s.kind) == nullptr || s.kind == RegionKind::Head)) {
    notes->push_back("the CUDA backend searches a prompt (prefill) step's attention and projection GEMMs only: this "
                     "region runs its fixed kernels");
    return {};
  }
  for (const StepSummary& st : s.steps)
    if (st.op == op_kind_name(OpKind::MoeMlp)) {
      notes->push_back("a sparse layer's MLP runs moe_gate_up.gemv and moe_down.gemv; their point (moe_block, "
                       "moe_rows) is timed in whole decode steps by the step stage, not per region (the experts a step "
                       "reads follow the router's picks)");
      return {};
    }
  if (std::string why = fast_path_not_default(g); !why.empty()) {
    notes->push_back("the CUDA fast path cannot run this model (" + why +
                     "): there is nothing to tune; the plan runs it on the library route (reference kernels and cuBLAS)");
    return {};
  }
  const ModelConfig& c = g.config;
  const DType wt = g.ops.front().weights.at(0)->dtype;
  const int batch = int(s.point.batch);
  const std::string arch = t.arch;
  if (s.phase == Phase::Prefill && s.kind != RegionKind::Attention) {
    // The projection's GEMM: cublasGemmEx (the fallback) or the rank-th algorithm of cuBLASLt's
    // heuristic list for the shape; how long the list is shows on the GPU (compile says so).
    std::vector<int> ranks;
    for (int r = 0; r < kLtAlgorithms; ++r) ranks.push_back(r);
    FamilySpace f = fast_family(s, kLtFamily, {{"ALGO", ranks}}, nullptr);
    f.rules = {"a rank within the list cuBLASLt's heuristics give for the shape on the GPU (checked when built)"};
    std::vector<FamilySpace> out = {f};
    for (FamilySpace& own : own_gemm_families(g, s, arch, notes)) out.push_back(std::move(own));
    return out;
  }
  if (s.phase == Phase::Prefill) {  // attn_prefill.pipe: its BLOCK and BK (HD bound)
    if (!prefill_flash_variant(c, FastConfig{}, wt, arch)) {
      notes->push_back("a prompt step's attention runs the decode attention per row here (head dim or GPU): nothing to "
                       "search");
      return {};
    }
    const Family& pipe = find_family("attn_prefill", "pipe");
    std::vector<SpaceParam> params;
    for (const auto& d : pipe.params)
      if (d.name == "BLOCK" || d.name == "BK" || d.name == "PAIR") params.push_back({d.name, d.values});
    params.push_back({"QS", {0, 1, 2}});  // 0: pipe itself; m: attn_prefill.qs at MT m
    auto constraint = [&c, wt, arch](const ParamPoint& p) -> std::string {
      const FastConfig cfg = prefill_attention_config(p);
      try {
        const std::optional<Variant> v = prefill_flash_variant(c, cfg, wt, arch);
        if (v && prefill_attention_smem(*v) > size_t(max_dynamic_smem(arch)))
          return "its K/V stages (and Q tile) need " + std::to_string(prefill_attention_smem(*v) / 1024) +
                 " KiB of shared memory, more than this GPU's " + std::to_string(max_dynamic_smem(arch) / 1024) + " KiB";
      } catch (const Error& e) {
        return e.reason();
      }
      return "";
    };
    return {fast_family(s, "cuda:attn_prefill.pipe", params, constraint)};
  }
  const Fp8Scales fp8 = fast_fp8_scales(g);
  if (const Slot* slot = slot_of(s.kind);
      slot && fp8 != Fp8Scales::None && (s.kind != RegionKind::Head || fast_fp8_head(g))) {
    const int epi = slot->epi, tmpl = batch_template(batch);
    const long long N = gemv_shape(c, s.kind).first, K = gemv_shape(c, s.kind).second;
    // From mma_min_batch on, FP8 projections run gemv.mma_fp8 where they can (fp8_batched_mma), at
    // the slot's gemv.mma_fp8 point (gemv_mma_fp8.<slot>): its tuning parameters are the space, BATCH, EPI,
    // TERMS, SCALE and CVT (fp8_cvt) bound, each point checked as the executor binds it.
    const FastConfig defaults;
    const GemvSlotField& field = gemv_slot(slot->name);
    if (fast_fp8_decode_gemv(defaults, defaults.*field.fp8, defaults.*field.mma_fp8, epi, tmpl, K, fp8, wt, arch).family->name ==
        "mma_fp8") {
      std::vector<SpaceParam> params;
      for (const auto& d : find_family("gemv", "mma_fp8").params)
        if (d.name != "BATCH" && d.name != "EPI" && d.name != "TERMS" && d.name != "SCALE" && d.name != "CVT")
          params.push_back({d.name, d.values});
      auto constraint = [epi, tmpl, fp8, wt, arch, K](const ParamPoint& p) -> std::string {
        if (p.at("SPLITK") > 1 && epi != kEpiResidual) return "split-K needs the residual epilogue";
        try {
          const MmaChoice ch{p.at("BLOCK"), p.at("MT"), p.at("UNROLL"), p.at("SPLITK")};
          if (!fast_mma_fp8_variant(ch, FastConfig{}.mma_terms, epi, tmpl, K, fp8, wt, arch))
            return "gemv.mma_fp8 cannot run this point here";
        } catch (const Error& e) {
          return e.reason();
        }
        return "";
      };
      return {fast_family(s, "cuda:gemv.mma_fp8", params, constraint)};
    }
    // Otherwise (batch 1, or a projection gemv.mma_fp8 cannot take) gemv.fp8: its tuning
    // parameters are the space; BATCH, EPI, SCALE (the weights' layout) and CVT (fp8_cvt) are bound.
    std::vector<SpaceParam> params;
    for (const auto& d : find_family("gemv", "fp8").params)
      if (d.name != "BATCH" && d.name != "EPI" && d.name != "SCALE" && d.name != "CVT") params.push_back({d.name, d.values});
    auto constraint = [epi, tmpl, fp8, wt, arch, N, K](const ParamPoint& p) -> std::string {
      if (p.at("SPLITK") > 1 && epi != kEpiResidual) return "split-K needs the residual epilogue";
      try {  // the point as the executor binds it at this batch (rows and unroll may shrink)
        const GemvChoice ch{p.at("BLOCK"), p.at("ROWS"), p.at("UNROLL"), p.at("SPLITK")};
        const Variant v = fast_fp8_gemv_variant(ch, epi, tmpl, fp8, wt, arch);
        // The K slice's x' (and the block scales) in shared memory.
        if (gemv_launch_shape(v, N, K).smem > size_t(max_dynamic_smem(arch)))
          return "the K slice's x' needs more shared memory than this GPU's " + std::to_string(max_dynamic_smem(arch) / 1024) +
                 " KiB";
      } catch (const Error& e) {
        return e.reason();
      }
      return "";
    };
    return {fast_family(s, "cuda:gemv.fp8", params, constraint)};
  }
  if (const Slot* slot = slot_of(s.kind)) {
    const long long K = gemv_shape(c, s.kind).second;
    // The family the executor runs at this batch: gemv.mma (tensor cores) from mma_min_batch
    // on where it can, else gemv.fused.
    const FastConfig defaults;
    const int tmpl = batch_template(batch);
    const bool use_mma =
        fast_decode_gemv(defaults, defaults.qkv, defaults.qkv_mma, slot->epi, tmpl, K, wt, arch).family->name == "mma";
    // The space: the family's tuning parameters; BATCH (the executor's template), EPI (the
    // region's) and gemv.mma's TERMS (the executor's) are bound.
    const Family& fam = find_family("gemv", use_mma ? "mma" : "fused");
    std::vector<SpaceParam> params;
    for (const auto& d : fam.params)
      if (d.name != "BATCH" && d.name != "EPI" && d.name != "TERMS") params.push_back({d.name, d.values});
    const int epi = slot->epi;
    auto constraint = [&fam, use_mma, epi, tmpl](const ParamPoint& p) -> std::string {
      if (p.at("SPLITK") > 1 && epi != kEpiResidual) return "split-K needs the residual epilogue";
      std::map<std::string, int> v(p.begin(), p.end());
      v["BATCH"] = tmpl;
      v["EPI"] = epi;
      if (use_mma) v["TERMS"] = FastConfig{}.mma_terms;
      return fam.constraint ? fam.constraint(v) : std::string();
    };
    return {fast_family(s, use_mma ? "cuda:gemv.mma" : "cuda:gemv.fused", params, constraint)};
  }
  if (s.kind != RegionKind::Attention) return {};
  const int64_t context = std::min<int64_t>(s.point.context, c.max_position_embeddings);
  // At batch 1 and a context within attn_long_from the step runs attn_decode.cluster: its
  // BLOCK and CLUSTER (blocks per KV head) are the space.
  const FastConfig defaults;
  if (context <= defaults.attn_long_from &&
      decode_attention_variant(c, defaults, wt, arch, batch_template(batch), 0).family->name == "cluster") {
    const Family& cl = find_family("attn_decode", "cluster");
    std::vector<SpaceParam> params;
    for (const auto& d : cl.params)
      if (d.name == "BLOCK" || d.name == "CLUSTER") params.push_back({d.name, d.values});
    auto constraint = [&c, wt, arch, batch](const ParamPoint& p) -> std::string {
      FastConfig cfg;
      cfg.attn_block = p.at("BLOCK");
      cfg.attn_cluster = p.at("CLUSTER");
      try {
        const Variant v = decode_attention_variant(c, cfg, wt, arch, batch_template(batch), 0);
        if (v.family->name != "cluster") return "CLUSTER blocks of at most 128 rows do not cover the short contexts";
        if (v.param("BLOCK") != cfg.attn_block) return "BLOCK does not divide the query group's outputs";
      } catch (const Error& e) {
        return e.reason();
      }
      return "";
    };
    return {fast_family(s, "cuda:attn_decode.cluster", params, constraint)};
  }
  // Otherwise the fused kernel: its BLOCK, SPLIT and ILP are the space (the prefill attention's
  // TILE stays at its default; it does not run in a decode step).
  const Family& attn = find_family("attn_decode", "fused");
  const int hd = int(c.head_dim), group = int(c.num_heads / c.num_kv_heads);
  std::vector<SpaceParam> params;
  for (const auto& d : attn.params)
    if (d.name == "BLOCK" || d.name == "SPLIT" || d.name == "ILP") params.push_back({d.name, d.values});
  const int smem_limit = attn_short_smem_budget(arch);
  auto constraint = [&attn, hd, group, smem_limit](const ParamPoint& p) -> std::string {
    std::map<std::string, int> v(p.begin(), p.end());
    v["HD"] = hd;
    v["GROUP"] = group;
    if (attn_fused_smem_bytes(v.at("SPLIT"), hd, group) > smem_limit)
      return "needs more dynamic shared memory than this GPU's " + std::to_string(smem_limit / 1024) + " KiB";
    return attn.constraint ? attn.constraint(v) : std::string();
  };
  return {fast_family(s, "cuda:attn_decode.fused", params, constraint)};
}

std::unique_ptr<Evaluator> cuda_fast_evaluator(const Graph& g, const RegionTask& t) {
  if (t.space.families.size() < 2) return nullptr;
  if (t.summary.phase == Phase::Prefill && t.space.find(kLtFamily) != nullptr) {
    const auto [N, K] = gemv_shape(g.config, t.summary.kind);
    const int64_t tokens = std::min<int64_t>(std::max<int64_t>(t.summary.point.tokens, kPromptTokens),
                                             g.config.max_position_embeddings);
    const int epi = prefill_gemm_epi(gemv_slot(slot_of(t.summary.kind)->name), FastConfig{},
                                     fast_fp8_scales(g) != Fp8Scales::None);
    return make_prefill_gemm_evaluator(t.summary.kind, N, K, tokens, g.ops.front().weights.at(0)->dtype, epi);
  }
  if (t.summary.phase == Phase::Prefill)
    return t.summary.kind == RegionKind::Attention
               ? std::make_unique<PrefillAttentionEvaluator>(g, int(std::min<int64_t>(
                                                                     std::max<int64_t>(t.summary.point.tokens, kPromptTokens),
                                                                     g.config.max_position_embeddings)))
               : nullptr;
  const ModelConfig& c = g.config;
  const int batch = int(t.summary.point.batch);
  if (const Slot* slot = slot_of(t.summary.kind)) {
    const auto [N, K] = gemv_shape(c, t.summary.kind);
    const bool mma_fp8 = t.space.find("cuda:gemv.mma_fp8") != nullptr;
    const bool mma = mma_fp8 || t.space.find("cuda:gemv.mma") != nullptr;
    const Fp8Scales fp8 = mma_fp8 || t.space.find("cuda:gemv.fp8") != nullptr ? fast_fp8_scales(g) : Fp8Scales::None;
    return std::make_unique<GemvEvaluator>(*slot, N, K, batch, g.ops.front().weights.at(0)->dtype, mma, fp8);
  }
  if (t.summary.kind == RegionKind::Attention)
    return std::make_unique<AttentionEvaluator>(g, batch, int(std::min<int64_t>(t.summary.point.context, c.max_position_embeddings)));
  return nullptr;
}

std::unique_ptr<Evaluator> make_cuda_attention_evaluator(const Graph& g, int batch, int context) {
  return std::make_unique<AttentionEvaluator>(g, batch, context);
}

std::vector<PlanKernelBinary> cuda_plan_kernels(const Graph& g, const KnobValues& fast, const std::string& arch) {
  std::vector<PlanKernelBinary> out;
  const DType wt = g.ops.front().weights.at(0)->dtype;
  std::vector<Variant> vs = fast_path_variants(g.config, wt, fast_config_of(fast), arch, fast_fp8_scales(g), fast_fp8_head(g));
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
    k.kernel.source_key = rs[i].key;
    k.bytes = rs[i].cubin;
    out.push_back(std::move(k));
  }
  return out;
}

std::string carveout_region_of(const std::string& region) {
  for (const GemvSlotField& s : kGemvSlots)
    if (s.region == region) return s.name;
  return region == kAttentionRegion ? kAttentionRegion : "";
}

KnobValues cuda_fast_from_routes(const std::vector<PlanRoute>& routes) {
  KnobValues v = plan_fast_of(FastConfig{});
  v.take_routes(routes, "decode");  // the knobs' search bindings (fast_knobs.cpp) say which params
  // A prompt step's searched routes: its attention's and its projection GEMMs' (the others run
  // fixed kernels).
  std::vector<PlanRoute> prompt;
  for (const PlanRoute& r : routes)
    if (r.phase == "prefill" && (r.family == "cuda:attn_prefill.pipe" || r.family == kLtFamily || own_gemm_family(r.family)))
      prompt.push_back(r);
  v.take_routes(prompt, "prefill");
  return v;
}

}  // namespace ac
