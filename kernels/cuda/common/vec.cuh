// 16-byte weight loads that bypass L1 (weights are read once per step) and their conversion to f32.
#pragma once
#include "common/types.cuh"

struct u32x4 { unsigned a, b, c, d; };

__device__ __forceinline__ u32x4 load_stream16(const void* p) {
  u32x4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.a), "=r"(v.b), "=r"(v.c), "=r"(v.d) : "l"(p));
  return v;
}

// Eight 16-bit values (bf16 or f16) of a 16-byte chunk as floats.
__device__ __forceinline__ void unpack8(const u32x4& v, ac_bf16, float* f) {
  const unsigned w[4] = {v.a, v.b, v.c, v.d};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = __uint_as_float(w[i] << 16);
    f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
  }
}
__device__ __forceinline__ void unpack8(const u32x4& v, ac_f16, float* f) {
  const unsigned w[4] = {v.a, v.b, v.c, v.d};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = to_f32(ac_f16{(unsigned short)(w[i] & 0xffffu)});
    f[2 * i + 1] = to_f32(ac_f16{(unsigned short)(w[i] >> 16)});
  }
}

// Eight FP8 e4m3 values (two 32-bit words: bytes in memory order) as floats, exactly. sm_89+
// converts two per instruction (cvt.rn.f16x2.e4m3x2: the lower byte to the lower half; e4m3 is
// exact in f16); earlier GPUs move the bits into an f16 whose exponent is 8 smaller (bias 15 vs 7,
// subnormals included) and scale by 2^8. NaN codes (0x7f, 0xff) are not expected in weights.
__device__ __forceinline__ void unpack_fp8x4(unsigned w, float* f) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  unsigned lo, hi;
  asm("{\n .reg .b16 a, b;\n mov.b32 {a, b}, %2;\n cvt.rn.f16x2.e4m3x2 %0, a;\n cvt.rn.f16x2.e4m3x2 %1, b;\n}"
      : "=r"(lo), "=r"(hi) : "r"(w));
  f[0] = to_f32(ac_f16{(unsigned short)(lo & 0xffffu)});
  f[1] = to_f32(ac_f16{(unsigned short)(lo >> 16)});
  f[2] = to_f32(ac_f16{(unsigned short)(hi & 0xffffu)});
  f[3] = to_f32(ac_f16{(unsigned short)(hi >> 16)});
#else
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const unsigned b = (w >> (8 * i)) & 0xffu;
    f[i] = to_f32(ac_f16{(unsigned short)(((b & 0x80u) << 8) | ((b & 0x7fu) << 7))}) * 256.0f;
  }
#endif
}

// Four e4m3 codes (one 32-bit word, code i in byte i) as two bf16 pairs (lo = codes 0, 1; hi = 2,
// 3; the lower code in the lower half) by moving bits instead of converting: each code's sign to
// bit 15 and its exponent and mantissa to bf16's bits 4-10, which reads as the code's value times
// 2^-120 (codes with a zero exponent land on bf16 subnormals the same way), then one bf16x2
// multiply by 2^120 (0x7b80), exact: a power of two, and every e4m3 value is a normal bf16 (bf16
// arithmetic keeps subnormal inputs). Integer and bf16x2 instructions instead of the conversion
// unit's cvt, which the other path needs three of per pair (e4m3 -> f16, f16 -> f32, f32 -> bf16).
__device__ __forceinline__ void fp8x4_to_bf16x2_bits(unsigned w, unsigned& lo, unsigned& hi) {
  const unsigned a = __byte_perm(w, 0u, 0x1404);  // codes 0, 1 in bytes 1, 3; bytes 0, 2 zero
  const unsigned b = __byte_perm(w, 0u, 0x3424);  // codes 2, 3 likewise
  const unsigned la = (a & 0x80008000u) | ((a >> 4) & 0x07f007f0u);
  const unsigned lb = (b & 0x80008000u) | ((b >> 4) & 0x07f007f0u);
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(lo) : "r"(la), "r"(0x7b807b80u), "r"(0x80008000u));
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(hi) : "r"(lb), "r"(0x7b807b80u), "r"(0x80008000u));
}

// unpack_fp8x4 by fp8x4_to_bf16x2_bits (sm_80+): the same floats (bf16 widens to f32 exactly).
__device__ __forceinline__ void unpack_fp8x4_bits(unsigned w, float* f) {
  unsigned lo, hi;
  fp8x4_to_bf16x2_bits(w, lo, hi);
  f[0] = __uint_as_float(lo << 16);
  f[1] = __uint_as_float(lo & 0xffff0000u);
  f[2] = __uint_as_float(hi << 16);
  f[3] = __uint_as_float(hi & 0xffff0000u);
}

// unpack_fp8x4 (BITS false: cvt) or unpack_fp8x4_bits (true: bit moves), the GEMVs' CVT.
template <bool BITS>
__device__ __forceinline__ void unpack_fp8x4_as(unsigned w, float* f) {
  if constexpr (BITS) unpack_fp8x4_bits(w, f);
  else unpack_fp8x4(w, f);
}
