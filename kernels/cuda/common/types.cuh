// Storage types and conversions for NVRTC-compiled kernels. No CUDA headers are needed: bf16 and
// f16 are handled as raw 16-bit values with PTX conversions (sm_80+).
#pragma once

#define AC_NEG_INF __int_as_float(0xff800000)

struct ac_bf16 { unsigned short bits; };
struct ac_f16 { unsigned short bits; };

__device__ __forceinline__ float to_f32(float v) { return v; }
__device__ __forceinline__ float to_f32(ac_bf16 v) { return __uint_as_float(((unsigned)v.bits) << 16); }
__device__ __forceinline__ float to_f32(ac_f16 v) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v.bits));
  return f;
}

template <typename T> __device__ __forceinline__ T from_f32(float v);
template <> __device__ __forceinline__ float from_f32<float>(float v) { return v; }
template <> __device__ __forceinline__ ac_bf16 from_f32<ac_bf16>(float v) {
  unsigned short h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(v));
  return ac_bf16{h};
}
template <> __device__ __forceinline__ ac_f16 from_f32<ac_f16>(float v) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
  return ac_f16{h};
}
