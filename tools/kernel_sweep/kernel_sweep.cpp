// kernel_sweep: times every valid point of the fast path's GEMV and attention families on the
// shapes of the target models, on the GPU machine (tools/gpu_sweep.sh runs it). Each variant is
// checked against the f32 CPU composition first (poisoned output, relative L2 <= 1e-5), then
// timed as a CUDA graph of 24 back-to-back launches with programmatic dependent launch (as in a
// decode step), rotating over enough weight copies to defeat the L2 (60 MiB on the H200); median of 7 replays.
// Prints one JSON line per measured point and a summary of the best point per (model, region).
// SWEEP_BATCH=B (1..8, default 1) sweeps at B rows of x; SWEEP_FAMILY=fused|mma|both (default:
// fused at batch 1, both above) picks the GEMV families (gemv.mma: TERMS=2); SWEEP_FAMILY=fp8
// sweeps gemv.fp8 instead over the four projections (not the 16-bit lm_head): random weights
// quantized to e4m3 with amax scales per 128 x 128 block (SWEEP_SCALE=1, default) or per row
// (SWEEP_SCALE=0), checked against their dequantized f32 weights; at SWEEP_BATCH above 1 it sweeps
// gemv.mma_fp8 too (the tensor-core form FP8 batches run), SWEEP_FAMILY=fp8_mma only that; FP8
// points run with both widenings of the codes (CVT 0 and 1) unless SWEEP_CVT=0|1. SWEEP_FAMILY=gemm times the
// prompt's projection GEMMs instead: cuBLAS against every gemm.wgmma point (gemm_sweep.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "agentcompile/tuning/reference_ops.h"
#include "agentcompile/backends/cuda/cuda_executor.h"
#include "agentcompile/core/json.h"
#include "agentcompile/core/rng.h"
#include "agentcompile/core/threads.h"
#include "agentcompile/model/fp8_quantize.h"
#include "agentcompile/model/hf_config.h"
#include "agentcompile/model/synth_model.h"
#include "backends/cuda/device.h"
#include "backends/cuda/fast_executor.h"
#include "backends/cuda/kernel_loader.h"
#include "graph_timing.h"
#include "gemm_sweep.h"

extern "C" {
#include "../../kernels/cuda/common/params.h"
}

using namespace ac;
using namespace ac::cuda;

