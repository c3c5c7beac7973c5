#pragma once
// A minimal parallel-for over [0, n) in contiguous chunks, one per hardware thread. Work items
// must be independent; exceptions from workers are re-thrown on the caller's thread.
#include <cstddef>
#include <functional>

namespace ac {

// Number of worker threads used by parallel_for (hardware concurrency, at least 1;
// AGENTCOMPILE_THREADS overrides it).
int worker_count();

// Calls fn(begin, end) on disjoint chunks covering [0, n); runs inline when n < min_chunk * 2.
void parallel_for(size_t n, size_t min_chunk, const std::function<void(size_t, size_t)>& fn);

}  // namespace ac
