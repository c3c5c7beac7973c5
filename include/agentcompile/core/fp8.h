#pragma once
// FP8 E4M3 ("e4m3fn", the format of FP8 checkpoints and of the GPUs' fp8 units): 1 sign bit, 4
// exponent bits (bias 7), 3 mantissa bits; no infinities, 0x7f/0xff are NaN, largest finite 448.
#include <cstdint>

namespace ac {

inline constexpr float kFp8E4M3Max = 448.0f;

// Exact: every e4m3 value is an f32.
float fp8_e4m3_to_f32(uint8_t v);
// Round to nearest even; values beyond +-448 saturate to +-448 (as quantizers clamp), NaN stays NaN.
uint8_t f32_to_fp8_e4m3(float f);

}  // namespace ac
