// A prompt step's projection GEMMs as a searched region (search_eval.h): the fallback is
// cublasGemmEx (cuBLAS's own choice), cuda:gemm.lt's ALGO the rank in cuBLASLt's heuristic list
// for the region's shape on this GPU (cublaslt_route.h), cuda:gemm.wgmma and cuda:gemm.mma our own
// GEMMs (gemm16.h) at the store the executor gives the region.
#include <algorithm>
#include <cmath>
#include <map>

#include "agentcompile/core/error.h"
#include "agentcompile/core/rng.h"
#include "agentcompile/core/stats.h"
#include "agentcompile/core/threads.h"
#include "backends/cuda/cublas_route.h"
#include "backends/cuda/cublaslt_route.h"
#include "backends/cuda/fast/variants.h"
#include "backends/cuda/fast_config.h"
#include "backends/cuda/gemm16.h"
#include "backends/cuda/search_build.h"
#include "backends/cuda/search_eval.h"
#include "backends/cuda/search_util.h"

namespace ac {

namespace {

using namespace ac::cuda;

// The region's GEMM as the executor calls it on n prompt rows: attn_in into f32 rows; attn_out and
// mlp_out add into the f32 residual stream; mlp_in is gate and up with SwiGLU: the library's routes
// run the two GEMMs into 16-bit gate and up and swiglu.w16 after them, our own GEMMs one launch at
// EPI 3 (or, at EPI 0, the two GEMMs and swiglu.w16 too), so each route is timed and checked on what
// the down projection reads. Inputs are random 16-bit rows in the weights' dtype.
class PrefillGemmEvaluator final : public Evaluator {
 public:
  PrefillGemmEvaluator(RegionKind kind, long long N, long long K, long long n, DType wt, int epi)
      : N_(N), K_(K), n_(std::max(1LL, n)), wt_(wt), epi_(epi) {
    shape_ = LtShape{wt, kind == RegionKind::MlpIn ? wt : DType::F32, n_, K_, N_,
                     kind == RegionKind::AttnOut || kind == RegionKind::MlpOut};
    mats_ = kind == RegionKind::MlpIn ? 2 : 1;
  }
  std::string backend() const override { return "cuda"; }
  double timed_flops() const override { return 2.0 * double(mats_) * double(n_) * double(N_) * double(K_); }
  std::string timing_method() const override {
    return "the region's GEMM" + std::string(mats_ > 1 ? "s (gate and up) with SwiGLU" : "") + " alone on " +
           std::to_string(n_) + " prompt rows (the summary's, at least " + std::to_string(kPromptTokens) +
           "): CUDA events around 8 back-to-back calls, median of the repeats per call";
  }

  void prepare(const std::vector<Candidate>& cs, Clock::time_point deadline) override {
    std::vector<Variant> vs;
    for (const Candidate& c : cs)
      if (own_gemm_family(c.family)) {
        try {
          if (std::optional<Variant> v = own_variant(c)) vs.push_back(std::move(*v));
        } catch (const Error&) {
          // compile() records why
        }
      }
    if (mats_ > 1) vs.push_back(prefill_swiglu_variant(wt_, arch_));
    BuildMemo::get().build_all(vs, deadline);
  }

  void begin(const RegionTask&) override {
    if (ready_) return;
    arch_ = Device::get().info().arch();
    const CUstream s = Device::get().stream();
    lt_ = std::make_unique<LtGemm>(s, kLtAlgorithms);
    cublas_ = std::make_unique<CublasHandle>(s);
    x_ = random_w16(size_t(n_ * K_), 71, 1.0f, 0.0f, wt_);
    dx_ = DeviceBuffer(x_.size() * 2);
    dx_.upload(x_.data(), x_.size() * 2, s);
    for (int m = 0; m < mats_; ++m) {
      w_.push_back(random_w16(size_t(N_ * K_), 72 + uint64_t(m), 1.0f / std::sqrt(float(K_)), 0.0f, wt_));
      dw_.emplace_back(w_.back().size() * 2);
      dw_.back().upload(w_.back().data(), w_.back().size() * 2, s);
      out_.emplace_back(size_t(n_ * N_) * dtype_size(shape_.out_t));
    }
    if (shape_.accumulate) {  // the residual stream the product adds into
      Rng r(73);
      init_.resize(size_t(n_ * N_));
      for (float& v : init_) v = r.normal();
    }
    if (mats_ > 1) act_ = DeviceBuffer(size_t(n_ * N_) * 2);
    // The rows checked: the first, the last and some between (every output of each).
    for (long long r : {0LL, 1LL, n_ / 3, n_ / 2, (2 * n_) / 3, n_ - 2, n_ - 1})
      if (r >= 0 && r < n_ && std::find(rows_.begin(), rows_.end(), r) == rows_.end()) rows_.push_back(r);
    want_.assign(size_t(mats_), std::vector<float>(rows_.size() * size_t(N_)));
    const std::vector<float> xf = widen(x_, wt_);
    for (int m = 0; m < mats_; ++m) {
      const std::vector<float> wf = widen(w_[size_t(m)], wt_);
      parallel_for(size_t(N_), 64, [&](size_t b, size_t e) {
        for (size_t j = b; j < e; ++j)
          for (size_t ri = 0; ri < rows_.size(); ++ri) {
            const float* xr = xf.data() + size_t(rows_[ri] * K_);
            const float* wr = wf.data() + j * size_t(K_);
            double acc = 0;
            for (long long k = 0; k < K_; ++k) acc += double(xr[k]) * double(wr[k]);
            if (shape_.accumulate) acc += double(init_[size_t(rows_[ri] * N_) + j]);
            want_[size_t(m)][ri * size_t(N_) + j] = float(acc);
          }
      });
    }
    if (mats_ > 1) {  // what the down projection reads: silu(gate) * up of the 16-bit products
      want_act_.resize(want_[0].size());
      for (size_t i = 0; i < want_act_.size(); ++i) {
        const double g = round16(want_[0][i]), u = round16(want_[1][i]);
        want_act_[i] = float(g / (1.0 + std::exp(-g)) * u);
      }
    }
    Device::get().synchronize();
    ready_ = true;
  }

