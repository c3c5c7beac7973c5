#pragma once
// Shared pieces of the GPU tests: skip with a visible reason where there is no GPU, device
// buffers from host vectors, NaN poisoning and the relative L2 error of DESIGN.md.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "agentcompile/backends/cuda/cuda_executor.h"
#include "agentcompile/core/rng.h"
#include "agentcompile/tuning/reference_ops.h"
#include "backends/cuda/device.h"

namespace ac::test {

#define AC_REQUIRE_GPU()                                                      \
  do {                                                                        \
    std::string ac_why_;                                                      \
    if (!::ac::cuda_available(&ac_why_)) GTEST_SKIP() << "no GPU: " << ac_why_; \
  } while (0)

// The stream every GPU test launches on, and the GPU's architecture ("sm_90").
inline CUstream stream() { return cuda::Device::get().stream(); }
inline std::string arch() { return cuda::Device::get().info().arch(); }

inline std::vector<float> random_vec(size_t n, uint64_t seed, float scale = 1.0f) {
  Rng r(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = scale * r.normal();
  return v;
}

template <class T>
cuda::DeviceBuffer to_device(const std::vector<T>& v) {
  cuda::DeviceBuffer b(std::max<size_t>(v.size() * sizeof(T), 4));
  b.upload(v.data(), v.size() * sizeof(T), cuda::Device::get().stream());
  return b;
}

// A device buffer of n floats filled with NaN, so an element the kernel forgets stays visible.
inline cuda::DeviceBuffer poisoned(size_t n) {
  cuda::DeviceBuffer b(std::max<size_t>(n * 4, 4));
  b.fill_u32(0x7fc00000u, cuda::Device::get().stream());
  return b;
}

template <class T>
std::vector<T> to_host(const cuda::DeviceBuffer& b, size_t n) {
  std::vector<T> v(n);
  b.download(v.data(), n * sizeof(T), cuda::Device::get().stream());
  cuda::Device::get().synchronize();
  return v;
}

// ||a - b|| / ||b||; infinity when a holds a NaN (an unwritten or broken element).
inline double rel_l2(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i])) return INFINITY;
    num += double(a[i] - b[i]) * double(a[i] - b[i]);
    den += double(b[i]) * double(b[i]);
  }
  return den == 0 ? std::sqrt(num) : std::sqrt(num / den);
}

// Values as stored in dtype t (rounded), and those values as f32 for the CPU reference.
inline std::vector<uint8_t> store_as(const std::vector<float>& v, DType t, std::vector<float>& rounded) {
  std::vector<uint8_t> bytes(v.size() * dtype_size(t));
  rounded.resize(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    store_from_f32(bytes.data(), t, i, v[i]);
    rounded[i] = load_as_f32(bytes.data(), t, i);
  }
  return bytes;
}

// The decode GEMVs' CPU composition (gemv.fused, gemv.fp8): x' = RMSNorm(x) * gamma (x when gamma
// is null), y = W x' + bias, then the epilogue: 0 and 3 store y, 1 resid + y, 2 silu(y) * (W2 x').
inline std::vector<float> gemv_want(const std::vector<float>& x, long long B, long long K, const float* gamma,
                                    const float* w, const float* w2, const float* bias, long long N, int epi,
                                    const std::vector<float>& resid) {
  std::vector<float> xn(x.size()), y(size_t(B * N)), y2(y.size());
  if (gamma) ref::rms_norm(x.data(), B, K, gamma, 1e-6f, xn.data());
  else xn = x;
  ref::linear(xn.data(), B, K, w, bias, N, y.data());
  std::vector<float> want = y;
  if (epi == 1)
    for (size_t i = 0; i < want.size(); ++i) want[i] = resid[i] + y[i];
  if (epi == 2) {
    ref::linear(xn.data(), B, K, w2, nullptr, N, y2.data());
    ref::swiglu(y.data(), y2.data(), B * N, want.data());
  }
  return want;
}

}  // namespace ac::test
