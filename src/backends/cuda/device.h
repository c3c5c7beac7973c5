#pragma once
// One GPU: its primary context (shared with cuBLAS), facts the compiler and the constraint
// checks need, a caching device-memory pool, pinned host buffers and streams.
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/cuda/driver.h"

namespace ac::cuda {

struct DeviceInfo {
  std::string name;
  int ordinal = 0;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int max_threads_per_block = 0;
  int max_smem_per_block = 0;        // without opt-in (48 KiB)
  int max_smem_per_block_optin = 0;  // with CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
  int max_regs_per_block = 0;
  int l2_bytes = 0;
  size_t total_mem = 0;
  int driver_version = 0;
  std::string arch() const;  // "sm_90" (sm_90a is chosen per kernel where a family needs it)
};

class Device {
 public:
  // The process's GPU (device 0); throws BadInput("cuda", why) where there is none.
  static Device& get();
  const DeviceInfo& info() const { return info_; }
  CUstream stream() const { return stream_; }
  void synchronize();

  // Caching pool: freed blocks are kept by size and reused; released back on allocation failure.
  CUdeviceptr alloc(size_t bytes);
  void free(CUdeviceptr p);
  size_t bytes_in_use() const { return in_use_; }

  ~Device();

 private:
  Device();
  DeviceInfo info_;
  CUcontext ctx_ = nullptr;
  CUstream stream_ = nullptr;
  std::mutex mu_;
  std::map<size_t, std::vector<CUdeviceptr>> cached_;
  std::map<CUdeviceptr, size_t> sizes_;
  size_t in_use_ = 0;
};

// Owns device memory from the pool; [bytes] noted by the user where it is declared.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = 0; o.bytes_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  CUdeviceptr ptr() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  template <class T> T* as() const { return reinterpret_cast<T*>(ptr_); }
  void upload(const void* host, size_t bytes, CUstream s);
  void download(void* host, size_t bytes, CUstream s) const;
  void fill_u32(uint32_t pattern, CUstream s);  // e.g. a NaN poison before a kernel runs

 private:
  CUdeviceptr ptr_ = 0;
  size_t bytes_ = 0;
};

// Page-locked host memory, for copies that overlap and for CUDA-graph-safe transfers.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(size_t bytes);
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = nullptr; o.bytes_ = 0; }
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  void* data() const { return ptr_; }
  template <class T> T* as() const { return static_cast<T*>(ptr_); }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// GPU time between two points on a stream (CUDA events).
class EventTimer {
 public:
  EventTimer();
  ~EventTimer();
  void start(CUstream s);
  float stop_ms(CUstream s);  // synchronises

 private:
  CUevent a_ = nullptr, b_ = nullptr;
};

}  // namespace ac::cuda
