// GPU measurements for `agentcompile bench` (include/agentcompile/backends/cuda/bench_measure.h):
// ceilings (copy bandwidth, cuBLAS bf16 GEMM) and the decode regions of a model timed on three
// routes: the fast route's fused kernel, the reference kernel (the fallback) and cuBLAS.
#include <cctype>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>

#include "agentcompile/backends/cuda/bench_measure.h"
#include "agentcompile/core/error.h"
#include "agentcompile/core/rng.h"
#include "agentcompile/ir/rope.h"
#include "backends/cuda/cublas_route.h"
#include "backends/cuda/device.h"
#include "backends/cuda/fast_executor.h"
#include "backends/cuda/kernel_loader.h"
#include "backends/cuda/plan_config.h"

extern "C" {
#include "../../../kernels/cuda/common/params.h"
}

namespace ac::cuda {

namespace {

constexpr unsigned kRefBlock = 256;     // the reference kernels' block (as the executors use them)
constexpr double kRotateBytes = 160e6;  // inputs rotated over copies larger than this (H200 L2: 60 MiB)
constexpr int kLaunches = 24;           // launches per timed graph

Measured summarise(std::vector<double> v) {
  Measured m;
  m.samples = v;
  std::sort(v.begin(), v.end());
  m.median = v.empty() ? 0.0 : v[v.size() / 2];
  return m;
}

// A ceiling's rate: launch() three times as a warm-up, then `repeats` event-timed calls, each
// giving work / ms (work in the rate's unit per millisecond: GB for GB/s x 1e3, ...).
Measured timed_rate(int repeats, CUstream s, double work, const std::function<void()>& launch) {
  for (int i = 0; i < 3; ++i) launch();
  Device::get().synchronize();
  EventTimer t;
  std::vector<double> rates;
  for (int r = 0; r < std::max(repeats, 1); ++r) {
    t.start(s);
    launch();
    rates.push_back(work / double(t.stop_ms(s)));
  }
  return summarise(rates);
}

// The NVIDIA kernel module's version ("580.159.04"), "" where it cannot be read.
// "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build ..." ->
// "580.159.04": the first dotted number of the line.
std::string kernel_driver_version() {
  std::ifstream f("/proc/driver/nvidia/version");
  std::string line;
  if (!std::getline(f, line)) return "";
  std::istringstream in(line);
  for (std::string tok; in >> tok;)
    if (std::isdigit(static_cast<unsigned char>(tok[0])) && tok.find('.') != std::string::npos &&
        tok.find_first_not_of("0123456789.") == std::string::npos)
      return tok;
  return "";
}

std::string cuda_version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

// Random values in [-scale, scale), stored as `t` (bf16/f16/f32), four 16-bit draws per number.
std::vector<uint8_t> random_values(size_t n, DType t, uint64_t seed, float scale) {
  Rng r(seed);
  std::vector<uint8_t> out(n * dtype_size(t));
  uint64_t bits = 0;
  for (size_t i = 0; i < n; ++i) {
    if (i % 4 == 0) bits = r.next_u64();
    const float v = scale * (float((bits >> (16 * (i % 4))) & 0xffff) / 32768.0f - 1.0f);
    store_from_f32(out.data(), t, i, v);
  }
  return out;
}

DeviceBuffer upload_random(size_t n, DType t, uint64_t seed, float scale) {
  std::vector<uint8_t> host = random_values(n, t, seed, scale);
  DeviceBuffer b(host.size());
  b.upload(host.data(), host.size(), Device::get().stream());
  Device::get().synchronize();
  return b;
}

DeviceBuffer ones_near(size_t n, DType t, uint64_t seed) {  // norm weights around 1
  std::vector<uint8_t> host = random_values(n, t, seed, 0.1f);
  for (size_t i = 0; i < n; ++i) store_from_f32(host.data(), t, i, 1.0f + load_as_f32(host.data(), t, i));
  DeviceBuffer b(host.size());
  b.upload(host.data(), host.size(), Device::get().stream());
  Device::get().synchronize();
  return b;
}

struct Timing {
  Measured us;  // per launch group
  std::string how;
};

// Times one "launch group" (`launch(i)`, i counting launches for rotation): kLaunches groups
// captured in a CUDA graph, replayed `repeats` times; the median per group in microseconds. A
// route that cannot be captured (a library refusing stream capture) is timed by events around
// kLaunches direct launches instead, which then includes host launch gaps; `how` says which.
Timing time_groups(int repeats, const std::function<void(int)>& launch) {
  Device& dev = Device::get();
  CUstream s = dev.stream();
  for (int i = 0; i < 3; ++i) launch(i);  // warm-up (also loads the modules)
  dev.synchronize();
  EventTimer timer;
  std::vector<double> us;
  CUgraph graph = nullptr;
  bool captured = false;
  if (drv().cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) == CUDA_SUCCESS) {
    try {
      for (int i = 0; i < kLaunches; ++i) launch(i);
      captured = drv().cuStreamEndCapture(s, &graph) == CUDA_SUCCESS && graph != nullptr;
    } catch (const Error&) {
      CUgraph discard = nullptr;
      drv().cuStreamEndCapture(s, &discard);
      if (discard) drv().cuGraphDestroy(discard);
    }
  }
  if (captured) {
    CUgraphExec exec;
    CU_CHECK(drv().cuGraphInstantiateWithFlags(&exec, graph, 0));
    for (int r = 0; r <= repeats; ++r) {
      timer.start(s);
      CU_CHECK(drv().cuGraphLaunch(exec, s));
      const double ms = timer.stop_ms(s);
      if (r > 0) us.push_back(ms * 1000.0 / kLaunches);  // the first replay uploads the graph
    }
    drv().cuGraphExecDestroy(exec);
    drv().cuGraphDestroy(graph);
    return {summarise(us), "cuda graph"};
  }
  if (graph) drv().cuGraphDestroy(graph);
  dev.synchronize();
  for (int r = 0; r < repeats; ++r) {
    timer.start(s);
    for (int i = 0; i < kLaunches; ++i) launch(i);
    us.push_back(timer.stop_ms(s) * 1000.0 / kLaunches);
  }
  return {summarise(us), "stream (no graph capture)"};
}

Json route_json(const std::string& kernel, const Timing& t, double bytes, double flops, const KernelBenchOptions& o) {
  const double us = t.us.median;
  const double gbps = bytes / (us * 1e3), tflops = flops / (us * 1e6);
  return {{"kernel", kernel},
          {"us", us},
          {"samples_us", t.us.samples},
          {"timing", t.how},
          {"GBps", gbps},
          {"TFLOPs", tflops},
          {"pct_of_copy", o.copy_GBps > 0 ? Json(100.0 * gbps / o.copy_GBps) : Json(nullptr)},
          {"pct_of_read", o.read_GBps > 0 ? Json(100.0 * gbps / o.read_GBps) : Json(nullptr)},
          {"pct_of_gemm", o.gemm_tflops > 0 ? Json(100.0 * tflops / o.gemm_tflops) : Json(nullptr)}};
}

struct Projection {
  const char* name;
  int epi;     // gemv.cuh: 0 store, 1 residual, 2 swiglu, 3 argmax
  bool norm;   // RMSNorm prologue
  long long N, K;
  int mats;    // 2: gate and up
};

Json bench_projection(const Projection& R, const Variant& v, int64_t B, DType wt, const KernelBenchOptions& o) {
  Device& dev = Device::get();
  const CUstream s = dev.stream();
  const std::string arch = dev.info().arch();
  const double es = double(dtype_size(wt));
  const double wbytes = double(R.N) * double(R.K) * es * R.mats;
  const double flops = 2.0 * double(B) * double(R.N) * double(R.K) * R.mats;
  const int copies = std::max(1, int(std::ceil(kRotateBytes / wbytes)));
  std::vector<DeviceBuffer> w;
  for (int i = 0; i < copies * R.mats; ++i) w.push_back(upload_random(size_t(R.N * R.K), wt, 100 + uint64_t(i), 0.05f));
  DeviceBuffer x = upload_random(size_t(B * R.K), DType::F32, 7, 1.0f);
  DeviceBuffer xw = upload_random(size_t(B * R.K), wt, 7, 1.0f);  // the library route's activations in the weight dtype
  DeviceBuffer gamma = ones_near(size_t(R.K), wt, 8);
  DeviceBuffer out(size_t(B * R.N) * 4), out2(size_t(B * R.N) * 4);
  out.fill_u32(0, s);

  // fast: the fused GEMV exactly as the fast route launches it
  const LaunchShape ls = gemv_launch_shape(v, R.N, R.K);
  DeviceBuffer best(size_t(B) * 8);  // the argmax epilogue's keys (never finished here: only timed)
  best.fill_u32(0, s);
  const LoadedKernel& fast = load_kernel(v);
  std::vector<GemvParams> fp;
  for (int c = 0; c < copies; ++c)
    fp.push_back(GemvParams{x.as<float>(), R.norm ? gamma.as<void>() : nullptr, 1e-6f,
                            reinterpret_cast<const void*>(w[size_t(c * R.mats)].ptr()),
                            R.mats == 2 ? reinterpret_cast<const void*>(w[size_t(c * R.mats + 1)].ptr()) : nullptr, nullptr,
                            out.as<float>(), best.as<unsigned long long>(), B, R.N, R.K});
  const Timing tf = time_groups(o.repeats, [&](int i) {
    launch_kernel(fast, Dim3{ls.grid_x, ls.grid_y}, ls.threads, ls.smem, s, &fp[size_t(i % copies)], true);
  });

  // reference: the fallback route's projection kernel, one launch per weight matrix
  const LoadedKernel& ref = load_kernel(make_variant(find_family("linear", "ref"), {{"BLOCK", int(kRefBlock)}}, {wt}, arch));
  const Dim3 rgrid{unsigned((R.N + kRefBlock / 32 - 1) / (kRefBlock / 32)), unsigned(B)};
  const Timing tr = time_groups(o.repeats, [&](int i) {
    for (int m = 0; m < R.mats; ++m) {
      LinearParams p{x.as<float>(), nullptr, reinterpret_cast<const void*>(w[size_t((i % copies) * R.mats + m)].ptr()),
                     nullptr, m ? out2.as<float>() : out.as<float>(), B, R.K, R.N};
      launch_kernel(ref, rgrid, kRefBlock, 0, s, &p);
    }
  });

  // library: cuBLAS GEMM (the library route and the prefill path)
  CublasHandle h(s);
  const Timing tl = time_groups(o.repeats, [&](int i) {
    for (int m = 0; m < R.mats; ++m)
      cublas_linear(h, wt, xw.as<void>(), reinterpret_cast<const void*>(w[size_t((i % copies) * R.mats + m)].ptr()),
                    m ? out2.as<float>() : out.as<float>(), B, R.K, R.N);
  });
  dev.synchronize();
  const std::string shape = std::to_string(R.N) + "x" + std::to_string(R.K) + (R.mats == 2 ? " x2" : "");
  return {{"region", R.name},
          {"batch", B},
          {"shape", shape},
          {"N", R.N},
          {"K", R.K},
          {"bytes", wbytes},
          {"flops", flops},
          {"weight_copies", copies},
          {"routes",
           {{"fast", route_json(v.name(), tf, wbytes, flops, o)},
            {"reference", route_json(ref.name, tr, wbytes, flops, o)},
            {"library", route_json("cublasGemmEx (bf16 in, f32 out)", tl, wbytes, flops, o)}}}};
}

Json bench_attention(const ModelConfig& c, const Variant& fv, int64_t B, DType wt, const KernelBenchOptions& o) {
  Device& dev = Device::get();
  const CUstream s = dev.stream();
  const std::string arch = dev.info().arch();
  const long long L = o.context, hd = c.head_dim, kvd = c.kv_dim(), qkvd = c.q_dim() + 2 * c.kv_dim();
  const double flops = 4.0 * double(B) * double(c.num_heads) * double(L) * double(hd);
  const std::vector<int> positions(size_t(B), int(L - 1));
  std::vector<int> slots(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) slots[size_t(b)] = int(b);
  DeviceBuffer pos_d(size_t(B) * 4), slot_d(size_t(B) * 4);
  pos_d.upload(positions.data(), size_t(B) * 4, s);
  slot_d.upload(slots.data(), size_t(B) * 4, s);
  DeviceBuffer qkv = upload_random(size_t(B * qkvd), DType::F32, 11, 1.0f);
  DeviceBuffer out(size_t(B * c.q_dim()) * 4);
  const float scale = 1.0f / std::sqrt(float(hd));
  Json routes = Json::object();

  // fast: decode attention fused with q/k norm, rope and the cache write (bf16 KV cache)
  const double fbytes = 2.0 * double(B) * double(L) * double(kvd) * 2;
  const int fcopies = std::max(1, int(std::ceil(kRotateBytes / fbytes)));
  std::vector<DeviceBuffer> kc, vc;
  for (int i = 0; i < fcopies; ++i) {
    kc.push_back(upload_random(size_t(B * kvd * L), DType::BF16, 200 + uint64_t(i), 1.0f));
    vc.push_back(upload_random(size_t(B * kvd * L), DType::BF16, 300 + uint64_t(i), 1.0f));
  }
  const std::vector<float> inv = rope_inv_freq(c.rope, hd);
  std::vector<float> cos_t(size_t(L * (hd / 2))), sin_t(cos_t.size());
  for (long long p = 0; p < L; ++p)
    for (long long i = 0; i < hd / 2; ++i) {
      const double a = double(p) * double(inv[size_t(i)]);
      cos_t[size_t(p * (hd / 2) + i)] = float(std::cos(a));
      sin_t[size_t(p * (hd / 2) + i)] = float(std::sin(a));
    }
  DeviceBuffer cos_d(cos_t.size() * 4), sin_d(sin_t.size() * 4);
  cos_d.upload(cos_t.data(), cos_t.size() * 4, s);
  sin_d.upload(sin_t.data(), sin_t.size() * 4, s);
  DeviceBuffer qn = ones_near(size_t(hd), wt, 12), kn = ones_near(size_t(hd), wt, 13);
  const long long splits = decode_attention_blocks(fv, L);
  DeviceBuffer part_o(size_t(B * c.num_heads * splits * hd) * 4), part_ml(size_t(B * c.num_heads * splits * 2) * 4),
      counters(size_t(B * c.num_kv_heads) * 4);
  CU_CHECK(drv().cuMemsetD32Async(counters.ptr(), 0, size_t(B * c.num_kv_heads), s));
  std::vector<FusedAttnParams> fp;
  for (int i = 0; i < fcopies; ++i) {
    FusedAttnParams p{};
    p.qkv = qkv.as<float>();
    p.q_norm = c.qk_norm ? qn.as<void>() : nullptr;
    p.k_norm = c.qk_norm ? kn.as<void>() : nullptr;
    p.eps = float(c.rms_norm_eps);
    p.rope_cos = cos_d.as<float>();
    p.rope_sin = sin_d.as<float>();
    p.k_cache = kc[size_t(i)].as<unsigned short>();
    p.v_cache = vc[size_t(i)].as<unsigned short>();
    p.part_o = part_o.as<float>();
    p.part_ml = part_ml.as<float>();
    p.counters = counters.as<unsigned>();
    p.out = out.as<float>();
    p.positions = pos_d.as<int>();
    p.slots = slot_d.as<int>();
    p.n = B;
    p.heads = c.num_heads;
    p.kv_heads = c.num_kv_heads;
    p.max_seq = L;
    p.max_splits = splits;
    p.scale = scale;
    fp.push_back(p);
  }
  const LoadedKernel& fk = load_kernel(fv);
  const size_t fsmem = size_t(attn_fused_smem_bytes(fv.param("SPLIT"), fv.param("HD"), fv.param("GROUP")));
  const Timing tf = time_groups(o.repeats, [&](int i) {
    launch_kernel(fk, Dim3{unsigned(c.num_kv_heads), unsigned(splits), unsigned(B)}, unsigned(fv.threads()), fsmem, s,
                  &fp[size_t(i % fcopies)], true);
  });
  routes["fast"] = route_json(fv.name(), tf, fbytes, flops, o);
  kc.clear();
  vc.clear();

  // reference: the fallback's attention over an f32 KV cache (the library route has none)
  const int maxd = int((hd + kRefBlock - 1) / kRefBlock);
  const LoadedKernel& rk = load_kernel(
      make_variant(find_family("attention", "ref"), {{"BLOCK", int(kRefBlock)}, {"MAXD", maxd == 3 ? 4 : maxd}}, {}, arch));
  const double rbytes = 2.0 * double(B) * double(L) * double(kvd) * 4;
  const int rcopies = std::max(1, int(std::ceil(kRotateBytes / rbytes)));
  DeviceBuffer q = upload_random(size_t(B * c.q_dim()), DType::F32, 14, 1.0f);
  for (int i = 0; i < rcopies; ++i) {
    kc.push_back(upload_random(size_t(B * kvd * L), DType::F32, 400 + uint64_t(i), 1.0f));
    vc.push_back(upload_random(size_t(B * kvd * L), DType::F32, 500 + uint64_t(i), 1.0f));
  }
  const Timing tr = time_groups(o.repeats, [&](int i) {
    AttentionParams p{q.as<float>(), kc[size_t(i % rcopies)].as<float>(), vc[size_t(i % rcopies)].as<float>(),
                      out.as<float>(), pos_d.as<int>(), slot_d.as<int>(), B, c.num_heads, c.num_kv_heads, hd, L, scale};
    launch_kernel(rk, Dim3{unsigned(c.num_heads), unsigned(B)}, kRefBlock, 0, s, &p);
  });
  routes["reference"] = route_json(rk.name, tr, rbytes, flops, o);
  dev.synchronize();
  return {{"region", "attention"},
          {"batch", B},
          {"shape", "ctx " + std::to_string(L) + ", " + std::to_string(c.num_heads) + "/" + std::to_string(c.num_kv_heads) +
                        " heads x " + std::to_string(hd)},
          {"context", L},
          {"bytes", fbytes},
          {"flops", flops},
          {"routes", routes},
          {"note", "fast reads a bf16 KV cache (and also applies q/k norm, rope and the cache write); reference reads an "
                   "f32 cache; bytes above are the fast route's, each route's GB/s uses its own bytes"}};
}

}  // namespace

