// Rotary embedding (HF rotate_half pairing: j with j + head_dim/2), one block per token. The
// angle is position * inv_freq in f32 as HF computes it; cos/sin in double then rounded, like
// the CPU reference.
#pragma once
#include "common/params.h"

template <int BLOCK>
__device__ void rope_ref(const RopeParams& p) {
  const long long t = blockIdx.x;
  const long long half = p.head_dim / 2;
  const float pos = (float)p.positions[t];
  for (long long idx = threadIdx.x; idx < p.heads * half; idx += BLOCK) {
    const long long h = idx / half, j = idx % half;
    const float angle = pos * p.inv_freq[j];
    const float c = (float)cos((double)angle), s = (float)sin((double)angle);
    const long long base = (t * p.heads + h) * p.head_dim;
    const float a = p.x[base + j], b = p.x[base + j + half];
    p.out[base + j] = a * c - b * s;
    p.out[base + j + half] = b * c + a * s;
  }
}
