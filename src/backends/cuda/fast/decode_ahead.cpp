// Greedy decode steps enqueued one ahead of the host, their tokens collected from pinned slots.
#include "backends/cuda/fast/executor.h"

#include <algorithm>

#include "agentcompile/core/error.h"

namespace ac::cuda {

// Decode ahead (Executor::decode_ahead): the step is enqueued with its greedy tokens (written
// over the step's token ids by the lm_head's argmax, so a chained step's embedding reads them
// there) going into one of two pinned slots, and an event; nothing waits here. With
// device_chain the argmax writes the slot itself (slot: the step's first position % 2) and a
// chained step whose inputs the device already advanced uploads nothing, so two steps' graphs
// follow each other with no copy between them; otherwise one upload before and one copy after.
void FastExecutor::decode_ahead(const StepBatch& b, bool chained) {
  if (!cfg_.decode_ahead) return Executor::decode_ahead(b, chained);
  validate_step(b, lim_, g_.config.vocab_size);
  const long long n = (long long)b.tokens.size();
  if (!is_decode_step(b)) throw_internal("decode ahead", "not a decode step");
  if (ahead_.size() >= 2) throw_internal("decode ahead", "more than two steps in flight");
  if (chained && ahead_n_ != n) throw_internal("decode ahead", "a chained step differs from the step before it");
  const int slot = cfg_.device_chain ? int(b.positions[0] & 1) : int(ahead_count_ % 2);
  ++ahead_count_;
  // A step in flight on the same slot (not the step before this one: a new sequence of the
  // same parity): its tokens are taken off the slot first.
  for (Ahead& a : ahead_)
    if (a.slot == slot && !a.stashed) {
      CU_CHECK(drv().cuEventSynchronize(ahead_done_[slot]));
      std::copy_n(host_ahead_.as<int32_t>() + slot * kMaxBatch, a.n, a.stash.begin());
      a.stashed = true;
    }
  if (!(cfg_.device_chain && chained && in_.on_device(b))) in_.upload(b, s_, chained);
  rows_in_step_ = n;
  last_positions_ = b.positions;
  logits_on_host_ = false;
  host_tokens_valid_ = false;
  decode_step_ = true;
  run_decode(n);
  if (!cfg_.device_chain)
    CU_CHECK(drv().cuMemcpyDtoHAsync(host_ahead_.as<int32_t>() + slot * kMaxBatch, CUdeviceptr(in_.tokens()), size_t(n) * 4, s_));
  CU_CHECK(drv().cuEventRecord(ahead_done_[slot], s_));
  ahead_.push_back({slot, n});
  ahead_n_ = n;
}

void FastExecutor::next_greedy(std::vector<int32_t>& out) {
  if (!cfg_.decode_ahead) return Executor::next_greedy(out);
  if (ahead_.empty()) throw_internal("decode ahead", "no step in flight");
  const Ahead a = ahead_.front();
  ahead_.pop_front();
  if (a.stashed) {
    out.assign(a.stash.begin(), a.stash.begin() + a.n);
    return;
  }
  CU_CHECK(drv().cuEventSynchronize(ahead_done_[a.slot]));
  const int32_t* t = host_ahead_.as<int32_t>() + a.slot * kMaxBatch;
  out.assign(t, t + a.n);
}

void FastExecutor::end_ahead() {
  if (!cfg_.decode_ahead) return Executor::end_ahead();
  drop_ahead();
}

// Waits for the decode-ahead steps in flight and forgets them; a later step cannot chain.
void FastExecutor::drop_ahead() {
  if (!ahead_.empty()) CU_CHECK(drv().cuStreamSynchronize(s_));
  ahead_.clear();
  ahead_n_ = 0;
}

}  // namespace ac::cuda
