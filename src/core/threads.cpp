#include "agentcompile/core/threads.h"

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace ac {

int worker_count() {
  static const int n = [] {
    if (const char* env = std::getenv("AGENTCOMPILE_THREADS")) {
      int v = std::atoi(env);
      if (v > 0 && v <= 1024) return v;
    }
    unsigned hc = std::thread::hardware_concurrency();
    return hc == 0 ? 1 : static_cast<int>(hc);
  }();
  return n;
}

void parallel_for(size_t n, size_t min_chunk, const std::function<void(size_t, size_t)>& fn) {
  if (n == 0) return;
  min_chunk = std::max<size_t>(min_chunk, 1);
  size_t workers = std::min<size_t>(static_cast<size_t>(worker_count()), (n + min_chunk - 1) / min_chunk);
  if (workers <= 1) {
    fn(0, n);
    return;
  }
  size_t chunk = (n + workers - 1) / workers;
  std::vector<std::thread> threads;
  std::exception_ptr first_error;
  std::mutex mu;
  for (size_t w = 1; w < workers; ++w) {
    size_t b = w * chunk, e = std::min(n, b + chunk);
    if (b >= e) break;
    threads.emplace_back([&, b, e] {
      try {
        fn(b, e);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!first_error) first_error = std::current_exception();
      }
    });
  }
  try {
    fn(0, std::min(n, chunk));
  } catch (...) {
    std::lock_guard<std::mutex> lock(mu);
    if (!first_error) first_error = std::current_exception();
  }
  for (auto& t : threads) t.join();
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace ac
