#include "agentcompile/runtime/scheduler.h"

#include <algorithm>

#include "agentcompile/core/error.h"
#include "agentcompile/runtime/prefix_cache.h"

namespace ac {

// ---- the caller's end

RequestUpdate RequestHandle::take(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return !pending_.tokens.empty() || pending_.finished; });
  RequestUpdate out = std::move(pending_);
  pending_ = RequestUpdate{};  // the end is reported once
  return out;
}

RequestStats RequestHandle::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void RequestHandle::deliver(int32_t token, int64_t step, const TokenLogprobs* logprobs) {
  const double s = std::chrono::duration<double>(Clock::now() - submitted_).count();
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_.tokens.push_back(token);
    pending_.token_seconds.push_back(s);
    pending_.token_steps.push_back(step);
    if (logprobs) pending_.logprobs.push_back(*logprobs);
    ++stats_.generated_tokens;
  }
  cv_.notify_all();
}

void RequestHandle::finish(std::string reason, std::string error) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_) return;
    finished_ = true;
    pending_.finished = true;
    pending_.finish_reason = std::move(reason);
    pending_.error = std::move(error);
  }
  cv_.notify_all();
}

// ---- the scheduler

struct Scheduler::Running {
  std::shared_ptr<RequestHandle> handle;
  RequestSpec spec;
  Sampler sampler;
  int slot = -1;
  int64_t fed = 0;  // prompt tokens in the slot's cache
  std::vector<int32_t> generated;
  bool done = false;
  Running(std::shared_ptr<RequestHandle> h, RequestSpec s)
      : handle(std::move(h)), spec(std::move(s)), sampler(spec.sampling) {}
  bool prefilling() const { return fed < int64_t(spec.prompt.size()); }
};

ExecutorLimits Scheduler::limits_for(const SchedulerOptions& o) {
  return ExecutorLimits{o.max_batch, o.max_seq, o.max_batch + o.prefill_chunk, o.max_batch};
}

Scheduler::Scheduler(ExecutorFactory factory, SchedulerOptions options)
    : opts_(options), factory_(std::move(factory)) {
  if (opts_.max_batch < 1 || opts_.max_seq < 2 || opts_.prefill_chunk < 1)
    throw_internal("scheduler", "needs at least one slot, two positions and a prefill chunk of one token");
  slots_ = std::make_unique<SlotCache>(opts_.max_batch);
  thread_ = std::thread([this] { run(); });
}

Scheduler::~Scheduler() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    quit_ = true;
    accepting_ = false;
  }
  cv_.notify_all();
  thread_.join();
}

void Scheduler::wait_ready() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return ready_ || load_error_; });
  if (load_error_) std::rethrow_exception(load_error_);
}

std::shared_ptr<RequestHandle> Scheduler::submit(RequestSpec spec) {
  const int64_t n = int64_t(spec.prompt.size());
  if (n < 1) throw_input("prompt", "is empty (need at least one token)");
  if (spec.max_tokens < 1) throw_input("max_tokens", "must be at least 1");
  if (n + spec.max_tokens > opts_.max_seq)
    throw_input("prompt", std::to_string(n) + " prompt tokens + " + std::to_string(spec.max_tokens) +
                              " new tokens exceed the context of " + std::to_string(opts_.max_seq) + " positions");
  validate_sampling(spec.sampling);
  if (spec.logprobs > kMaxTopLogprobs)
    throw_input("logprobs", "at most " + std::to_string(kMaxTopLogprobs) + " alternatives, got " + std::to_string(spec.logprobs));
  auto h = std::make_shared<RequestHandle>();
  h->stats_.prompt_tokens = n;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // The queue bound counts the requests that must wait: those a free slot takes at the next
    // step boundary do not.
    const size_t free_slots = size_t(std::max<int64_t>(0, opts_.max_batch - counters_.running));
    if (!accepting_ || waiting_.size() >= opts_.max_queue + free_slots) return nullptr;
    waiting_.emplace_back(h, std::move(spec));
    counters_.waiting = int64_t(waiting_.size());
  }
  cv_.notify_all();
  return h;
}

