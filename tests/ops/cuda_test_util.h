#pragma once
// Shared pieces of the GPU tests: skip with a visible reason where there is no GPU, device
// buffers from host vectors, NaN poisoning and the relative L2 error of DESIGN.md.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "agentcompile/backends/cuda/cuda_executor.h"
#include "agentcompile/core/rng.h"
#include "backends/cuda/device.h"

namespace ac::test {

#define AC_REQUIRE_GPU()                                                      \
  do {                                                                        \
    std::string ac_why_;                                                      \
    if (!::ac::cuda_available(&ac_why_)) GTEST_SKIP() << "no GPU: " << ac_why_; \
  } while (0)

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

}  // namespace ac::test
