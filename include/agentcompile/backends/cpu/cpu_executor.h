#pragma once
// The CPU backend: executes the graph op by op with the reference ops. Weights are converted to
// f32 once at load (exact for bf16/f16); the KV cache is f32 in host memory. With a plan, the ops
// a plan route names run the route's CPU family (per phase: a step where a sequence has several
// tokens is prefill, else decode); BadInput when the plan does not fit the graph.
#include <memory>

#include "agentcompile/ir/graph.h"
#include "agentcompile/tuning/executor.h"

namespace ac {

struct Plan;

std::unique_ptr<Executor> make_cpu_executor(const Graph& graph, const ExecutorLimits& limits, const Plan* plan = nullptr);

}  // namespace ac
