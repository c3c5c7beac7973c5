#include "agentcompile/runtime/backends.h"

#include "agentcompile/core/error.h"
#include "agentcompile/tuning/backend.h"

namespace ac {

bool cuda_backend_available(std::string* why_not) {
  const Backend* b = find_backend("cuda");
  if (!b) {
    if (why_not) *why_not = "this build has no CUDA backend (no CUDA toolkit at configure time); use --backend cpu";
    return false;
  }
  std::string why;
  if (b->available(&why)) return true;
  if (why_not) *why_not = why + "; use --backend cpu";
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

std::unique_ptr<Executor> make_executor(const std::string& backend, const Graph& graph, const ExecutorLimits& limits,
                                        const BackendOptions& opts) {
  const std::string b = resolve_backend(backend);
  const Backend* be = find_backend(b);
  if (!be) throw_input("--backend", "\"" + b + "\" is not available in this build");
  ExecutorRequest req;
  req.route = opts.cuda_route;
  return be->executor(graph, limits, req);
}

}  // namespace ac
