#include "backends/cuda/nvrtc_jit.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>

#include "agentcompile/core/error.h"
#include "agentcompile/core/hash.h"
#include "backends/cuda/cuda_libs.h"
#include "backends/cuda/kernel_cache.h"
#include "backends/cuda/kernel_sources.h"

namespace ac::cuda {

const std::vector<std::string>& supported_archs() {
  static const std::vector<std::string> archs = {"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100"};
  return archs;
}

bool is_supported_arch(const std::string& arch) {
  const auto& a = supported_archs();
  return std::find(a.begin(), a.end(), arch) != a.end();
}

std::string nvrtc_version_string() {
  int major = 0, minor = 0;
  if (nvrtc().nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "?";
  return std::to_string(major) + "." + std::to_string(minor);
}

namespace {

std::vector<std::string> base_options(const std::string& arch) {
  return {"--gpu-architecture=" + arch, "-std=c++17", "--ptxas-options=-v", "-default-device", "-DNDEBUG",
          "-lineinfo"};
}

// The cache key covers everything that can change the binary.
std::string cache_key(const JitRequest& req, const std::vector<std::string>& opts) {
  Sha256 h;
  h.part("agentcompile-jit-1").part(req.name).part(req.source).part(req.arch).part(nvrtc_version_string());
  for (const auto& o : opts) h.part(o);
  for (const auto& f : kernel_files()) h.part(f.path).part(f.text);  // any template may be included
  return h.hex();
}

int number_before(const std::string& line, const char* unit) {
  // "... 40 registers" -> 40, for the first occurrence of unit
  size_t p = line.find(unit);
  if (p == std::string::npos) return -1;
  size_t e = p;
  while (e > 0 && line[e - 1] == ' ') --e;
  size_t b = e;
  while (b > 0 && std::isdigit(static_cast<unsigned char>(line[b - 1]))) --b;
  if (b == e) return -1;
  return std::atoi(line.substr(b, e - b).c_str());
}

}  // namespace

void parse_ptxas_log(const std::string& log, JitResult& r) {
  size_t pos = 0;
  while (pos < log.size()) {
    size_t nl = log.find('\n', pos);
    std::string line = log.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? log.size() : nl + 1;
    if (line.find("ptxas") == std::string::npos) continue;  // "ptxas info : Used ..." and "ptxas . 0 bytes stack frame, ..."
    if (int v = number_before(line, "registers"); v >= 0) r.registers = v;
    if (int v = number_before(line, "bytes smem"); v >= 0) r.shared_bytes = v;
    if (int v = number_before(line, "bytes stack frame"); v >= 0) r.stack_bytes = v;
    int st = number_before(line, "bytes spill stores"), ld = number_before(line, "bytes spill loads");
    if (st >= 0 || ld >= 0) r.spill_bytes = std::max(st, 0) + std::max(ld, 0);
  }
  if (r.registers >= 0 && r.shared_bytes < 0) r.shared_bytes = 0;
}

std::string jit_key(const JitRequest& req) {
  std::vector<std::string> opts = base_options(req.arch);
  opts.insert(opts.end(), req.options.begin(), req.options.end());
  return cache_key(req, opts);
}

JitResult jit_compile(const JitRequest& req, bool use_cache) {
  if (!is_supported_arch(req.arch)) throw_input("--arch", "\"" + req.arch + "\" is not a supported target");
  std::vector<std::string> opts = base_options(req.arch);
  opts.insert(opts.end(), req.options.begin(), req.options.end());
  JitResult r;
  r.key = cache_key(req, opts);
  if (use_cache)
    if (auto hit = cache_load(r.key)) return *hit;

  auto t0 = std::chrono::steady_clock::now();
  std::vector<const char*> header_text, header_names;
  for (const auto& f : kernel_files()) {
    header_names.push_back(f.path);
    header_text.push_back(f.text);
  }
  nvrtcProgram prog;
  nvrtcResult st = nvrtc().nvrtcCreateProgram(&prog, req.source.c_str(), (req.name + ".cu").c_str(), int(header_text.size()),
                                      header_text.data(), header_names.data());
  if (st != NVRTC_SUCCESS) throw_internal("nvrtc", std::string("nvrtcCreateProgram: ") + nvrtc().nvrtcGetErrorString(st));
  std::unique_ptr<nvrtcProgram, void (*)(nvrtcProgram*)> guard(&prog, [](nvrtcProgram* p) { nvrtc().nvrtcDestroyProgram(p); });
  std::vector<const char*> copt;
  for (const auto& o : opts) copt.push_back(o.c_str());
  nvrtcResult cr = nvrtc().nvrtcCompileProgram(prog, int(copt.size()), copt.data());
  size_t log_size = 0;
  nvrtc().nvrtcGetProgramLogSize(prog, &log_size);
  r.log.resize(log_size);
  if (log_size) nvrtc().nvrtcGetProgramLog(prog, r.log.data());
  while (!r.log.empty() && (r.log.back() == '\0' || r.log.back() == '\n')) r.log.pop_back();
  r.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (cr != NVRTC_SUCCESS) {
    r.ok = false;
    // The first line that says "error" (ptxas resource lines come first in the log).
    std::string first;
    for (size_t pos = 0; pos < r.log.size();) {
      size_t nl = r.log.find('\n', pos);
      std::string line = r.log.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
      if (line.find("error") != std::string::npos) { first = line; break; }
      pos = nl == std::string::npos ? r.log.size() : nl + 1;
    }
    r.error = std::string("compile failed: ") + nvrtc().nvrtcGetErrorString(cr) + (first.empty() ? "" : ": " + first);
    return r;
  }
  size_t cubin_size = 0;
  if (nvrtc().nvrtcGetCUBINSize(prog, &cubin_size) != NVRTC_SUCCESS || cubin_size == 0) {
    r.ok = false;
    r.error = "NVRTC produced no CUBIN";
    return r;
  }
  r.cubin.resize(cubin_size);
  nvrtc().nvrtcGetCUBIN(prog, r.cubin.data());
  parse_ptxas_log(r.log, r);
  r.ok = true;
  if (use_cache) cache_store(r);
  return r;
}

}  // namespace ac::cuda
