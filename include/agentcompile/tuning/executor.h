#pragma once
// What the runtime asks of a backend: run one forward step of the graph over a ragged batch and
// hand back logits. KV caches live in the backend (host or device memory); the runtime only
// tracks which slot each sequence owns and how long it is.
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ac {

struct Graph;

// Device state that executors of one graph, built one after another, may hand on instead of each
// building it again: the compile's decode-step tuning times a few hundred short generations of
// one model, each on a fresh executor, and uploading the weights was most of each one. A backend
// keeps what it built here, for `graph` under a `key` naming its layout, and takes it back when
// both match; whoever holds the share frees it. A share serves one graph at a time.
struct ExecutorShare {
  const Graph* graph = nullptr;
  std::string key;
  std::shared_ptr<void> state;
};

// One step: token i of the batch is at `positions[i]` of the sequence in cache slot `slots[i]`.
// Tokens of one slot must be consecutive and in position order; the cache of that slot must
// already hold positions [0, positions[first]) (prefill of a new sequence starts at 0).
struct StepBatch {
  std::vector<int32_t> tokens;
  std::vector<int32_t> positions;
  std::vector<int32_t> slots;
  std::vector<int32_t> logit_rows;  // indices into tokens whose logits are wanted, in order
};

struct ExecutorLimits {
  int max_slots = 1;         // concurrent sequences
  int64_t max_seq = 0;       // positions per sequence (prompt + generated)
  int64_t max_tokens = 0;    // tokens in one step (0: max_slots * max_seq)
  int64_t max_logit_rows = 0;  // logit rows in one step (0: max(max_slots, max_tokens))
  int64_t step_tokens() const { return max_tokens > 0 ? max_tokens : max_slots * max_seq; }
  int64_t logit_rows() const { return max_logit_rows > 0 ? max_logit_rows : step_tokens(); }
};

// The experts a mixture of experts' decode steps read while counted (Executor::count_expert_reads):
// over every sparse layer of every decode step, the distinct experts the step's rows picked (a
// batch reads the union of its rows' picks), and how many (layer, step) pairs that covers.
struct ExpertReads {
  int64_t layer_steps = 0, experts = 0;
  double per_layer_step() const { return layer_steps > 0 ? double(experts) / double(layer_steps) : 0.0; }
};

// The kernels of the steps run while profiled (Executor::profile_kernels), by phase and kind: time
// per step and what the kind moves per step (the bytes it reads and writes, or its FLOPs).
struct KernelKind {
  std::string phase;  // "decode" or "prompt"
  std::string kind;   // "qkv_gemv", "attention", "gemm_down", ...
  double ms_per_step = 0, bytes_per_step = 0, flops_per_step = 0, launches_per_step = 0;
};
struct KernelProfile {
  int64_t decode_steps = 0, prompt_steps = 0, prompt_tokens = 0;
  std::vector<KernelKind> kinds;
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual std::string name() const = 0;  // "cpu", "cuda"
  // Runs the step; afterwards logits() holds [batch.logit_rows.size(), vocab] f32 values.
  virtual void forward(const StepBatch& batch) = 0;
  virtual const float* logits() const = 0;
  // The greedy token of each logit row, computed where the logits live; false when the backend
  // has no such path (the runtime then reads logits()). A row with a NaN/Inf logit gives -1.
  virtual bool argmax_rows(std::vector<int32_t>& out) { return false; }
  // The k largest logits of each row with their token ids (row r in out[r * k, (r + 1) * k),
  // any order; ties go to the lower id), selected where the logits live, for top-k sampling
  // without copying the vocabulary; false when the backend has no such path or not for this k.
  // A row holding NaN or Inf has id -1 in its first entry.
  virtual bool top_k_rows(int k, std::vector<std::pair<float, int32_t>>& out) { return false; }
  virtual int64_t vocab_size() const = 0;
  virtual const ExecutorLimits& limits() const = 0;
  // Counting the experts decode steps read, from zero (on) or no longer (off); false where the
  // backend cannot (or the model has no experts). Counting may cost time: not while timing.
  virtual bool count_expert_reads(bool on) { return false; }
  virtual ExpertReads expert_reads() const { return {}; }

  // Profiling the steps kernel by kernel, from zero (on) or no longer (off); false where the
  // backend cannot. Profiled steps run launch by launch with an event between kernels: not while
  // timing.
  virtual bool profile_kernels(bool on) { return false; }
  virtual KernelProfile kernel_profile() const { return {}; }

  // Greedy decoding with the host one step behind, so that no host round trip separates two
  // steps on the device: decode_ahead(b, chained) enqueues a decode step and may return before it
  // ran; with `chained`, each row's token is not b.tokens' (only its length counts) but the greedy
  // token of the same row of the previous decode_ahead step, taken where the logits live.
  // next_greedy(out) waits for the oldest step in flight and gives its greedy tokens (-1 for a
  // row with a NaN/Inf logit). At most two steps are in flight. end_ahead() drops every step
  // in flight (their cache writes lie past what the caller keeps). Any other call may first wait
  // for the steps in flight. The default runs each step at once (forward, then argmax_rows or the
  // host's argmax); a backend whose steps are asynchronous overrides all three.
  virtual void decode_ahead(const StepBatch& batch, bool chained);
  virtual void next_greedy(std::vector<int32_t>& out);
  virtual void end_ahead();

 private:
  std::deque<std::vector<int32_t>> ahead_;  // the default's greedy tokens, oldest first
  std::vector<int32_t> ahead_last_;          // those of the last step (what a chained step feeds)
};

// Calls end_ahead when a decode-ahead loop leaves its scope, by return or by exception; a failure
// there (the device already in error) is dropped, not thrown from a destructor.
class DecodeAheadScope {
 public:
  explicit DecodeAheadScope(Executor& ex) : ex_(ex) {}
  ~DecodeAheadScope();
  DecodeAheadScope(const DecodeAheadScope&) = delete;
  DecodeAheadScope& operator=(const DecodeAheadScope&) = delete;

 private:
  Executor& ex_;
};

// Index of the largest logit (the first on ties, like torch.argmax).
int32_t argmax(const float* logits, int64_t vocab);
// The greedy token of one row of logits on the host: argmax, or -1 when any logit is NaN or
// infinite (as argmax_rows reports it).
int32_t host_greedy(const float* row, int64_t vocab);

void validate_step(const StepBatch& b, const ExecutorLimits& lim, int64_t vocab);

}  // namespace ac
