#pragma once
// Exactly `threads` workers over [0, items) (fewer when there are fewer items): the thread count
// is a tuned parameter of the CPU families, unlike parallel_for's one-per-core.
#include <algorithm>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace ac::cpu {

// fn(worker, begin, end) on contiguous chunks; exceptions re-thrown on the caller's thread.
template <class Fn>
void run_threads(int threads, int64_t items, const Fn& fn) {
  if (items <= 0) return;
  const int64_t workers = std::max<int64_t>(1, std::min<int64_t>(threads, items));
  const int64_t chunk = (items + workers - 1) / workers;
  if (workers == 1) {
    fn(0, int64_t(0), items);
    return;
  }
  std::exception_ptr error;
  std::mutex mu;
  auto guarded = [&](int w, int64_t b, int64_t e) {
    try {
      fn(w, b, e);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu);
      if (!error) error = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  for (int64_t w = 1; w < workers; ++w) {
    const int64_t b = w * chunk, e = std::min(items, b + chunk);
    if (b < e) pool.emplace_back(guarded, int(w), b, e);
  }
  guarded(0, 0, std::min(items, chunk));
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace ac::cpu
