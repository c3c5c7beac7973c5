#pragma once
// Running a compiled plan: load a plan folder, refuse it when it was made for another model,
// machine or engine version, and build the executor it describes. Reads plans only through
// src/plan (the runtime does not depend on the compiler).
#include <memory>
#include <string>
#include <vector>

#include "agentcompile/core/fs.h"
#include "agentcompile/ir/graph.h"
#include "agentcompile/plan/plan.h"
#include "agentcompile/tuning/backend.h"

namespace ac {

struct Model;

// Plan::load + check_plan_usable against `model` and this machine; BadInput ("--plan DIR: ...")
// otherwise. `backend_flag` ("auto" or empty accepts the plan's backend) must agree with the plan.
// `kernels`: PlanKernels::Rebuild (--rebuild-kernels) leaves the plan's binaries unread.
// A plan compiled with --weights (Plan::weights) runs the model quantized the same way: quantizes
// `model` in place, before the caller builds its graph (the model-hash check of load_plan_for then
// passes; a caller that skipped this fails it). BadInput naming the plan for a model that is
// already quantized. Nothing to do for other plans.
void prepare_model_for_plan(const fs::path& dir, Model& model);

Plan load_plan_for(const fs::path& dir, const Model& model, const std::string& backend_flag,
                   PlanKernels kernels = PlanKernels::Load);

// The plan's kernels built from other kernel sources than this engine's (cuda_stale_plan_kernels;
// none for CPU plans). Such a plan still runs, correctly, on this engine's kernels, but the
// choices it holds were timed on the old ones.
std::vector<std::string> stale_plan_kernels(const Plan& plan, const Graph& graph);
// The one-line warning for `stale` (stale_plan_kernels' answer; "" when empty): how many, one
// example, and what to do.
std::string stale_plan_warning(const Plan& plan, const std::vector<std::string>& stale);

}  // namespace ac
