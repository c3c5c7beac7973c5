#include "agentcompile/core/dtype.h"

#include <array>
#include <cmath>

namespace ac {

namespace {
struct DTypeInfo {
  DType type;
  size_t size;
  std::string_view st_name;
  std::string_view user_name;
};
constexpr std::array<DTypeInfo, 16> kInfo{{
    {DType::F32, 4, "F32", "f32"},         {DType::F16, 2, "F16", "f16"},
    {DType::BF16, 2, "BF16", "bf16"},      {DType::F64, 8, "F64", "f64"},
    {DType::I64, 8, "I64", "i64"},         {DType::I32, 4, "I32", "i32"},
    {DType::I16, 2, "I16", "i16"},         {DType::I8, 1, "I8", "i8"},
    {DType::U64, 8, "U64", "u64"},         {DType::U32, 4, "U32", "u32"},
    {DType::U16, 2, "U16", "u16"},         {DType::U8, 1, "U8", "u8"},
    {DType::BOOL, 1, "BOOL", "bool"},      {DType::F8_E4M3, 1, "F8_E4M3", "f8_e4m3"},
    {DType::F8_E5M2, 1, "F8_E5M2", "f8_e5m2"}, {DType::F8_E8M0, 1, "F8_E8M0", "f8_e8m0"},
}};
const DTypeInfo& info(DType t) { return kInfo[static_cast<size_t>(t)]; }
}  // namespace

size_t dtype_size(DType t) { return info(t).size; }
std::string_view dtype_safetensors_name(DType t) { return info(t).st_name; }
std::string_view dtype_user_name(DType t) { return info(t).user_name; }
bool dtype_is_compute(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

std::string_view dtype_torch_name(DType t) {
  switch (t) {
    case DType::F32: return "float32";
    case DType::F16: return "float16";
    case DType::BF16: return "bfloat16";
    default: return dtype_user_name(t);
  }
}

std::optional<DType> dtype_from_safetensors_name(std::string_view name) {
  for (const auto& i : kInfo)
    if (i.st_name == name) return i.type;
  return std::nullopt;
}

std::optional<DType> dtype_from_user_name(std::string_view name) {
  if (name == "bf16" || name == "bfloat16") return DType::BF16;
  if (name == "f16" || name == "float16" || name == "half" || name == "fp16") return DType::F16;
  if (name == "f32" || name == "float32" || name == "float" || name == "fp32") return DType::F32;
  return std::nullopt;
}

float f16_to_f32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t u;
  if (exp == 0) {
    if (mant == 0) {
      u = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do { mant <<= 1; ++e; } while ((mant & 0x400u) == 0);
      u = sign | uint32_t(127 - 15 - e) << 23 | (mant & 0x3ffu) << 13;
    }
  } else if (exp == 0x1f) {
    u = sign | 0x7f800000u | (mant << 13);
  } else {
    u = sign | (exp + 127 - 15) << 23 | (mant << 13);
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t f32_to_f16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return uint16_t(sign | 0x7e00u);  // NaN
  if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to >= 65520: inf
  if (abs < 0x38800000u) {  // below the smallest normal f16: subnormal or zero
    if (abs < 0x33000000u) return sign;  // < 2^-25 rounds to zero
    uint32_t exp = abs >> 23;
    uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - exp;  // 14 - (exp - 127) + 13 - 1 ... bits dropped = shift
    // value = mant * 2^(exp-150); in units of 2^-24: mant >> (126 - exp)
    uint32_t q = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) ++q;
    return uint16_t(sign | q);
  }
  uint32_t rounded = abs + 0xfffu + ((abs >> 13) & 1u);
  return uint16_t(sign | ((rounded - 0x38000000u) >> 13));
}

}  // namespace ac
