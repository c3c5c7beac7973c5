#pragma once
// Running a compiled plan: load a plan folder, refuse it when it was made for another model,
// machine or engine version, and build the executor it describes. Reads plans only through
// src/plan (the runtime does not depend on the compiler).
#include <memory>

#include "agentcompile/core/fs.h"
#include "agentcompile/ir/graph.h"
#include "agentcompile/plan/plan.h"
#include "agentcompile/runtime/executor.h"

namespace ac {

struct Model;

// Plan::load + check_plan_usable against `model` and this machine; BadInput ("--plan DIR: ...")
// otherwise. `backend_flag` ("auto" or empty accepts the plan's backend) must agree with the plan.
Plan load_plan_for(const fs::path& dir, const Model& model, const std::string& backend_flag);

std::unique_ptr<Executor> make_plan_executor(const Plan& plan, const Graph& graph, const ExecutorLimits& limits);

}  // namespace ac
