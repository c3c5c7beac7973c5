#pragma once
// Rotary position embedding tables, computed as HF transformers does (inv_freq in f32, the
// llama3 and linear scalings applied to inv_freq, angle = position * inv_freq in f32), so every
// backend rotates by the same angles.
#include <vector>

#include "agentcompile/model/hf_config.h"

namespace ac {

// head_dim / 2 inverse frequencies.
std::vector<float> rope_inv_freq(const RopeConfig& rope, int64_t head_dim);

// cos and sin of position * inv_freq[i] for i < head_dim/2 (HF uses the same half twice).
void rope_cos_sin(const std::vector<float>& inv_freq, int64_t position, float* cos_out, float* sin_out);

}  // namespace ac
