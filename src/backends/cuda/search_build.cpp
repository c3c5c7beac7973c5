#include "backends/cuda/search_build.h"

#include <algorithm>
#include <atomic>
#include <set>

#include "agentcompile/core/threads.h"

namespace ac::cuda {

BuildMemo& BuildMemo::get() {
  static BuildMemo m;
  return m;
}

Built BuildMemo::build(const Variant& v) {
  if (std::optional<Built> b = find(v.name())) return *b;
  return put(v.name(), jit_compile(JitRequest{v.name(), v.source(), v.arch, {}}));
}

void BuildMemo::build_all(const std::vector<Variant>& vs, Clock::time_point deadline) {
  std::vector<const Variant*> todo;
  std::set<std::string> seen;
  for (const Variant& v : vs)
    if (seen.insert(v.name()).second && !find(v.name())) todo.push_back(&v);
  if (todo.empty()) return;
  std::atomic<size_t> next{0};
  const size_t workers = std::min(todo.size(), size_t(worker_count()));
  parallel_for(workers, 1, [&](size_t b, size_t e) {  // one index per worker thread
    for (size_t w = b; w < e; ++w)
      while (Clock::now() < deadline) {
        const size_t i = next++;
        if (i >= todo.size()) break;
        put(todo[i]->name(), jit_compile(JitRequest{todo[i]->name(), todo[i]->source(), todo[i]->arch, {}}));
      }
  });
}

std::optional<Built> BuildMemo::find(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = done_.find(name);
  return it == done_.end() ? std::nullopt : std::optional<Built>(it->second);
}

Built BuildMemo::put(const std::string& name, const JitResult& r) {
  Built b{r.ok, r.error, std::max(0, r.spill_bytes)};
  std::lock_guard<std::mutex> lock(mu_);
  return done_.emplace(name, b).first->second;
}

}  // namespace ac::cuda
