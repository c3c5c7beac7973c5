// agentcompile kernels --list | --compile-all [--arch A] [--json]: the CUDA template families,
// their parameter spaces, and an NVRTC compile of a sample of each (no GPU needed).
#include <cstdio>

#include "agentcompile/backends/cuda/kernels_info.h"
#include "agentcompile/core/error.h"
#include "agentcompile/core/json.h"
#include "cli/cli_common.h"

namespace ac::cli {

namespace {
struct KernelsOptions {
  bool list = false, compile_all = false, json = false, no_cache = false;
  std::string arch = "sm_90";
  size_t max_per_family = 16;
};

#ifdef AGENTCOMPILE_HAVE_CUDA
int run_kernels(const KernelsOptions& o) {
  if (o.list == o.compile_all) throw_input("kernels", "give exactly one of --list and --compile-all");
  if (o.list) {
    auto fams = list_kernel_families();
    if (o.json) {
      Json a = Json::array();
      for (const auto& f : fams) {
        Json params = Json::object();
        for (const auto& [n, vals] : f.params) params[n] = vals;
        a.push_back({{"op", f.op}, {"family", f.name}, {"template", f.header}, {"params", params},
                     {"type_params", f.type_params}, {"type_domain", f.type_domain}, {"space_size", f.space_size}, {"needs_sm90a", f.needs_sm90a},
                     {"description", f.description}});
      }
      std::printf("%s\n", a.dump(2).c_str());
    } else {
      for (const auto& f : fams) {
        std::string params;
        for (const auto& [n, vals] : f.params) {
          params += (params.empty() ? "" : " ") + n + "={";
          for (size_t i = 0; i < vals.size(); ++i) params += (i ? "," : "") + std::to_string(vals[i]);
          params += "}";
        }
        std::string domain;
        for (const auto& d : f.type_domain) domain += (domain.empty() ? "" : ",") + d;
        for (const auto& t : f.type_params) params += " " + t + "={" + domain + "}";
        std::printf("%-12s %-6s %-28s space %-4zu %s\n    %s\n", f.op.c_str(), f.name.c_str(), f.header.c_str(),
                    f.space_size, params.c_str(), f.description.c_str());
      }
    }
    return 0;
  }
  bool known = false;
  for (const auto& a : supported_kernel_archs()) known |= a == o.arch;
  if (!known) throw_input("--arch", "\"" + o.arch + "\" is not one of sm_80, sm_86, sm_89, sm_90, sm_90a, sm_100");
  auto results = compile_all_kernels(o.arch, o.max_per_family, !o.no_cache);
  size_t failed = 0;
  for (const auto& r : results) failed += !r.ok;
  if (o.json) {
    Json a = Json::array();
    for (const auto& r : results)
      a.push_back({{"name", r.name}, {"op", r.op}, {"family", r.family}, {"arch", r.arch}, {"status", r.status},
                   {"registers", r.registers}, {"shared_bytes", r.shared_bytes}, {"spills", r.spill_bytes},
                   {"stack_bytes", r.stack_bytes}, {"compile_ms", r.compile_ms}, {"cached", r.from_cache}});
    std::printf("%s\n", a.dump(2).c_str());
  } else {
    for (const auto& r : results)
      std::printf("%-58s %-4s regs %3d smem %6d spills %4d %7.1f ms%s\n", r.name.c_str(), r.ok ? "ok" : "FAIL",
                  r.registers, r.shared_bytes, r.spill_bytes, r.compile_ms, r.from_cache ? " (cached)" : "");
    std::printf("%zu variants for %s with NVRTC %s: %zu failed\n", results.size(), o.arch.c_str(),
                nvrtc_version().c_str(), failed);
  }
  for (const auto& r : results)
    if (!r.ok) std::fprintf(stderr, "error: %s: %s\n", r.name.c_str(), r.status.c_str());
  return failed ? 1 : 0;
}
#else
int run_kernels(const KernelsOptions&) {
  throw_input("kernels", "this build has no CUDA backend (no CUDA toolkit at configure time)");
}
#endif

}  // namespace

Subcommand add_kernels(CLI::App& root) {
  auto o = std::make_shared<KernelsOptions>();
  CLI::App* app = root.add_subcommand("kernels", "List the CUDA kernel families, or compile a sample of every family");
  app->add_flag("--list", o->list, "List families, parameter domains and space sizes");
  app->add_flag("--compile-all", o->compile_all, "Compile a sample of every family with NVRTC (no GPU needed)");
  app->add_option("--arch", o->arch, "Target: sm_80, sm_86, sm_89, sm_90 (default), sm_90a, sm_100");
  app->add_option("--max-per-family", o->max_per_family, "Most variants compiled per family (default 16)")->check(in_range(1, 100000));
  app->add_flag("--no-cache", o->no_cache, "Compile even when the kernel cache has the result");
  app->add_flag("--json", o->json, "Print JSON");
  return {app, [o]() { return run_kernels(*o); }};
}

}  // namespace ac::cli
