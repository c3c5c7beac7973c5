// kernel_sweep's SWEEP_FAMILY=gemm (gemm_sweep.h): are our prompt GEMMs (gemm.wgmma, gemm.mma) as
// fast as cuBLAS on the prompt's shapes? That decides whether the norms and SwiGLU can move into
// their epilogues.
#include "gemm_sweep.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "agentcompile/core/json.h"
#include "agentcompile/core/threads.h"
#include "agentcompile/model/hf_config.h"
#include "agentcompile/model/synth_model.h"
#include "backends/cuda/cublas_route.h"
#include "backends/cuda/family.h"
#include "backends/cuda/gemm16.h"
#include "backends/cuda/kernel_loader.h"
#include "backends/cuda/nvrtc_jit.h"
#include "backends/cuda/search_util.h"
#include "graph_timing.h"

extern "C" {
#include "../../kernels/cuda/common/params.h"
}

namespace ac::cuda {

namespace {

struct PromptGemm {
  const char* name;
  int epi;  // the store: 0 16-bit, 1 f32, 2 added into f32
  long long n, k;
};

DeviceBuffer random_16(size_t count, uint64_t seed, float scale, CUstream s) {
  const std::vector<uint16_t> v = random_w16(count, seed, scale, 0.0f, DType::BF16);
  DeviceBuffer d(count * 2);
  d.upload(v.data(), count * 2, s);
  return d;
}

// C as floats, whichever store the GEMM used.
std::vector<float> download_c(const DeviceBuffer& c, size_t count, int epi, CUstream s) {
  std::vector<float> out(count);
  if (epi == 0) {
    std::vector<uint16_t> h(count);
    c.download(h.data(), count * 2, s);
    Device::get().synchronize();
    for (size_t i = 0; i < count; ++i) out[i] = bf16_to_f32(h[i]);
  } else {
    c.download(out.data(), count * 4, s);
    Device::get().synchronize();
  }
  return out;
}

}  // namespace

int sweep_prompt_gemms(const std::vector<std::string>& models) {
  Device& dev = Device::get();
  if (dev.info().arch() != "sm_90") {
    std::fprintf(stderr, "kernel_sweep: gemm.wgmma needs an sm_90 GPU; this one is %s\n", dev.info().arch().c_str());
    return 2;
  }
  const CUstream s = dev.stream();
  const long long m = std::getenv("SWEEP_TOKENS") ? std::atoll(std::getenv("SWEEP_TOKENS")) : kPromptTokens;
  if (m < 1 || m > 65536) {
    std::fprintf(stderr, "kernel_sweep: SWEEP_TOKENS must be 1..65536\n");
    return 2;
  }
  // Filters for profiling one kernel: the GEMMs by name, the points by a part of their name.
  const std::string only_gemms = std::getenv("SWEEP_GEMMS") ? "," + std::string(std::getenv("SWEEP_GEMMS")) + "," : "";
  const std::string only_points = std::getenv("SWEEP_POINTS") ? std::getenv("SWEEP_POINTS") : "";
  const Family& f = find_family("gemm", "wgmma");
  const Family& fm = find_family("gemm", "mma");
  CublasHandle cublas(s);
  Json best = Json::array();
  for (const auto& model : models) {
    const ModelConfig c = parse_model_config(find_synth_preset(model)->config, model);
    const PromptGemm gemms[] = {{"qkv", 1, c.q_dim() + 2 * c.kv_dim(), c.hidden_size},
                                {"o", 2, c.hidden_size, c.q_dim()},
                                {"gate_up", 0, c.intermediate_size, c.hidden_size},
                                {"down", 2, c.hidden_size, c.intermediate_size}};
    for (const PromptGemm& G : gemms) {
      if (!only_gemms.empty() && only_gemms.find("," + std::string(G.name) + ",") == std::string::npos) continue;
      const double flops = 2.0 * double(m) * double(G.n) * double(G.k);
      DeviceBuffer a = random_16(size_t(m * G.k), 5, 1.0f, s), b = random_16(size_t(G.n * G.k), 6, 0.03f, s);
      const size_t count = size_t(m * G.n), es = G.epi == 0 ? 2 : 4;
      DeviceBuffer cb(count * es), cw(count * es);
      // EPI 2 adds into what C holds: both start from zero before the check (then accumulate while timed).
      auto reset = [&](DeviceBuffer& d) { d.fill_u32(G.epi == 2 ? 0u : 0x7fc07fc0u, s); };
      const DType out_t = G.epi == 0 ? DType::BF16 : DType::F32;
      const float beta = G.epi == 2 ? 1.0f : 0.0f;
      auto run_cublas = [&] { cublas_gemm(cublas, DType::BF16, a.as<void>(), b.as<void>(), cb.as<void>(), out_t, m, G.k, G.n, beta); };
      reset(cb);
      run_cublas();
      const std::vector<float> want = download_c(cb, count, G.epi, s);
      const Timed tc = time_graph(1, [&](int) { run_cublas(); });
      Json row = {{"model", model}, {"gemm", G.name}, {"m", m}, {"n", G.n}, {"k", G.k}, {"epi", G.epi},
                  {"variant", "cublasGemmEx"}, {"us", tc.us}, {"TFLOPs", flops / (tc.us * 1e6)}};
      std::printf("%s\n", row.dump().c_str());
      // Every bf16 point of both families at this GEMM's store: gemm.wgmma, and gemm.mma (the sm_80
      // family) on the same GPU.
      std::vector<Variant> points;
      for (const auto& [fam, target] : {std::pair{&f, "sm_90a"}, std::pair{&fm, "sm_90"}})
        for (Variant& v : sample_variants(*fam, target, SIZE_MAX))  // the whole space: a small one
          if (v.types == std::vector<DType>{DType::BF16} && v.param("EPI") == G.epi &&
              (only_points.empty() || v.name().find(only_points) != std::string::npos))
            points.push_back(std::move(v));
      parallel_for(points.size(), 1, [&](size_t lo, size_t hi) {  // compile in parallel, load serially
        for (size_t i = lo; i < hi; ++i) jit_compile(JitRequest{points[i].name(), points[i].source(), points[i].arch, {}});
      });
      Json top = {{"model", model}, {"gemm", G.name}, {"cublas_us", tc.us}, {"best_us", nullptr}, {"best", nullptr}};
      for (const Variant& v : points) {
        const LoadedKernel& k = load_kernel(v);
        const size_t smem = size_t(gemm16_smem(v));
        const GemmW16Params p =
            gemm16_params(v, DType::BF16, a.as<void>(), b.as<void>(), cw.as<void>(), m, G.n, G.k, G.k, G.k, G.n);
        const Dim3 grid = gemm16_grid(v, m, G.n, dev.info().sm_count);
        reset(cw);
        launch_kernel(k, grid, unsigned(v.threads()), smem, s, &p, false);
        const double err = rel_l2(download_c(cw, count, G.epi, s), want).value_or(INFINITY);  // NaN: unwritten
        Json r = {{"model", model}, {"gemm", G.name}, {"m", m}, {"n", G.n}, {"k", G.k}, {"epi", G.epi},
                  {"variant", v.name()}, {"rel_l2_vs_cublas", err}};
        if (!(err <= (G.epi == 0 ? 1e-2 : 1e-4))) {  // 16-bit C: one rounding apart at most
          r["status"] = "wrong";
          std::printf("%s\n", r.dump().c_str());
          continue;
        }
        const Timed t = time_graph(1, [&](int) { launch_kernel(k, grid, unsigned(v.threads()), smem, s, &p, false); });
        r["status"] = "ok";
        r["us"] = t.us;
        r["TFLOPs"] = flops / (t.us * 1e6);
        r["vs_cublas"] = tc.us / t.us;
        std::printf("%s\n", r.dump().c_str());
        if (top["best_us"].is_null() || t.us < top["best_us"].get<double>()) {
          top["best_us"] = t.us;
          top["best"] = v.name();
        }
      }
      std::fflush(stdout);
      best.push_back(top);
    }
  }
  std::printf("BEST %s\n", best.dump().c_str());
  std::fprintf(stderr, "\nprompt GEMMs at %lld rows: cuBLAS vs the best point of gemm.wgmma or gemm.mma\n", m);
  for (const Json& t : best) {
    const double cu = t["cublas_us"].get<double>();
    if (t["best_us"].is_null()) {
      std::fprintf(stderr, "  %-13s %-8s cuBLAS %8.2f us, no correct point\n", t["model"].get<std::string>().c_str(),
                   t["gemm"].get<std::string>().c_str(), cu);
      continue;
    }
    const double w = t["best_us"].get<double>();
    std::fprintf(stderr, "  %-13s %-8s cuBLAS %8.2f us, ours %8.2f us (%.2fx)  %s\n", t["model"].get<std::string>().c_str(),
                 t["gemm"].get<std::string>().c_str(), cu, w, cu / w, t["best"].get<std::string>().c_str());
  }
  return 0;
}

}  // namespace ac::cuda
