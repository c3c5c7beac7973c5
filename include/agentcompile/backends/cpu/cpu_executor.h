#pragma once
// The CPU backend: executes the graph op by op with the reference ops. Weights are converted to
// f32 once at load (exact for bf16/f16); the KV cache is f32 in host memory.
#include <memory>

#include "agentcompile/ir/graph.h"
#include "agentcompile/runtime/executor.h"

namespace ac {

std::unique_ptr<Executor> make_cpu_executor(const Graph& graph, const ExecutorLimits& limits);

}  // namespace ac
