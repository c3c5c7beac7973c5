#pragma once
// The CPU backend's evaluator of a region's candidates (tuning/evaluator.h).
#include <memory>

#include "agentcompile/tuning/evaluator.h"

namespace ac {

struct Graph;
struct Partition;

// The CPU backend's evaluator: runs the region's ops (representative instance, the model's own
// weights) through cpu::run_op with the candidate's binding. Correctness: 2 seeds x 2 shapes
// (decode: batch 1 and a ragged batch of 3 with different contexts; prefill: 13 and 29 tokens),
// fresh random inputs and KV cache per check, outputs and written cache rows poisoned with NaN,
// compared with the reference ops (relative L2 <= 1e-5 for f32, 1e-2 for bf16 activations).
// Timing: wall clock of one region run at the summary's shape point, median of the repeats.
std::unique_ptr<Evaluator> make_cpu_evaluator(const Graph& g, const Partition& part);

}  // namespace ac
