// Elementwise ops, grid-stride loops: SwiGLU, residual add, casts, bias, row gather.
#pragma once
#include "common/params.h"
#include "common/types.cuh"

template <int BLOCK>
__device__ void swiglu_ref(const ElementwiseParams& p) {
  for (long long i = (long long)blockIdx.x * BLOCK + threadIdx.x; i < p.count; i += (long long)gridDim.x * BLOCK) {
    const float g = p.a[i];
    p.out[i] = g / (1.0f + expf(-g)) * p.b[i];
  }
}

template <int BLOCK>
__device__ void add_ref(const ElementwiseParams& p) {
  for (long long i = (long long)blockIdx.x * BLOCK + threadIdx.x; i < p.count; i += (long long)gridDim.x * BLOCK)
    p.out[i] = p.a[i] + p.b[i];
}

template <int BLOCK, typename OUT>
__device__ void cast_ref(const CastParams& p) {
  for (long long i = (long long)blockIdx.x * BLOCK + threadIdx.x; i < p.count; i += (long long)gridDim.x * BLOCK)
    static_cast<OUT*>(p.out)[i] = from_f32<OUT>(p.x[i]);
}

// An e4m3 code's value: its bits moved into an f16 (sign, then exponent and mantissa one place
// lower) scaled by 2^8, exact for every finite code (as gemv.fp8's pre-sm_89 path).
template <int BLOCK, typename OUT>
__device__ void fp8_dequant_ref(const Fp8DequantParams& p) {
  for (long long i = (long long)blockIdx.x * BLOCK + threadIdx.x; i < p.N * p.K; i += (long long)gridDim.x * BLOCK) {
    const unsigned b = p.codes[i];
    const float v = to_f32(ac_f16{(unsigned short)(((b & 0x80u) << 8) | ((b & 0x7fu) << 7))}) * 256.0f;
    const long long r = i / p.K, k = i % p.K;
    static_cast<OUT*>(p.out)[i] = from_f32<OUT>(v * p.scales[(r / p.bo) * p.scale_cols + k / p.bi]);
  }
}

template <int BLOCK, typename W>
__device__ void bias_ref(const BiasParams& p) {
  const W* b = static_cast<const W*>(p.bias);
  for (long long i = (long long)blockIdx.x * BLOCK + threadIdx.x; i < p.n * p.cols; i += (long long)gridDim.x * BLOCK)
    p.out[i] += to_f32(b[i % p.cols]);
}

template <int BLOCK>
__device__ void gather_rows_ref(const GatherRowsParams& p) {
  const long long t = blockIdx.x;
  const float* src = p.x + (long long)p.rows[t] * p.cols;
  for (long long j = threadIdx.x; j < p.cols; j += BLOCK) p.out[t * p.cols + j] = src[j];
}
