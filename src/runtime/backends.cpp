#include "agentcompile/runtime/backends.h"

#include "agentcompile/backends/cpu/cpu_executor.h"
#ifdef AGENTCOMPILE_HAVE_CUDA
#include "agentcompile/backends/cuda/cuda_executor.h"
#endif
#include "agentcompile/core/error.h"

namespace ac {

bool cuda_backend_available(std::string* why_not) {
#ifdef AGENTCOMPILE_HAVE_CUDA
  std::string why;
  if (cuda_available(&why)) return true;
  if (why_not) *why_not = why + "; use --backend cpu";
  return false;
#else
  if (why_not) *why_not = "this build has no CUDA backend (no CUDA toolkit at configure time); use --backend cpu";
  return false;
#endif
}

std::string resolve_backend(const std::string& requested) {
  if (requested == "cpu") return "cpu";
  if (requested == "cuda") {
    std::string why;
    if (!cuda_backend_available(&why)) throw_input("--backend cuda", why);
    return "cuda";
  }
  if (requested == "auto") return cuda_backend_available() ? "cuda" : "cpu";
  throw_input("--backend", "\"" + requested + "\" is not one of cpu, cuda, auto");
}

std::unique_ptr<Executor> make_executor(const std::string& backend, const Graph& graph, const ExecutorLimits& limits,
                                        const BackendOptions& opts) {
  std::string b = resolve_backend(backend);
  if (b == "cpu") return make_cpu_executor(graph, limits);
#ifdef AGENTCOMPILE_HAVE_CUDA
  if (b == "cuda") {
    CudaExecutorOptions o;
    o.route = opts.cuda_route;
    return make_cuda_executor(graph, limits, o);
  }
#endif
  throw_input("--backend", "\"" + b + "\" is not available in this build");
}

}  // namespace ac
