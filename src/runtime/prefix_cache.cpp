#include "agentcompile/runtime/prefix_cache.h"

#include <algorithm>

namespace ac {

SlotCache::Pick SlotCache::acquire(const std::vector<int32_t>& prompt) {
  Pick best;
  size_t best_size = 0;
  const size_t cap = prompt.empty() ? 0 : prompt.size() - 1;
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = slots_[i];
    if (s.busy) continue;
    const size_t n = std::min(cap, s.tokens.size());
    const auto diff = std::mismatch(prompt.begin(), prompt.begin() + std::ptrdiff_t(n), s.tokens.begin());
    const int64_t shared = diff.first - prompt.begin();
    if (best.slot < 0 || shared > best.reused || (shared == best.reused && s.tokens.size() < best_size)) {
      best = {int(i), shared};
      best_size = s.tokens.size();
    }
  }
  if (best.slot >= 0) {
    Slot& s = slots_[size_t(best.slot)];
    s.busy = true;
    s.tokens.resize(size_t(best.reused));
  }
  return best;
}

void SlotCache::append(int slot, const int32_t* tokens, size_t n) {
  auto& t = slots_[size_t(slot)].tokens;
  t.insert(t.end(), tokens, tokens + n);
}

void SlotCache::release(int slot, bool valid) {
  Slot& s = slots_[size_t(slot)];
  s.busy = false;
  if (!valid) s.tokens.clear();
}

int SlotCache::free_slots() const {
  return int(std::count_if(slots_.begin(), slots_.end(), [](const Slot& s) { return !s.busy; }));
}

}  // namespace ac