  // The fallback builds nothing; a rank past the heuristic's list for this shape cannot run; our
  // own GEMMs compile with NVRTC (prepare() built them in parallel) without spilling.
  std::string compile(const Candidate& c) override {
    if (own_gemm_family(c.family)) {
      std::optional<Variant> v;
      try {
        v = own_variant(c);
      } catch (const Error& e) {
        return e.reason();
      }
      if (!v) return c.family + " does not run on " + arch_;
      const Built b = BuildMemo::get().build(*v);
      if (!b.ok) return v->name() + ": " + b.error;
      if (b.spill_bytes > 0) return "spills " + std::to_string(b.spill_bytes) + " bytes";
      if (mats_ > 1 && epi_ == 0)
        if (const Built sw = BuildMemo::get().build(prefill_swiglu_variant(wt_, arch_)); !sw.ok) return sw.error;
      return "";
    }
    if (mats_ > 1)
      if (const Built sw = BuildMemo::get().build(prefill_swiglu_variant(wt_, arch_)); !sw.ok) return sw.error;
    const int rank = algo(c);
    if (rank < 0) return "";
    const int count = lt_->algorithms(shape_);
    if (rank >= count)
      return "cuBLASLt's heuristics offer " + std::to_string(count) + " algorithm" + (count == 1 ? "" : "s") +
             " for this shape";
    return "";
  }

  // The sampled rows against double precision over the same 16-bit inputs (f32 outputs: the f32
  // accumulation bound; mlp_in's SwiGLU: a 16-bit product rounded the other way moves an output by
  // one 16-bit step). Outputs start as NaN, or as the residual.
  CorrectnessResult check(const Candidate& c) override {
    CorrectnessResult r;
    const CUstream s = Device::get().stream();
    for (int m = 0; m < mats_; ++m) {
      if (shape_.accumulate) out_[size_t(m)].upload(init_.data(), init_.size() * 4, s);
      else out_[size_t(m)].fill_u32(0xffffffffu, s);  // NaN in f32 and in both 16-bit halves
    }
    if (mats_ > 1) act_.fill_u32(0xffffffffu, s);
    run(c);
    std::vector<float> got(rows_.size() * size_t(N_));
    std::vector<uint16_t> row16(static_cast<size_t>(N_));
    const DeviceBuffer& out = mats_ > 1 ? act_ : out_[0];
    const size_t es = mats_ > 1 ? 2 : dtype_size(shape_.out_t);
    for (size_t ri = 0; ri < rows_.size(); ++ri) {
      float* dst = got.data() + ri * size_t(N_);
      if (es == 4) {
        CU_CHECK(drv().cuMemcpyDtoHAsync(dst, out.ptr() + size_t(rows_[ri] * N_) * 4, size_t(N_) * 4, s));
      } else {
        CU_CHECK(drv().cuMemcpyDtoHAsync(row16.data(), out.ptr() + size_t(rows_[ri] * N_) * 2, size_t(N_) * 2, s));
        Device::get().synchronize();
        for (long long j = 0; j < N_; ++j) dst[j] = load_as_f32(row16.data(), wt_, size_t(j));
      }
    }
    Device::get().synchronize();
    const double tol = es == 4 ? 1e-4 : wt_ == DType::BF16 ? 1e-2 : 2e-3;
    const std::optional<double> e = rel_l2(got, mats_ > 1 ? want_act_ : want_[0]);
    ++r.checks;
    if (!e) {
      r.reason = "NaN or an unwritten element";
      return r;
    }
    r.rel_err = *e;
    if (*e > tol) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "rel L2 %.3g > %.0e", *e, tol);
      r.reason = buf;
      return r;
    }
    r.ok = true;
    return r;
  }