void Scheduler::drain() {
  std::unique_lock<std::mutex> lock(mu_);
  accepting_ = false;
  cv_.wait(lock, [&] { return (waiting_.empty() && counters_.running == 0) || quit_ || load_error_; });
}

SchedulerCounters Scheduler::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counters_;
}

void Scheduler::run() {
  try {
    ex_ = factory_(limits_for(opts_));
  } catch (...) {
    std::lock_guard<std::mutex> lock(mu_);
    load_error_ = std::current_exception();
    cv_.notify_all();
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ready_ = true;
  }
  cv_.notify_all();
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return quit_ || !waiting_.empty() || !running_.empty(); });
      if (quit_) break;
      admit();
    }
    step();
    cv_.notify_all();  // drain() waits for the last request to leave
  }
  for (auto& r : running_) r->handle->finish("cancelled");
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& w : waiting_) w.first->finish("cancelled");
  waiting_.clear();
  running_.clear();
}

// Moves waiting requests into free slots (cancelled ones just leave). Called holding mu_.
void Scheduler::admit() {
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (it->first->cancel_requested()) {
      it->first->finish("cancelled");
      it = waiting_.erase(it);
      continue;
    }
    if (slots_->free_slots() == 0) break;
    auto r = std::make_unique<Running>(it->first, std::move(it->second));
    const SlotCache::Pick pick = slots_->acquire(r->spec.prompt);
    r->slot = pick.slot;
    r->fed = pick.reused;
    {
      std::lock_guard<std::mutex> hl(r->handle->mu_);
      r->handle->stats_.reused_tokens = pick.reused;
    }
    if (pick.reused > 0) {
      ++counters_.prefix_hits;
      counters_.reused_tokens += pick.reused;
    }
    running_.push_back(std::move(r));
    ++counters_.running;
    it = waiting_.erase(it);
  }
  counters_.waiting = int64_t(waiting_.size());
}

void Scheduler::finish(Running& r, const std::string& reason, const std::string& error) {
  r.done = true;
  slots_->release(r.slot, reason != "error");
  {
    std::lock_guard<std::mutex> lock(mu_);
    --counters_.running;  // before the caller hears of it: its next request may take the slot
  }
  r.handle->finish(reason, error);
}

