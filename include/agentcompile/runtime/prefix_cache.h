#pragma once
// Which tokens each KV slot of an executor holds, from position 0, so that a new sequence can take
// the free slot whose cache already holds the longest prefix of its prompt and prefill only the
// rest (the executor keeps positions [0, p) of a slot until a step writes over them).
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ac {

class SlotCache {
 public:
  explicit SlotCache(int slots) : slots_(size_t(slots)) {}

  struct Pick {
    int slot = -1;        // -1: no free slot
    int64_t reused = 0;   // leading prompt tokens already in that slot's cache
  };
  // The free slot sharing the longest prefix with `prompt` (at most prompt.size() - 1 tokens: the
  // last prompt token must run to give logits), ties to the slot holding the fewest tokens (it has
  // the least to lose). Marks it busy and forgets what it held beyond the shared prefix.
  Pick acquire(const std::vector<int32_t>& prompt);
  // The slot's cache now also holds `tokens`, written after what it held.
  void append(int slot, const int32_t* tokens, size_t n);
  // Free again; what it holds stays for later prompts. `valid` false: the cache's content is
  // unknown (a failed step), so nothing of it is reused.
  void release(int slot, bool valid = true);

  int free_slots() const;
  const std::vector<int32_t>& tokens(int slot) const { return slots_[size_t(slot)].tokens; }

 private:
  struct Slot {
    std::vector<int32_t> tokens;
    bool busy = false;
  };
  std::vector<Slot> slots_;
};

}  // namespace ac