Json gpu_environment() {
  const DeviceInfo& i = Device::get().info();
  int rt = 0;
  cudaRuntimeGetVersion(&rt);
  return {{"name", i.name},
          {"arch", i.arch()},
          {"sm_count", i.sm_count},
          {"memory_bytes", i.total_mem},
          {"l2_bytes", i.l2_bytes},
          {"driver", kernel_driver_version()},
          {"cuda_driver_api", cuda_version_text(i.driver_version)},
          {"cuda_runtime", cuda_version_text(rt)}};
}

Measured copy_bandwidth_GBps(size_t bytes, int repeats) {
  const CUstream s = Device::get().stream();
  DeviceBuffer a(bytes), b(bytes);
  a.fill_u32(0x3f9d70a4u, s);  // 1.23f: never measure on zeros
  return timed_rate(repeats, s, 2.0 * double(bytes) / 1e6,
                    [&] { CU_CHECK(drv().cuMemcpyDtoDAsync(b.ptr(), a.ptr(), bytes, s)); });
}

namespace {

// read_probe's tile: one 64 KiB piece per block (16-128 KiB tiles read within 2% of each other
// on the H200: tools/read_ceiling.cu).
constexpr long long kReadTileWords = 64 * 1024 / 16;

void launch_read_probe(const void* src, long long blocks, long long words_per_block, unsigned* out, CUstream s) {
  ReadProbeParams p{src, words_per_block, out};
  const Variant v =
      make_variant(find_family("read_probe", "ref"), {{"BLOCK", int(kRefBlock)}}, {}, Device::get().info().arch());
  launch_kernel(load_kernel(v), Dim3{unsigned(blocks)}, kRefBlock, 0, s, &p);
}

}  // namespace

