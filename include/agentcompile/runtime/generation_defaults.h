#pragma once
// Sampling defaults a model ships in generation_config.json (do_sample, temperature, top_k,
// top_p, min_p), used when the user gives no sampling flag, as vLLM does.
#include "agentcompile/core/fs.h"
#include "agentcompile/runtime/sampler.h"

namespace ac {

// Greedy when the file is absent or do_sample is false.
SamplingParams load_sampling_defaults(const fs::path& model_dir);

}  // namespace ac
