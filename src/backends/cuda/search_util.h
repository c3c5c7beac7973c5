#pragma once
// What the CUDA evaluators share: random 16-bit inputs, their f32 values, the relative error of an
// output against its reference, and the prompt length prompt-step regions are measured at.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agentcompile/core/dtype.h"
#include "agentcompile/tuning/space.h"
#include "backends/cuda/fast_config.h"

namespace ac::cuda {

// A prompt step's regions are timed on a prompt of at least this many tokens: the plan's point
// runs every prompt, and the long prompts are where the step's time goes.
inline constexpr int64_t kPromptTokens = 2048;

// n random values offset + scale * N(0, 1) in `wt` (bf16 or f16); the same for any thread count.
std::vector<uint16_t> random_w16(size_t n, uint64_t seed, float scale, float offset, DType wt);
// The values of 16-bit `v` as f32.
std::vector<float> widen(const std::vector<uint16_t>& v, DType wt);
// ||got - want|| / ||want||; nullopt when got holds a NaN (a broken or unwritten element).
std::optional<double> rel_l2(const std::vector<float>& got, const std::vector<float>& want);

// Whether `family` is one of our own prompt GEMMs' search families (cuda:gemm.wgmma, cuda:gemm.mma).
bool own_gemm_family(const std::string& family);
// The own-GEMM route of a prompt projection's candidate of `family` ("cuda:gemm.wgmma" or
// "cuda:gemm.mma"; any other: the library's) at point p (BN, STAGES, and gemm.wgmma's PIPE, LOAD,
// CLUSTER, SCHED).
OwnGemmChoice own_gemm_choice(const std::string& family, const ParamPoint& p);

}  // namespace ac::cuda
