#include "backends/cuda/device.h"

#include "agentcompile/core/error.h"

namespace ac::cuda {

std::string DeviceInfo::arch() const { return "sm_" + std::to_string(cc_major * 10 + cc_minor); }

Device& Device::get() {
  static std::unique_ptr<Device> dev;
  static std::once_flag once;
  static std::string failure;
  std::call_once(once, [] {
    try {
      dev.reset(new Device());
    } catch (const Error& e) {
      failure = e.reason();
    }
  });
  if (!dev) throw_input("cuda", failure);
  return *dev;
}

Device::Device() {
  const DriverApi& d = drv();
  CUdevice dev;
  CU_CHECK(d.cuDeviceGet(&dev, 0));
  CU_CHECK(d.cuDevicePrimaryCtxRetain(&ctx_, dev));
  CU_CHECK(d.cuCtxSetCurrent(ctx_));
  char name[256] = {0};
  CU_CHECK(d.cuDeviceGetName(name, sizeof name - 1, dev));
  info_.name = name;
  auto attr = [&](CUdevice_attribute a) {
    int v = 0;
    CU_CHECK(d.cuDeviceGetAttribute(&v, a, dev));
    return v;
  };
  info_.cc_major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  info_.cc_minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  info_.sm_count = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  info_.max_threads_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  info_.max_smem_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
  info_.max_smem_per_block_optin = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  info_.max_regs_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
  info_.l2_bytes = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  CU_CHECK(d.cuDeviceTotalMem(&info_.total_mem, dev));
  CU_CHECK(d.cuDriverGetVersion(&info_.driver_version));
  CU_CHECK(d.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING));
}

Device::~Device() {
  // Process exit: the driver reclaims everything; only release what is cheap and safe.
  const DriverApi* d = driver_api();
  if (d == nullptr) return;
  for (auto& [size, list] : cached_)
    for (CUdeviceptr p : list) d->cuMemFree(p);
  if (stream_) d->cuStreamDestroy(stream_);
}

void Device::synchronize() { CU_CHECK(drv().cuStreamSynchronize(stream_)); }

CUdeviceptr Device::alloc(size_t bytes) {
  const size_t rounded = bytes <= 512 ? 512 : (bytes + 4095) / 4096 * 4096;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = cached_.find(rounded);
  if (it != cached_.end() && !it->second.empty()) {
    CUdeviceptr p = it->second.back();
    it->second.pop_back();
    in_use_ += rounded;
    return p;
  }
  CUdeviceptr p = 0;
  CUresult r = drv().cuMemAlloc(&p, rounded);
  if (r == CUDA_ERROR_OUT_OF_MEMORY) {  // give cached blocks back and try once more
    for (auto& [size, list] : cached_)
      for (CUdeviceptr q : list) drv().cuMemFree(q);
    cached_.clear();
    r = drv().cuMemAlloc(&p, rounded);
  }
  if (r == CUDA_ERROR_OUT_OF_MEMORY)
    throw_input("cuda", "out of GPU memory allocating " + std::to_string(rounded >> 20) + " MiB (" +
                            std::to_string(in_use_ >> 20) + " MiB in use)");
  CU_CHECK(r);
  sizes_[p] = rounded;
  in_use_ += rounded;
  return p;
}

void Device::free(CUdeviceptr p) {
  if (p == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sizes_.find(p);
  if (it == sizes_.end()) return;
  in_use_ -= it->second;
  cached_[it->second].push_back(p);
}

DeviceBuffer::DeviceBuffer(size_t bytes) : ptr_(Device::get().alloc(bytes)), bytes_(bytes) {}
DeviceBuffer::~DeviceBuffer() {
  if (ptr_) Device::get().free(ptr_);
}
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) Device::get().free(ptr_);
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    o.ptr_ = 0;
    o.bytes_ = 0;
  }
  return *this;
}
void DeviceBuffer::upload(const void* host, size_t bytes, CUstream s) {
  if (bytes > bytes_) throw_internal("cuda", "upload larger than the buffer");
  if (bytes) CU_CHECK(drv().cuMemcpyHtoDAsync(ptr_, host, bytes, s));
}
void DeviceBuffer::download(void* host, size_t bytes, CUstream s) const {
  if (bytes > bytes_) throw_internal("cuda", "download larger than the buffer");
  if (bytes) CU_CHECK(drv().cuMemcpyDtoHAsync(host, ptr_, bytes, s));
}
void DeviceBuffer::fill_u32(uint32_t pattern, CUstream s) {
  if (bytes_ >= 4) CU_CHECK(drv().cuMemsetD32Async(ptr_, pattern, bytes_ / 4, s));
}

PinnedBuffer::PinnedBuffer(size_t bytes) : bytes_(bytes) {
  Device::get();  // context current
  CU_CHECK(drv().cuMemAllocHost(&ptr_, bytes ? bytes : 1));
}
PinnedBuffer::~PinnedBuffer() {
  if (ptr_) drv().cuMemFreeHost(ptr_);
}
PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) drv().cuMemFreeHost(ptr_);
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    o.ptr_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

EventTimer::EventTimer() {
  Device::get();
  CU_CHECK(drv().cuEventCreate(&a_, CU_EVENT_DEFAULT));
  CU_CHECK(drv().cuEventCreate(&b_, CU_EVENT_DEFAULT));
}
EventTimer::~EventTimer() {
  if (const DriverApi* d = driver_api()) {
    if (a_) d->cuEventDestroy(a_);
    if (b_) d->cuEventDestroy(b_);
  }
}
void EventTimer::start(CUstream s) { CU_CHECK(drv().cuEventRecord(a_, s)); }
float EventTimer::stop_ms(CUstream s) {
  CU_CHECK(drv().cuEventRecord(b_, s));
  CU_CHECK(drv().cuEventSynchronize(b_));
  float ms = 0;
  CU_CHECK(drv().cuEventElapsedTime(&ms, a_, b_));
  return ms;
}

}  // namespace ac::cuda
