#pragma once
// Continuous batching. One thread owns the executor and runs steps; requests wait in a bounded
// queue, take a free KV slot at a step boundary (the one whose cache shares the longest prefix
// with their prompt: only the rest is prefilled) and give it back when they stop, reach their
// token limit or are cancelled. A step carries the next token of every running request plus at
// most prefill_chunk prompt tokens (of one long prompt, or of several short ones, oldest first),
// so a long prompt holds the running streams back by one chunk at most, and requests arriving
// together are prefilled together. Each request samples with its own generator, so its tokens are the
// ones `generate` gives for it alone.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "agentcompile/runtime/logprobs.h"
#include "agentcompile/runtime/prefix_cache.h"
#include "agentcompile/runtime/sampler.h"
#include "agentcompile/tuning/executor.h"

namespace ac {

struct SchedulerOptions {
  int max_batch = 8;            // KV slots: requests running at once
  int64_t max_seq = 4096;       // positions per slot (prompt + generated)
  int64_t prefill_chunk = 256;  // prompt tokens prefilled per step (of one prompt or several)
  size_t max_queue = 64;        // requests waiting for a slot
};

struct RequestSpec {
  std::vector<int32_t> prompt;
  int64_t max_tokens = 16;  // at least 1
  SamplingParams sampling;  // with its seed
  std::vector<int64_t> stop_ids;
  // < 0: none; n >= 0: each token's log-probability and the n most likely alternatives'
  // (at most kMaxTopLogprobs). Rows that want them read the step's logits on the host.
  int logprobs = -1;
};

// What a request produced since the last take().
struct RequestUpdate {
  std::vector<int32_t> tokens;
  std::vector<double> token_seconds;  // for each token: seconds from submit() to its delivery
  std::vector<int64_t> token_steps;   // for each token: the step that computed it
  std::vector<TokenLogprobs> logprobs;  // for each token, when the request asked for them
  bool finished = false;
  std::string finish_reason;  // when finished: "stop", "length", "cancelled" or "error"
  std::string error;          // for "error"
};

struct RequestStats {
  int64_t prompt_tokens = 0;
  int64_t reused_tokens = 0;     // prompt tokens found in the slot's cache (not prefilled)
  int64_t generated_tokens = 0;
};

// The caller's end of one request; the scheduler fills it from its thread.
class RequestHandle {
 public:
  // The scheduler stops the request at its next step and frees its slot.
  void cancel() { cancelled_.store(true); }
  bool cancel_requested() const { return cancelled_.load(); }
  // What arrived since the last call, waiting up to `timeout` for something (tokens or the end).
  RequestUpdate take(std::chrono::milliseconds timeout);
  RequestStats stats() const;

 private:
  friend class Scheduler;
  using Clock = std::chrono::steady_clock;
  void deliver(int32_t token, int64_t step, const TokenLogprobs* logprobs);
  void finish(std::string reason, std::string error = "");

  std::atomic<bool> cancelled_{false};
  Clock::time_point submitted_ = Clock::now();
  mutable std::mutex mu_;
  std::condition_variable cv_;
  RequestUpdate pending_;
  bool finished_ = false;
  RequestStats stats_;
};

struct SchedulerCounters {
  int64_t waiting = 0, running = 0;  // now
  int64_t steps = 0;
  int64_t prefix_hits = 0;       // requests that reused part of a slot's cache
  int64_t reused_tokens = 0;     // prompt tokens those did not prefill
  int64_t prefilled_tokens = 0;  // prompt tokens that ran
  int64_t generated_tokens = 0;
};

// Builds the executor on the scheduler's thread (the thread that runs it).
using ExecutorFactory = std::function<std::unique_ptr<Executor>(const ExecutorLimits&)>;

class Scheduler {
 public:
  Scheduler(ExecutorFactory factory, SchedulerOptions options);
  ~Scheduler();  // cancels what is left and joins the thread
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Blocks until the executor is built; rethrows the error that building it raised.
  void wait_ready();
  // BadInput for an empty prompt, max_tokens < 1, or prompt + max_tokens beyond max_seq.
  // nullptr when the queue is full or the scheduler no longer accepts requests.
  std::shared_ptr<RequestHandle> submit(RequestSpec spec);
  // Stops accepting requests and returns when every accepted one has finished.
  void drain();
  SchedulerCounters counters() const;
  const SchedulerOptions& options() const { return opts_; }
  // What the executor is built with: max_batch slots of max_seq positions, max_batch decode
  // tokens plus one prefill chunk per step.
  static ExecutorLimits limits_for(const SchedulerOptions& o);

 private:
  struct Running;
  void run();
  void admit();
  void step();
  void finish(Running& r, const std::string& reason, const std::string& error = "");

  SchedulerOptions opts_;
  ExecutorFactory factory_;
  std::unique_ptr<Executor> ex_;

  mutable std::mutex mu_;  // guards what submit(), drain() and counters() share with the thread
  std::condition_variable cv_;
  std::deque<std::pair<std::shared_ptr<RequestHandle>, RequestSpec>> waiting_;
  bool accepting_ = true, quit_ = false, ready_ = false;
  std::exception_ptr load_error_;
  SchedulerCounters counters_;

  // The thread's own state.
  std::vector<std::unique_ptr<Running>> running_;  // in admission order
  std::unique_ptr<SlotCache> slots_;
  std::thread thread_;
};

}  // namespace ac