namespace {

struct Region {
  const char* name;
  int epi;
  bool norm;
  long long N, K;
};

std::vector<uint16_t> random_bf16(size_t n, uint64_t seed, float scale) {
  Rng r(seed);
  std::vector<uint16_t> v(n);
  for (auto& x : v) x = f32_to_bf16(scale * r.normal());
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  std::string why;
  if (!cuda_available(&why)) {
    std::fprintf(stderr, "kernel_sweep: no GPU: %s\n", why.c_str());
    return 2;
  }
  Device& dev = Device::get();
  const std::string arch = dev.info().arch();
  const CUstream s = dev.stream();
  const std::vector<std::string> models = argc > 1 ? std::vector<std::string>(argv + 1, argv + argc)
                                                   : std::vector<std::string>{"llama-3.2-1b", "qwen3-1.7b", "qwen3-4b"};
  const Family& gemv = find_family("gemv", "fused");
  const Family& mma = find_family("gemv", "mma");
  const Family& gemv_fp8 = find_family("gemv", "fp8");
  const Family& mma_fp8 = find_family("gemv", "mma_fp8");
  const char* batch_env = std::getenv("SWEEP_BATCH");
  const long long B = batch_env ? std::atoll(batch_env) : 1;
  if (B < 1 || B > 8) {
    std::fprintf(stderr, "kernel_sweep: SWEEP_BATCH must be 1..8\n");
    return 2;
  }
  const int tmpl = batch_template(B);
  const std::string fam = std::getenv("SWEEP_FAMILY") ? std::getenv("SWEEP_FAMILY") : (B == 1 ? "fused" : "both");
  if (fam == "gemm") return sweep_prompt_gemms(models);
  const bool fp8 = fam == "fp8" || fam == "fp8_mma";
  const int scale = std::getenv("SWEEP_SCALE") ? std::atoi(std::getenv("SWEEP_SCALE")) : 1;
  if (fp8 && scale != 0 && scale != 1) {
    std::fprintf(stderr, "kernel_sweep: SWEEP_SCALE must be 0 (per row) or 1 (128 x 128 blocks)\n");
    return 2;
  }
  // FP8: each point with both widenings of the codes (CVT 0 cvt, 1 bit moves), or only SWEEP_CVT's.
  std::vector<int> cvts{0};
  if (fp8) cvts = std::getenv("SWEEP_CVT") ? std::vector<int>{std::atoi(std::getenv("SWEEP_CVT")) != 0} : std::vector<int>{0, 1};
  Json best = Json::object();
  for (const auto& model : models) {
    const ModelConfig c = parse_model_config(find_synth_preset(model)->config, model);
    const long long qkvd = c.q_dim() + 2 * c.kv_dim();
    const Region regions[] = {{"qkv", 0, true, qkvd, c.hidden_size},
                              {"o", 1, false, c.hidden_size, c.q_dim()},
                              {"gate_up", 2, true, c.intermediate_size, c.hidden_size},
                              {"down", 1, false, c.hidden_size, c.intermediate_size},
                              {"lm_head", 3, true, c.vocab_size, c.hidden_size}};
    for (const Region& R : regions) {
      if (fp8 && R.epi == 3) continue;  // the lm_head stays 16-bit in FP8 checkpoints
      const int mats = R.epi == 2 ? 2 : 1;
      const double bytes = double(R.N) * double(R.K) * (fp8 ? 1 : 2) * mats;
      const int copies = std::max(1, int(std::ceil(160e6 / bytes)));
      // Inputs: weights (copies x mats), x, gamma, residual; the CPU answer for copy 0.
      std::vector<DeviceBuffer> w;
      std::vector<uint16_t> w0 = random_bf16(size_t(R.N * R.K), 1, 0.03f), w1 = random_bf16(size_t(R.N * R.K), 2, 0.03f);
      // FP8: the same weights quantized (e4m3 codes, f32 scales); the answer from their dequantized values.
      std::vector<uint8_t> q[2], sc[2];
      std::vector<float> deq[2];
      DeviceBuffer dscale[2];
      if (fp8) {
        const int64_t bo = scale ? 128 : 1, bi = scale ? 128 : R.K;
        for (int m = 0; m < mats; ++m) {
          std::vector<float> wf32(w0.size());
          for (size_t i = 0; i < wf32.size(); ++i) wf32[i] = bf16_to_f32(m == 0 ? w0[i] : w1[i]);
          quantize_fp8(wf32, R.N, R.K, bo, bi, DType::F32, q[m], sc[m]);
          deq[m] = dequantize_fp8(q[m].data(), sc[m].data(), DType::F32, R.N, R.K, bo, bi);
          dscale[m] = DeviceBuffer(sc[m].size());
          dscale[m].upload(sc[m].data(), sc[m].size(), s);
        }
      }
      for (int i = 0; i < copies * mats; ++i) {
        w.emplace_back(size_t(R.N * R.K) * (fp8 ? 1 : 2));
        if (fp8) w.back().upload(q[i % mats].data(), q[i % mats].size(), s);
        else w.back().upload(i % mats == 0 ? w0.data() : w1.data(), w0.size() * 2, s);
      }
      std::vector<float> x(size_t(B * R.K)), gamma_f(size_t(R.K));
      Rng rng(3);
      for (auto& v : x) v = rng.normal();
      std::vector<uint16_t> gamma(size_t(R.K));
      for (size_t i = 0; i < gamma.size(); ++i) {
        gamma[i] = f32_to_bf16(1.0f + 0.1f * rng.normal());
        gamma_f[i] = bf16_to_f32(gamma[i]);
      }
      DeviceBuffer dx(x.size() * 4), dg(gamma.size() * 2), out(size_t(B * R.N) * 4), keys(64);
      dx.upload(x.data(), x.size() * 4, s);
      dg.upload(gamma.data(), gamma.size() * 2, s);
      keys.fill_u32(0, s);  // the argmax epilogue's keys (only timed here)
      std::vector<float> xn(x.size()), wf(w0.size()), y(size_t(B * R.N)), y2(y.size()), want(y.size());
      if (R.norm) ref::rms_norm(x.data(), B, R.K, gamma_f.data(), 1e-6f, xn.data());
      else xn = x;
      for (size_t i = 0; i < wf.size(); ++i) wf[i] = fp8 ? deq[0][i] : bf16_to_f32(w0[i]);
      ref::linear(xn.data(), B, R.K, wf.data(), nullptr, R.N, y.data());
      want = y;
      if (R.epi == 2) {
        for (size_t i = 0; i < wf.size(); ++i) wf[i] = fp8 ? deq[1][i] : bf16_to_f32(w1[i]);
        ref::linear(xn.data(), B, R.K, wf.data(), nullptr, R.N, y2.data());
        ref::swiglu(y.data(), y2.data(), B * R.N, want.data());
      }
      // Every valid point of the space(s) for this region at this batch.
      std::vector<Variant> points;
      // gemv.fused, or gemv.fp8 (the same parameters and SCALE).
      const Family& gf = fp8 ? gemv_fp8 : gemv;
      if (fam != "mma" && fam != "fp8_mma")
      for (int block : gf.params[0].values)
        for (int rows : gf.params[1].values)
          for (int unroll : gf.params[2].values)
            for (int splitk : gf.params[3].values) {
              if (splitk > 1 && R.epi != 1) continue;
              for (int cvt : cvts) {
                std::map<std::string, int> vals{{"BLOCK", block}, {"ROWS", rows}, {"UNROLL", unroll},
                                                {"SPLITK", splitk}, {"BATCH", tmpl}, {"EPI", R.epi}};
                if (fp8) {
                  vals["SCALE"] = scale;
                  vals["CVT"] = cvt;
                }
                if (!gf.constraint(vals).empty()) continue;
                const Variant v = make_variant(gf, vals, {DType::BF16}, arch);
                if (gemv_launch_shape(v, R.N, R.K).smem > 160 * 1024) continue;  // x' of the K slice
                points.push_back(v);
              }
            }
      // gemv.mma, or gemv.mma_fp8 (the same parameters and SCALE) for FP8 batches.
      const Family& mf = fp8 ? mma_fp8 : mma;
      if (fam != "fused" && (!fp8 || B > 1))
        for (int block : mma.params[0].values)
          for (int mt : mma.params[1].values)
            for (int unroll : mma.params[2].values)
              for (int splitk : mma.params[3].values)
                for (int cvt : cvts) {
                  if (splitk > 1 && R.epi != 1) continue;
                  std::map<std::string, int> vals{{"BLOCK", block}, {"MT", mt},       {"UNROLL", unroll}, {"SPLITK", splitk},
                                                  {"TERMS", 2},     {"BATCH", tmpl}, {"EPI", R.epi}};
                  if (fp8) {
                    vals["SCALE"] = scale;
                    vals["CVT"] = cvt;
                  }
                  if (!mf.constraint(vals).empty()) continue;
                  const Variant v = make_variant(mf, vals, {}, arch);
                  points.push_back(v);
                }
      parallel_for(points.size(), 1, [&](size_t b, size_t e) {  // compile in parallel, load serially
        for (size_t i = b; i < e; ++i) jit_compile(JitRequest{points[i].name(), points[i].source(), arch, {}});
      });
      std::string best_name;
      double best_us = 1e30;
      for (const Variant& v : points) {
        const LoadedKernel& k = load_kernel(v);
        const LaunchShape ls = gemv_launch_shape(v, R.N, R.K);
        auto params_for = [&](int copy) {
          GemvParams p{dx.as<float>(), R.norm ? dg.as<void>() : nullptr, 1e-6f,
                       reinterpret_cast<const void*>(w[size_t(copy * mats)].ptr()),
                       mats == 2 ? reinterpret_cast<const void*>(w[size_t(copy * mats + 1)].ptr()) : nullptr,
                       nullptr, out.as<float>(), keys.as<unsigned long long>(), B, R.N, R.K};
          if (fp8) {
            p.w_scale = dscale[0].as<float>();
            p.w2_scale = mats == 2 ? dscale[1].as<float>() : nullptr;
          }
          return p;
        };
        // Check (residual starts at zero so y is compared directly).
        out.fill_u32(R.epi == 1 ? 0u : 0x7fc00000u, s);
        GemvParams p0 = params_for(0);
        launch_kernel(k, Dim3{ls.grid_x, ls.grid_y}, ls.threads, ls.smem, s, &p0, false);
        std::vector<float> got(want.size());
        out.download(got.data(), got.size() * 4, s);
        dev.synchronize();
        double num = 0, den = 0;
        for (size_t i = 0; i < got.size(); ++i) {
          num += double(got[i] - want[i]) * double(got[i] - want[i]);
          den += double(want[i]) * double(want[i]);
        }
        const double err = std::isfinite(num) ? std::sqrt(num / den) : INFINITY;
        Json row = {{"model", model}, {"region", R.name}, {"variant", v.name()}, {"N", R.N}, {"K", R.K},
                    {"batch", B}, {"rel_l2", err}};
        if (!(err <= 1e-5)) {
          row["status"] = "wrong";
          std::printf("%s\n", row.dump().c_str());
          continue;
        }
        std::vector<GemvParams> ps;
        for (int i = 0; i < copies; ++i) ps.push_back(params_for(i));
        Timed t = time_graph(copies, [&](int copy) {
          launch_kernel(k, Dim3{ls.grid_x, ls.grid_y}, ls.threads, ls.smem, s, &ps[size_t(copy)], true);
        });
        row["status"] = "ok";
        row["us"] = t.us;
        row["GBps"] = bytes / (t.us * 1e3);
        std::printf("%s\n", row.dump().c_str());
        if (t.us < best_us) {
          best_us = t.us;
          best_name = v.name();
        }
      }
      best[model][R.name] = {{"variant", best_name}, {"us", best_us}, {"GBps", bytes / (best_us * 1e3)},
                             {"bytes", bytes}, {"points", points.size()}};
      std::fflush(stdout);
    }
  }
  std::printf("BEST %s\n", best.dump().c_str());
  std::fprintf(stderr, "\nbest point per region (batch %lld, %s):\n", B,
               fp8 ? (scale ? "fp8, 128 x 128 block scales" : "fp8, row scales") : "bf16");
  for (auto& [model, regs] : best.items())
    for (auto& [region, b] : regs.items())
      std::fprintf(stderr, "  %-13s %-8s %7.2f us %7.0f GB/s  %s\n", model.c_str(), region.c_str(), b["us"].get<double>(),
                   b["GBps"].get<double>(), b["variant"].get<std::string>().c_str());
  return 0;
}
