#include "bench/common.h"

#include <unistd.h>

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <thread>

#include "agentcompile/bench/report.h"
#include "agentcompile/core/error.h"
#include "agentcompile/core/text.h"
#include "agentcompile/model/synth_model.h"
#include "bench/stats.h"
#ifdef AGENTCOMPILE_HAVE_CUDA
#include "agentcompile/backends/cuda/bench_measure.h"
#endif

namespace ac::bench {

std::string human_count(double n) { return ac::human_count(n, " "); }

namespace {
// The standard error of a sample median: 1.2533 sigma / sqrt(n), sigma from 1.4826 MAD (normal).
double median_standard_error(const std::vector<double>& v) {
  const double m = median(v);
  std::vector<double> dev;
  for (double x : v) dev.push_back(std::fabs(x - m));
  return 1.2533 * 1.4826 * median(dev) / std::sqrt(double(v.size()));
}
}  // namespace

MedianDifference median_difference(const std::vector<double>& a, const std::vector<double>& b) {
  MedianDifference d;
  d.diff = median(b) - median(a);
  if (a.size() < 3 || b.size() < 3) {
    d.why = "too few samples to tell it from the timing noise (" + std::to_string(std::min(a.size(), b.size())) +
            "; run with --repeats 3 or more)";
    return d;
  }
  const double se = std::hypot(median_standard_error(a), median_standard_error(b));
  char buf[160];
  if (d.diff <= 0) {
    std::snprintf(buf, sizeof buf, "the difference (%.4g ms) is not positive: below the timing noise", d.diff);
    d.why = buf;
  } else if (d.diff <= 2 * se) {
    std::snprintf(buf, sizeof buf, "the difference (%.4g ms) is within twice its standard error (%.4g ms)", d.diff, se);
    d.why = buf;
  } else {
    d.significant = true;
  }
  return d;
}

std::string human_bytes(double n) {
  char buf[32];
  if (n >= double(1ull << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", n / double(1ull << 30));
  else if (n >= double(1ull << 20)) std::snprintf(buf, sizeof buf, "%.2f MiB", n / double(1ull << 20));
  else std::snprintf(buf, sizeof buf, "%.1f KiB", n / 1024.0);
  return buf;
}

void progress_line(bool on, const char* fmt, ...) {
  if (!on) return;
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
  std::fputc('\n', stderr);
}

fs::path default_cache_dir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "agentcompile" / "models";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "agentcompile" / "models";
  return fs::temp_directory_path() / "agentcompile-models";
}

BenchModel resolve_model(const std::string& spec, const BenchOptions& o) {
  BenchModel m;
  fs::path dir = spec;
  std::error_code ec;
  if (fs::is_directory(dir, ec)) {
    if (o.in_memory) throw_input("--in-memory", json_quote(spec) + " is a folder: --in-memory makes a preset's weights in memory");
    m.name = fs::absolute(dir).lexically_normal().filename().string();
    if (m.name.empty()) m.name = fs::absolute(dir).lexically_normal().parent_path().filename().string();
  } else if (find_synth_preset(spec)) {
    m.name = m.preset = spec;
    SynthOptions so;
    so.preset = spec;
    so.seed = o.seed;
    so.quiet = true;
    if (o.in_memory) {
      progress_line(o.progress, "bench: making preset %s in memory (seed %llu)", spec.c_str(), (unsigned long long)o.seed);
      m.model = synth_model_in_memory(so);
      m.in_memory = true;
      return m;
    }
    const fs::path cache = o.cache_dir.empty() ? default_cache_dir() : o.cache_dir;
    dir = cache / (spec + "-seed" + std::to_string(o.seed));
    if (!fs::exists(dir / "model.safetensors", ec)) {
      fs::create_directories(cache, ec);
      if (ec) throw_input(cache.string(), "cannot create the model cache folder: " + ec.message());
      progress_line(o.progress, "bench: synthesising preset %s into %s", spec.c_str(), dir.c_str());
      so.out = dir;
      synth_model(so);
    }
  } else {
    std::string names;
    for (const auto& p : synth_presets()) names += (names.empty() ? "" : ", ") + p.name;
    throw_input("--model", json_quote(spec) + " is neither a model folder nor a preset (" + names + ")");
  }
  m.model = load_model(dir);
  return m;
}

Json model_json(const BenchModel& m) {
  const ModelConfig& c = m.model->config;
  return {{"name", m.name},
          {"dir", m.in_memory ? Json(nullptr) : Json(fs::absolute(m.model->dir).string())},
          {"in_memory", m.in_memory},
          {"preset", m.preset.empty() ? Json(nullptr) : Json(m.preset)},
          {"architecture", std::string(arch_name(c.arch))},
          {"layers", c.num_layers},
          {"parameters", m.model->weights.parameters},
          {"bytes", m.model->weights.bytes},
          {"stored_bytes", m.model->stored_bytes()},
          {"dtype", std::string(dtype_user_name(m.model->weights.embed->dtype))},
          {"quantization", m.model->quant.describe()}};
}

namespace {

std::string run_text(const std::string& cmd) {
  std::string out;
  if (FILE* f = popen(cmd.c_str(), "r")) {
    char buf[256];
    while (std::fgets(buf, sizeof buf, f)) out += buf;
    if (pclose(f) != 0) return "";
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

// AGENTCOMPILE_COMMIT when set (the GPU machine has no .git), else git in the source tree.
std::string engine_commit() {
  if (const char* c = std::getenv("AGENTCOMPILE_COMMIT"); c && *c) return c;
  const std::string src = AGENTCOMPILE_SOURCE_DIR;
  if (src.find('\'') != std::string::npos) return "unknown";
  std::string head = run_text("git -C '" + src + "' rev-parse --short=12 HEAD 2>/dev/null");
  if (head.empty()) return "unknown";
  const std::string dirty = run_text("git -C '" + src + "' status --porcelain --untracked-files=no 2>/dev/null | head -1");
  return dirty.empty() ? head : head + "-dirty";
}


}  // namespace

Json report_header(const std::string& tier, const BenchOptions& o, const std::string& backend) {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  Json env = {{"engine_version", AGENTCOMPILE_VERSION}, {"engine_commit", engine_commit()}, {"host", host},
              {"cpu_threads", std::thread::hardware_concurrency()}, {"gpu", nullptr}};
#ifdef AGENTCOMPILE_HAVE_CUDA
  if (backend == "cuda") env["gpu"] = cuda::gpu_environment();
#endif
  Json settings = {{"backend", backend}, {"cuda_route", backend == "cuda" ? Json(o.cuda_route) : Json(nullptr)},
                   {"repeats", o.repeats}, {"warmup", o.warmup}, {"seed", o.seed}, {"in_memory", o.in_memory}};
  if (tier == "e2e") {
    settings["tie_epsilon"] = o.tie_epsilon;
    settings["validate_tokens"] = o.validate_tokens;
    settings["reference"] = o.reference;
  } else if (tier == "module") {
    settings["prompt"] = o.module_prompt;
    settings["steps"] = o.module_steps;
  } else if (tier == "kernels") {
    settings["context"] = o.context;
    settings["batches"] = o.batches;
  }
  return {{"schema", kReportSchema}, {"tier", tier}, {"created", utc_now_iso()}, {"command", o.command},
          {"environment", env}, {"settings", settings}};
}

Json measure_ceilings(const std::string& backend, bool progress) {
#ifdef AGENTCOMPILE_HAVE_CUDA
  if (backend == "cuda") {
    const size_t bytes = cuda::kCeilingBytes;
    cuda::Measured copy = cuda::copy_bandwidth_GBps(bytes, cuda::kCeilingRepeats);
    cuda::Measured read = cuda::read_bandwidth_GBps(bytes, cuda::kCeilingRepeats);
    const int n = 8192;
    cuda::Measured gemm = cuda::gemm_bf16_tflops(n, n, n, 7);
    progress_line(progress, "bench: ceilings: copy %.0f GB/s, reads alone %.0f GB/s, cuBLAS bf16 GEMM %.0f TFLOP/s",
                  copy.median, read.median, gemm.median);
    return {{"copy_GBps", copy.median}, {"copy_samples_GBps", copy.samples}, {"copy_bytes", bytes},
            {"read_GBps", read.median}, {"read_samples_GBps", read.samples},
            {"gemm_tflops", gemm.median}, {"gemm_samples_tflops", gemm.samples}, {"gemm_shape", {n, n, n}},
            {"note", "device-to-device copy, read + write counted; reads alone: one 64 KiB tile per block with the "
                     "GEMVs' weight load; cuBLAS bf16 GEMM with f32 accumulation"}};
  }
#endif
  (void)progress;
  return {{"copy_GBps", nullptr}, {"gemm_tflops", nullptr},
          {"note", "ceilings (copy bandwidth, cuBLAS GEMM) need a GPU: run with --backend cuda"}};
}

double ceiling(const Json& c, const char* key) {
  auto it = c.find(key);
  return it != c.end() && it->is_number() ? it->get<double>() : 0.0;
}

}  // namespace ac::bench
