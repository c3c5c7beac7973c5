#include "agentcompile/runtime/backends.h"

#include "agentcompile/backends/cpu/cpu_executor.h"
#include "agentcompile/core/error.h"

namespace ac {

bool cuda_backend_available(std::string* why_not) {
  if (why_not) *why_not = "the CUDA backend is not implemented yet (issue 5); use --backend cpu";
  return false;
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

std::unique_ptr<Executor> make_executor(const std::string& backend, const Graph& graph, const ExecutorLimits& limits) {
  std::string b = resolve_backend(backend);
  if (b == "cpu") return make_cpu_executor(graph, limits);
  throw_input("--backend", "\"" + b + "\" is not available in this build");
}

}  // namespace ac