std::vector<uint32_t> read_probe_sums(const std::vector<uint32_t>& words, long long words_per_block) {
  const long long blocks = (long long)words.size() / 4 / std::max(words_per_block, 1LL);
  if (words_per_block < 1 || blocks < 1 || (long long)words.size() != blocks * words_per_block * 4)
    throw_internal("read probe", "the words must be whole tiles of 16-byte words");
  Device& dev = Device::get();
  const CUstream s = dev.stream();
  DeviceBuffer src(words.size() * 4), out(size_t(blocks) * 4);
  src.upload(words.data(), words.size() * 4, s);
  out.fill_u32(0xdeadbeefu, s);
  launch_read_probe(src.as<void>(), blocks, words_per_block, out.as<unsigned>(), s);
  std::vector<uint32_t> sums(static_cast<size_t>(blocks), 0u);
  out.download(sums.data(), sums.size() * 4, s);
  dev.synchronize();
  return sums;
}

Measured read_bandwidth_GBps(size_t bytes, int repeats) {
  Device& dev = Device::get();
  const CUstream s = dev.stream();
  const long long blocks = std::max<long long>(1, (long long)(bytes / (kReadTileWords * 16)));
  bytes = size_t(blocks) * kReadTileWords * 16;
  const uint32_t pattern = 0x3f9d70a4u;  // 1.23f: never measure on zeros
  DeviceBuffer a(bytes), out(size_t(blocks) * 4);
  a.fill_u32(pattern, s);
  const Measured gbps = timed_rate(repeats, s, double(bytes) / 1e6,
                                   [&] { launch_read_probe(a.as<void>(), blocks, kReadTileWords, out.as<unsigned>(), s); });
  // Every block read its whole tile: its sum is the tile's (a figure from a kernel that skipped
  // loads would be no ceiling).
  std::vector<uint32_t> sums(static_cast<size_t>(blocks), 0u);
  out.download(sums.data(), sums.size() * 4, s);
  dev.synchronize();
  const uint32_t want = uint32_t(uint64_t(kReadTileWords) * 4u * pattern);
  for (uint32_t v : sums)
    if (v != want) throw_internal("read probe", "a block's sum is not its tile's: the read ceiling is not valid");
  return gbps;
}