  TimingResult time(const Candidate& c, int warmup, int repeats) override {
    TimingResult t;
    constexpr int kCalls = 8;
    const CUstream s = Device::get().stream();
    for (int i = 0; i < std::max(1, warmup); ++i) run(c);
    Device::get().synchronize();
    EventTimer timer;
    for (int rep = 0; rep < std::max(1, repeats); ++rep) {
      timer.start(s);
      for (int i = 0; i < kCalls; ++i) run(c);
      t.samples_us.push_back(double(timer.stop_ms(s)) * 1000.0 / kCalls);
    }
    t.median_us = median(t.samples_us);
    t.ok = t.median_us > 0;
    return t;
  }

 private:
  static int algo(const Candidate& c) {
    auto it = c.params.find("ALGO");
    return it == c.params.end() ? -1 : it->second;
  }
  // Our own GEMM's variant for the candidate at the region's store (none on a GPU it does not run on).
  std::optional<Variant> own_variant(const Candidate& c) const {
    return own_gemm_variant(own_gemm_choice(c.family, c.params), epi_, wt_, arch_);
  }
  // v rounded to the weights' 16-bit type, as the GEMMs store gate and up.
  double round16(float v) const { return wt_ == DType::BF16 ? bf16_to_f32(f32_to_bf16(v)) : f16_to_f32(f32_to_f16(v)); }
  void run(const Candidate& c) {
    const CUstream s = Device::get().stream();
    const void* x = reinterpret_cast<const void*>(dx_.ptr());
    auto w = [&](int m) { return reinterpret_cast<const void*>(dw_[size_t(m)].ptr()); };
    auto out = [&](int m) { return reinterpret_cast<void*>(out_[size_t(m)].ptr()); };
    if (own_gemm_family(c.family)) {
      const std::optional<Variant> v = own_variant(c);
      if (!v) throw_internal(c.name(), "run on a GPU it does not run on");
      const LoadedKernel& k = load_kernel(*v);
      std::vector<GemmW16Params>& ps = params_[c.name()];  // the launches' parameters (LOAD 1: the tensor maps) once
      if (ps.empty()) {
        if (epi_ == 3) ps.push_back(gemm16_params(*v, wt_, x, w(0), act_.as<void>(), n_, N_, K_, K_, K_, N_, w(1)));
        else
          for (int m = 0; m < mats_; ++m) ps.push_back(gemm16_params(*v, wt_, x, w(m), out(m), n_, N_, K_, K_, K_, N_));
      }
      for (const GemmW16Params& p : ps)
        launch_kernel(k, gemm16_grid(*v, n_, N_, Device::get().info().sm_count), unsigned(v->threads()), size_t(gemm16_smem(*v)), s, &p);
      if (epi_ != 3 && mats_ > 1) swiglu();
      return;
    }
    const int rank = algo(c);
    for (int m = 0; m < mats_; ++m) {
      if (rank < 0) cublas_gemm(*cublas_, wt_, x, w(m), out(m), shape_.out_t, n_, K_, N_, shape_.accumulate ? 1.0f : 0.0f);
      else lt_->run(shape_, rank, x, w(m), out(m));
    }
    if (mats_ > 1) swiglu();
  }
  // swiglu.w16 over the 16-bit gate and up outputs into act_, as the executor launches it.
  void swiglu() {
    const Variant v = prefill_swiglu_variant(wt_, arch_);
    Swiglu16Params sp{out_[0].as<void>(), out_[1].as<void>(), act_.as<void>(), n_ * N_};
    launch_kernel(load_kernel(v), Dim3{elementwise_blocks((n_ * N_ + 7) / 8, unsigned(v.threads()))}, unsigned(v.threads()), 0,
                  Device::get().stream(), &sp);  // eight values per thread
  }

  long long N_, K_, n_;
  DType wt_;
  int epi_;  // our own GEMMs' store (prefill_gemm_epi)
  std::string arch_;
  LtShape shape_;
  int mats_ = 1;
  bool ready_ = false;
  std::unique_ptr<LtGemm> lt_;
  std::unique_ptr<CublasHandle> cublas_;
  std::vector<uint16_t> x_;
  std::vector<std::vector<uint16_t>> w_;
  std::vector<float> init_;
  std::vector<long long> rows_;
  std::vector<std::vector<float>> want_;
  std::vector<float> want_act_;  // mlp_in: SwiGLU of want_'s rounded gate and up
  std::map<std::string, std::vector<GemmW16Params>> params_;
  DeviceBuffer dx_, act_;
  std::vector<DeviceBuffer> dw_, out_;
};

}  // namespace

std::unique_ptr<Evaluator> make_prefill_gemm_evaluator(RegionKind kind, long long N, long long K, long long tokens, DType wt,
                                                       int epi) {
  return std::make_unique<PrefillGemmEvaluator>(kind, N, K, tokens, wt, epi);
}

}  // namespace ac
