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
