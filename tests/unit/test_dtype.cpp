#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "agentcompile/core/dtype.h"

using namespace ac;

TEST(DType, Bf16RoundTripAndRounding) {
  for (float v : {0.0f, 1.0f, -2.5f, 3.140625f, 0x1p-66f, 65024.0f}) EXPECT_EQ(bf16_to_f32(f32_to_bf16(v)), v) << v;
  // 1 + 2^-8 is halfway between two bf16 values: ties to even (1.0).
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.0f + 1.0f / 256)), 1.0f);
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.0f + 3.0f / 256)), 1.0f + 4.0f / 256);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_TRUE(std::isinf(bf16_to_f32(f32_to_bf16(std::numeric_limits<float>::infinity()))));
}

TEST(DType, F16ExhaustiveRoundTrip) {
  // Every finite f16 value converts to f32 and back to the same bits.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    uint16_t bits = static_cast<uint16_t>(h);
    float f = f16_to_f32(bits);
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_f16(f), bits) << std::hex << h;
  }
}

TEST(DType, F16RoundsToNearestEven) {
  EXPECT_EQ(f16_to_f32(f32_to_f16(1.0f + 1.0f / 2048)), 1.0f);               // tie -> even
  EXPECT_EQ(f16_to_f32(f32_to_f16(1.0f + 3.0f / 2048)), 1.0f + 4.0f / 2048);  // tie -> even (up)
  EXPECT_EQ(f16_to_f32(f32_to_f16(65504.0f)), 65504.0f);
  EXPECT_TRUE(std::isinf(f16_to_f32(f32_to_f16(65520.0f))));
  EXPECT_EQ(f16_to_f32(f32_to_f16(std::ldexp(1.0f, -24))), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(f16_to_f32(f32_to_f16(std::ldexp(1.0f, -26))), 0.0f);
  EXPECT_EQ(f16_to_f32(f32_to_f16(std::ldexp(3.0f, -26))), std::ldexp(1.0f, -24));
}

TEST(DType, Names) {
  EXPECT_EQ(dtype_from_safetensors_name("BF16"), DType::BF16);
  EXPECT_EQ(dtype_from_safetensors_name("F8_E4M3"), DType::F8_E4M3);
  EXPECT_FALSE(dtype_from_safetensors_name("bf16").has_value());
  EXPECT_EQ(dtype_from_user_name("bfloat16"), DType::BF16);
  EXPECT_EQ(dtype_size(DType::F64), 8u);
  EXPECT_EQ(dtype_safetensors_name(DType::I32), "I32");
}
