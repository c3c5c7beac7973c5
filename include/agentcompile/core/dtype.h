#pragma once
// Element types. The model path supports bf16, f16 and f32 (docs/design.md numerics); the other
// safetensors dtypes are known so a file holding them can be read and reported, not computed on.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace ac {

enum class DType : uint8_t {
  F32, F16, BF16,                                  // compute dtypes
  F64, I64, I32, I16, I8, U64, U32, U16, U8, BOOL,  // storable, not computed on
  F8_E4M3, F8_E5M2, F8_E8M0,
};

size_t dtype_size(DType t);
// The safetensors spelling ("BF16", "F32", ...).
std::string_view dtype_safetensors_name(DType t);
std::optional<DType> dtype_from_safetensors_name(std::string_view name);
// Lower-case user/HF spelling: "bf16"/"bfloat16", "f16"/"float16"/"half", "f32"/"float32"/"float".
std::optional<DType> dtype_from_user_name(std::string_view name);
std::string_view dtype_user_name(DType t);  // "bf16", "f16", "f32", ...
std::string_view dtype_torch_name(DType t);  // "bfloat16", "float16", "float32" (config.json torch_dtype)
bool dtype_is_compute(DType t);

// bf16 and f16 conversions, round to nearest even, NaN kept NaN.
inline float bf16_to_f32(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint16_t f32_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}
float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);

// Reads element i of a buffer of dtype t (a compute dtype) as f32.
inline float load_as_f32(const void* data, DType t, size_t i) {
  switch (t) {
    case DType::F32: { float f; std::memcpy(&f, static_cast<const char*>(data) + 4 * i, 4); return f; }
    case DType::BF16: { uint16_t h; std::memcpy(&h, static_cast<const char*>(data) + 2 * i, 2); return bf16_to_f32(h); }
    case DType::F16: { uint16_t h; std::memcpy(&h, static_cast<const char*>(data) + 2 * i, 2); return f16_to_f32(h); }
    default: return 0.0f;  // callers check dtype_is_compute first
  }
}
inline void store_from_f32(void* data, DType t, size_t i, float v) {
  char* p = static_cast<char*>(data);
  switch (t) {
    case DType::F32: std::memcpy(p + 4 * i, &v, 4); break;
    case DType::BF16: { uint16_t h = f32_to_bf16(v); std::memcpy(p + 2 * i, &h, 2); break; }
    case DType::F16: { uint16_t h = f32_to_f16(v); std::memcpy(p + 2 * i, &h, 2); break; }
    default: break;
  }
}

}  // namespace ac
