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
