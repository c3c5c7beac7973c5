// A prompt step's projection GEMMs as a searched region (search_eval.h): the fallback is
// cublasGemmEx (cuBLAS's own choice), cuda:gemm.lt's ALGO the rank in cuBLASLt's heuristic list
// for the region's shape on this GPU (cublaslt_route.h).
#include <algorithm>
#include <cmath>

#include "agentcompile/core/error.h"
#include "agentcompile/core/rng.h"
#include "agentcompile/core/stats.h"
#include "agentcompile/core/threads.h"
#include "backends/cuda/cublas_route.h"
#include "backends/cuda/cublaslt_route.h"
#include "backends/cuda/fast_config.h"
#include "backends/cuda/search_eval.h"
#include "backends/cuda/search_util.h"

namespace ac {

namespace {

using namespace ac::cuda;

// The region's GEMM as the executor calls it on n prompt rows: attn_in into f32 rows; attn_out and
// mlp_out add into the f32 residual stream; mlp_in writes 16-bit gate and up (two GEMMs of one
// shape, both timed). Inputs are random 16-bit rows in the weights' dtype.
class PrefillGemmEvaluator final : public Evaluator {
 public:
  PrefillGemmEvaluator(RegionKind kind, long long N, long long K, long long n, DType wt)
      : N_(N), K_(K), n_(std::max(1LL, n)), wt_(wt) {
    shape_ = LtShape{wt, kind == RegionKind::MlpIn ? wt : DType::F32, n_, K_, N_,
                     kind == RegionKind::AttnOut || kind == RegionKind::MlpOut};
    mats_ = kind == RegionKind::MlpIn ? 2 : 1;
  }
  std::string backend() const override { return "cuda"; }
  double timed_flops() const override { return 2.0 * double(mats_) * double(n_) * double(N_) * double(K_); }
  std::string timing_method() const override {
    return "the region's GEMM" + std::string(mats_ > 1 ? "s (gate and up)" : "") + " alone on " + std::to_string(n_) +
           " prompt rows (the summary's, at least " + std::to_string(kPromptTokens) +
           "): CUDA events around 8 back-to-back calls, median of the repeats per call";
  }

  void begin(const RegionTask&) override {
    if (ready_) return;
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
    Device::get().synchronize();
    ready_ = true;
  }

  // The fallback builds nothing; a rank past the heuristic's list for this shape cannot run.
  std::string compile(const Candidate& c) override {
    const int rank = algo(c);
    if (rank < 0) return "";
    const int count = lt_->algorithms(shape_);
    if (rank >= count)
      return "cuBLASLt's heuristics offer " + std::to_string(count) + " algorithm" + (count == 1 ? "" : "s") +
             " for this shape";
    return "";
  }

  // The sampled rows against double precision over the same 16-bit inputs (f32 outputs: the f32
  // accumulation bound; 16-bit outputs: their rounding). Outputs start as NaN, or as the residual.
  CorrectnessResult check(const Candidate& c) override {
    CorrectnessResult r;
    const CUstream s = Device::get().stream();
    const double tol = shape_.out_t == DType::F32 ? 1e-4 : shape_.out_t == DType::BF16 ? 8e-3 : 1e-3;
    for (int m = 0; m < mats_; ++m) {
      if (shape_.accumulate) out_[size_t(m)].upload(init_.data(), init_.size() * 4, s);
      else out_[size_t(m)].fill_u32(0xffffffffu, s);  // NaN in f32 and in both 16-bit halves
    }
    run(c);
    std::vector<float> got(rows_.size() * size_t(N_));
    const size_t es = dtype_size(shape_.out_t);
    std::vector<uint16_t> row16(static_cast<size_t>(N_));
    for (int m = 0; m < mats_; ++m) {
      for (size_t ri = 0; ri < rows_.size(); ++ri) {
        float* dst = got.data() + ri * size_t(N_);
        if (es == 4) {
          CU_CHECK(drv().cuMemcpyDtoHAsync(dst, out_[size_t(m)].ptr() + size_t(rows_[ri] * N_) * 4, size_t(N_) * 4, s));
        } else {
          CU_CHECK(drv().cuMemcpyDtoHAsync(row16.data(), out_[size_t(m)].ptr() + size_t(rows_[ri] * N_) * 2, size_t(N_) * 2, s));
          Device::get().synchronize();
          for (long long j = 0; j < N_; ++j) dst[j] = load_as_f32(row16.data(), shape_.out_t, size_t(j));
        }
      }
      Device::get().synchronize();
      const std::optional<double> e = rel_l2(got, want_[size_t(m)]);
      ++r.checks;
      if (!e) {
        r.reason = "NaN or an unwritten element";
        return r;
      }
      r.rel_err = std::max(r.rel_err, *e);
      if (*e > tol) {
        char buf[96];
        std::snprintf(buf, sizeof buf, "rel L2 %.3g > %.0e", *e, tol);
        r.reason = buf;
        return r;
      }
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
  void run(const Candidate& c) {
    const int rank = algo(c);
    for (int m = 0; m < mats_; ++m) {
      void* out = reinterpret_cast<void*>(out_[size_t(m)].ptr());
      const void *x = reinterpret_cast<const void*>(dx_.ptr()), *w = reinterpret_cast<const void*>(dw_[size_t(m)].ptr());
      if (rank < 0) cublas_gemm(*cublas_, wt_, x, w, out, shape_.out_t, n_, K_, N_, shape_.accumulate ? 1.0f : 0.0f);
      else lt_->run(shape_, rank, x, w, out);
    }
  }

  long long N_, K_, n_;
  DType wt_;
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
  DeviceBuffer dx_;
  std::vector<DeviceBuffer> dw_, out_;
};

}  // namespace

std::unique_ptr<Evaluator> make_prefill_gemm_evaluator(RegionKind kind, long long N, long long K, long long tokens, DType wt) {
  return std::make_unique<PrefillGemmEvaluator>(kind, N, K, tokens, wt);
}

}  // namespace ac
