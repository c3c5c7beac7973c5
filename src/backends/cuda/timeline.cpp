#include "backends/cuda/timeline.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <vector>

#include "agentcompile/core/error.h"
#include "backends/cuda/device.h"

namespace ac::cuda {

namespace {
// kernels/cuda/common/timeline.cuh's AcTimelineRecord.
constexpr int kMarks = 6;  // AC_TIMELINE_MARKS
struct Record {
  unsigned long long start, wait, end;
  unsigned tag, block, sm, pad;
  unsigned long long mark[kMarks];
};
constexpr unsigned kCapacity = 1u << 20;

struct State {
  std::mutex mu;
  DeviceBuffer records, count;
  std::vector<std::string> names;  // by tag
};
State& state() {
  static State s;
  return s;
}
}  // namespace

const std::string& timeline_path() {
  static const std::string p = [] {
    const char* v = std::getenv("AGENTCOMPILE_TIMELINE");
    return std::string(v ? v : "");
  }();
  return p;
}

long long timeline_step() {
  const char* v = std::getenv("AGENTCOMPILE_TIMELINE_STEP");
  const long long n = v ? std::atoll(v) : 0;
  return n > 0 ? n : 64;
}

long long timeline_steps() {
  const char* v = std::getenv("AGENTCOMPILE_TIMELINE_STEPS");
  const long long n = v ? std::atoll(v) : 0;
  return n > 0 ? n : 1;
}

void timeline_bind(CUmodule mod, const std::string& name) {
  if (!timeline_enabled()) return;
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (st.records.bytes() == 0) {
    st.records = DeviceBuffer(size_t(kCapacity) * sizeof(Record));
    st.count = DeviceBuffer(4);
  }
  const unsigned tag = unsigned(st.names.size());
  st.names.push_back(name);
  auto set = [&](const char* symbol, const void* value, size_t bytes) {
    CUdeviceptr at = 0;
    size_t size = 0;
    CU_CHECK(drv().cuModuleGetGlobal(&at, &size, mod, symbol));
    if (size != bytes) throw_internal("timeline", std::string(symbol) + " has an unexpected size");
    CU_CHECK(drv().cuMemcpyHtoDAsync(at, value, bytes, nullptr));
  };
  const CUdeviceptr buf = st.records.ptr(), cnt = st.count.ptr();
  set("ac_timeline_buf", &buf, sizeof buf);
  set("ac_timeline_count", &cnt, sizeof cnt);
  set("ac_timeline_cap", &kCapacity, sizeof kCapacity);
  set("ac_timeline_tag", &tag, sizeof tag);
  CU_CHECK(drv().cuStreamSynchronize(nullptr));
}

void timeline_reset(CUstream s) {
  State& st = state();
  if (st.count.bytes()) CU_CHECK(drv().cuMemsetD32Async(st.count.ptr(), 0, 1, s));
}

void timeline_write(CUstream s) {
  State& st = state();
  if (st.count.bytes() == 0) return;
  unsigned n = 0;
  st.count.download(&n, 4, s);
  CU_CHECK(drv().cuStreamSynchronize(s));
  n = std::min(n, kCapacity);
  std::vector<Record> r(n);
  if (n) st.records.download(r.data(), size_t(n) * sizeof(Record), s);
  CU_CHECK(drv().cuStreamSynchronize(s));
  unsigned long long t0 = ~0ull;
  for (const Record& x : r) t0 = std::min(t0, x.start);
  std::sort(r.begin(), r.end(), [](const Record& a, const Record& b) { return a.start < b.start; });
  std::ofstream out(timeline_path());
  out << "kernel,block,sm,start_ns,wait_ns,end_ns";
  for (int k = 0; k < kMarks; ++k) out << ",mark" << k << "_ns";
  out << '\n';
  for (const Record& x : r) {
    const std::string& name = x.tag < st.names.size() ? st.names[x.tag] : std::string("?");
    out << name << ',' << x.block << ',' << x.sm << ',' << (x.start - t0) << ','
        << (x.wait ? (long long)(x.wait - t0) : -1) << ',' << (x.end - t0);
    for (int k = 0; k < kMarks; ++k) out << ',' << (x.mark[k] ? (long long)(x.mark[k] - t0) : -1);
    out << '\n';
  }
  if (!out) throw_internal("timeline", "cannot write " + timeline_path());
}

}  // namespace ac::cuda