Measured gemm_bf16_tflops(int m, int n, int k, int repeats) {
  const CUstream s = Device::get().stream();
  DeviceBuffer x = upload_random(size_t(m) * size_t(k), DType::BF16, 1, 1.0f);
  DeviceBuffer w = upload_random(size_t(n) * size_t(k), DType::BF16, 2, 1.0f);
  DeviceBuffer out(size_t(m) * size_t(n) * 4);
  CublasHandle h(s);
  return timed_rate(repeats, s, 2.0 * double(m) * double(n) * double(k) / 1e9,
                    [&] { cublas_linear(h, DType::BF16, x.as<void>(), w.as<void>(), out.as<float>(), m, k, n); });
}

Json bench_decode_kernels(const ModelConfig& c, DType wt, const KernelBenchOptions& o) {
  if (wt != DType::BF16 && wt != DType::F16)
    throw_input("bench kernels", "the fast route runs bf16/f16 weights; this model's dtype is " +
                                     std::string(dtype_user_name(wt)));
  // The fast route's own variants (the plan's FastConfig or the defaults, AGENTCOMPILE_FAST_CONFIG
  // applied as the executor does): per batch template 1, 2, 4, 8 the GEMVs of qkv, o, gate_up, down, lm_head, then attention.
  FastConfig fc = fast_config_of(o.plan);
  if (const char* spec = std::getenv("AGENTCOMPILE_FAST_CONFIG"); spec && !o.plan) fc = apply_fast_config_override(fc, spec);
  const std::vector<Variant> fast = fast_path_variants(c, wt, fc, Device::get().info().arch());
  if (fast.size() < 20) throw_internal("bench kernels", "unexpected fast_path_variants layout");
  // The attention the executor runs at this context and batch (decode_attention_variant).
  const long long qkvd = c.q_dim() + 2 * c.kv_dim();
  const Projection regions[] = {{"qkv", 0, true, qkvd, c.hidden_size, 1},
                                {"o", 1, false, c.hidden_size, c.q_dim(), 1},
                                {"gate_up", 2, true, c.intermediate_size, c.hidden_size, 2},
                                {"down", 1, false, c.hidden_size, c.intermediate_size, 1},
                                {"lm_head", 3, true, c.vocab_size, c.hidden_size, 1}};
  Json rows = Json::array();
  for (int64_t b : o.batches) {
    if (b < 1 || b > 8) throw_input("--batch", "decode batches are 1 to 8");
    const int bt = batch_template(b);
    const size_t base = size_t(bt == 1 ? 0 : bt == 2 ? 1 : bt == 4 ? 2 : 3) * std::size(regions);
    auto variant = [&](size_t i) -> const Variant& {
      const Variant& v = fast[base + i];
      if (v.family->op != "gemv" || v.param("EPI") != regions[i].epi || v.param("BATCH") != bt)
        throw_internal("bench kernels", "unexpected fast_path_variants layout at " + v.name());
      return v;
    };
    rows.push_back(bench_projection(regions[0], variant(0), b, wt, o));
    rows.push_back(bench_attention(c, decode_attention_variant(c, fc, wt, Device::get().info().arch(), bt, o.context), b, wt, o));
    for (size_t i = 1; i < std::size(regions); ++i) rows.push_back(bench_projection(regions[i], variant(i), b, wt, o));
  }
  return rows;
}

}  // namespace ac::cuda
