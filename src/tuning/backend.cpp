#include "agentcompile/tuning/backend.h"

#include <algorithm>
#include <map>
#include <mutex>

#include "agentcompile/core/error.h"

#ifndef AGENTCOMPILE_GIT_COMMIT
#define AGENTCOMPILE_GIT_COMMIT ""
#endif

namespace ac {

namespace {
// Filled by the backends' static registrations before main; read-only afterwards.
std::map<std::string, std::unique_ptr<Backend>>& registry() {
  static std::map<std::string, std::unique_ptr<Backend>> r;
  return r;
}
}  // namespace

void register_backend(std::unique_ptr<Backend> b) {
  const std::string n = b->name();
  if (!registry().emplace(n, std::move(b)).second) throw_internal("backends", "\"" + n + "\" is registered twice");
}

const Backend* find_backend(const std::string& name) {
  auto it = registry().find(name);
  return it == registry().end() ? nullptr : it->second.get();
}

std::vector<std::string> backend_names() {
  std::vector<std::string> v;
  for (const auto& [n, b] : registry()) v.push_back(n);
  return v;
}

const Backend& usable_backend(const std::string& name) {
  const Backend* b = find_backend(name);
  if (!b) {
    // The backends a build may have, so that a build without one names it rather than calling it unknown.
    if (name == "cuda") throw_input("--backend cuda", "this build has no CUDA backend");
    throw_input("--backend", json_quote(name) + " is not cpu or cuda");
  }
  std::string why;
  if (!b->available(&why)) throw_input("--backend " + name, why);
  return *b;
}

Environment current_environment(const std::string& backend) {
  Environment e = usable_backend(backend).environment();
  e.backend = backend;
  e.engine_version = AGENTCOMPILE_VERSION;
  e.engine_commit = AGENTCOMPILE_GIT_COMMIT;
  return e;
}

std::unique_ptr<Executor> make_plan_executor(const Plan& plan, const Graph& graph, const ExecutorLimits& limits,
                                             ExecutorShare* share) {
  const Backend* b = find_backend(plan.environment.backend);
  if (!b) throw_input("--plan", "is a " + plan.environment.backend + " plan and this build has no such backend");
  ExecutorRequest req;
  req.plan = &plan;
  req.share = share;
  return b->executor(graph, limits, req);
}

}  // namespace ac