void Scheduler::step() {
  for (auto& r : running_)
    if (r->handle->cancel_requested()) finish(*r, "cancelled");
  std::erase_if(running_, [](const auto& r) { return r->done; });

  // Every running request's next token.
  StepBatch b;
  std::vector<Running*> rows;  // the request of each logit row
  for (auto& r : running_) {
    if (r->prefilling()) continue;
    b.tokens.push_back(r->generated.back());
    b.positions.push_back(int32_t(r->spec.prompt.size() + r->generated.size() - 1));
    b.slots.push_back(r->slot);
    b.logit_rows.push_back(int32_t(b.tokens.size() - 1));
    rows.push_back(r.get());
  }
  // Then prompt tokens, at most prefill_chunk of them, from the prompts still prefilling in
  // admission order: a long prompt takes the whole budget a step; short ones share it.
  std::vector<std::pair<Running*, int64_t>> chunks;  // the request, the prompt tokens it feeds
  int64_t budget = opts_.prefill_chunk;
  for (auto& r : running_) {
    if (!r->prefilling() || budget == 0) continue;
    const int64_t n = int64_t(r->spec.prompt.size());
    const int64_t end = std::min(n, r->fed + budget);
    for (int64_t i = r->fed; i < end; ++i) {
      b.tokens.push_back(r->spec.prompt[size_t(i)]);
      b.positions.push_back(int32_t(i));
      b.slots.push_back(r->slot);
    }
    chunks.emplace_back(r.get(), end - r->fed);
    budget -= end - r->fed;
    if (end == n) {
      b.logit_rows.push_back(int32_t(b.tokens.size() - 1));
      rows.push_back(r.get());
    }
  }
  if (b.tokens.empty()) return;

  int64_t step_no = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    step_no = counters_.steps++;
  }
  try {
    ex_->forward(b);
  } catch (const std::exception& e) {
    for (auto& r : running_) finish(*r, "error", e.what());
    running_.clear();
    return;
  }
  // What each slot's cache now holds.
  for (size_t i = 0; i < b.tokens.size(); ++i) slots_->append(b.slots[i], &b.tokens[i], 1);
  int64_t prefilled = 0;
  for (auto& [r, n] : chunks) {
    r->fed += n;
    prefilled += n;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    counters_.prefilled_tokens += prefilled;
  }

  // Greedy rows take the backend's argmax where it has one (no logits copy), as generate does,
  // unless a row wants log-probabilities, which need its logits.
  const bool all_greedy = std::all_of(rows.begin(), rows.end(), [](const Running* r) {
    return r->spec.sampling.temperature == 0.0f && r->spec.logprobs < 0;
  });
  std::vector<int32_t> picked;
  const bool have_picked = all_greedy && ex_->argmax_rows(picked);
  const int64_t vocab = ex_->vocab_size();
  // Else, when every row is greedy (its top 1) or samples among its top k, the backend may select
  // the K largest logits of each row where they live, which spares copying whole rows.
  const auto k_of = [](const SamplingParams& sp) { return sp.temperature == 0.0f ? 1 : sp.top_k; };
  int K = 0;
  bool all_top_k = !have_picked;
  for (const Running* r : rows) {
    if (r->spec.logprobs >= 0 || k_of(r->spec.sampling) <= 0) all_top_k = false;
    else K = std::max(K, k_of(r->spec.sampling));
  }
  std::vector<LogitCandidate> cands;
  const bool have_cands = all_top_k && K > 0 && K < vocab && ex_->top_k_rows(K, cands);
  int64_t generated = 0;
  for (size_t row = 0; row < rows.size(); ++row) {
    Running& r = *rows[row];
    int32_t tok = -1;
    TokenLogprobs lp;
    try {
      if (have_picked) {
        tok = picked.at(row);
        if (tok < 0) throw_internal("sampler", "the logits hold NaN or Inf; generation stopped");
      } else if (have_cands) {
        const auto first = cands.begin() + std::ptrdiff_t(row) * K;
        if (first->second < 0) throw_internal("sampler", "the logits hold NaN or Inf; generation stopped");
        std::vector<LogitCandidate> mine = best_candidates({first, first + K}, k_of(r.spec.sampling));
        tok = r.spec.sampling.temperature == 0.0f ? mine.at(0).second : r.sampler.sample_candidates(std::move(mine));
      } else {
        tok = r.sampler.sample(ex_->logits() + int64_t(row) * vocab, vocab);
      }
      if (r.spec.logprobs >= 0)
        lp = token_logprobs(ex_->logits() + int64_t(row) * vocab, vocab, tok, int(std::min<int64_t>(r.spec.logprobs, vocab)));
    } catch (const std::exception& e) {
      finish(r, "error", e.what());
      continue;
    }
    r.generated.push_back(tok);
    r.handle->deliver(tok, step_no, r.spec.logprobs >= 0 ? &lp : nullptr);
    ++generated;
    const bool stop = std::find(r.spec.stop_ids.begin(), r.spec.stop_ids.end(), int64_t(tok)) != r.spec.stop_ids.end();
    if (stop) finish(r, "stop");
    else if (int64_t(r.generated.size()) >= r.spec.max_tokens) finish(r, "length");
  }
  std::erase_if(running_, [](const auto& r) { return r->done; });
  std::lock_guard<std::mutex> lock(mu_);
  counters_.generated_tokens += generated;
}

}  // namespace ac
