#pragma once
// Picks and builds the executor for --backend cpu|cuda|auto.
#include <memory>
#include <string>

#include "agentcompile/ir/graph.h"
#include "agentcompile/tuning/executor.h"

namespace ac {

bool cuda_backend_available(std::string* why_not = nullptr);
// "auto" resolves to "cuda" when a GPU is usable, else "cpu"; unknown names are BadInput.
std::string resolve_backend(const std::string& requested);
struct BackendOptions {
  std::string cuda_route = "auto";  // auto | fast | library | reference (see cuda_executor.h)
};
std::unique_ptr<Executor> make_executor(const std::string& backend, const Graph& graph, const ExecutorLimits& limits,
                                        const BackendOptions& opts = {});

}  // namespace ac
