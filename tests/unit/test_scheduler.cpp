// Continuous batching on the CPU backend: requests batched together give the tokens `generate`
// gives each alone (greedy and seeded sampling), whenever they join; a long prompt is prefilled in
// chunks while the running streams get a token every step; cancellation frees the slot; the queue
// is bounded; a prompt sharing a prefix with a slot's cache prefills only the rest.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <thread>

#include "agentcompile/core/error.h"
#include "agentcompile/ir/graph.h"
#include "agentcompile/model/model.h"
#include "agentcompile/runtime/backends.h"
#include "agentcompile/runtime/engine.h"
#include "agentcompile/runtime/scheduler.h"
#include "unit/model_test_util.h"

using namespace ac;
using namespace std::chrono_literals;

namespace {

struct Done {
  std::vector<int32_t> tokens;
  std::vector<int64_t> steps;
  std::vector<double> seconds;
  std::vector<TokenLogprobs> logprobs;
  std::string reason;
};

// Everything the request produces until it finishes.
Done collect(RequestHandle& h, std::chrono::seconds limit = 60s) {
  Done d;
  const auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    RequestUpdate u = h.take(100ms);
    d.tokens.insert(d.tokens.end(), u.tokens.begin(), u.tokens.end());
    d.steps.insert(d.steps.end(), u.token_steps.begin(), u.token_steps.end());
    d.seconds.insert(d.seconds.end(), u.token_seconds.begin(), u.token_seconds.end());
    d.logprobs.insert(d.logprobs.end(), u.logprobs.begin(), u.logprobs.end());
    if (u.finished) {
      d.reason = u.finish_reason;
      return d;
    }
  }
  ADD_FAILURE() << "the request did not finish";
  return d;
}

// Waits until the request has produced at least n tokens (kept in d).
void wait_tokens(RequestHandle& h, Done& d, size_t n) {
  const auto until = std::chrono::steady_clock::now() + 60s;
  while (d.tokens.size() < n && std::chrono::steady_clock::now() < until) {
    RequestUpdate u = h.take(100ms);
    d.tokens.insert(d.tokens.end(), u.tokens.begin(), u.tokens.end());
    d.steps.insert(d.steps.end(), u.token_steps.begin(), u.token_steps.end());
    ASSERT_FALSE(u.finished) << "finished early: " << u.finish_reason;
  }
  ASSERT_GE(d.tokens.size(), n);
}

std::vector<int32_t> prompt_of(int n, int salt, int vocab) {
  std::vector<int32_t> p;
  for (int i = 0; i < n; ++i) p.push_back(int32_t((i * 37 + salt * 101 + 5) % vocab));
  return p;
}

struct SchedulerTest : ::testing::Test {
  void SetUp() override {
    model = load_model(fs::path(AC_TEST_FIXTURES) / "hf" / "qwen3_mha_untied_5x");
    graph = std::make_unique<Graph>(build_decoder_graph(model->config, model->weights));
    vocab = int(model->config.vocab_size);
  }
  std::unique_ptr<Scheduler> scheduler(SchedulerOptions o) {
    auto s = std::make_unique<Scheduler>(
        [this](const ExecutorLimits& lim) { return make_executor("cpu", *graph, lim); }, o);
    s->wait_ready();
    return s;
  }
  // What generate gives for the request alone, on a fresh one-slot executor.
  GenerateResult alone(const RequestSpec& r) {
    const int64_t n = int64_t(r.prompt.size());
    auto ex = make_executor("cpu", *graph, ExecutorLimits{1, n + r.max_tokens, n, 1});
    GenerateOptions g;
    g.max_tokens = r.max_tokens;
    g.sampling = r.sampling;
    g.stop_ids = r.stop_ids;
    return generate(*ex, model->config, r.prompt, g, nullptr);
  }
  std::unique_ptr<Model> model;
  std::unique_ptr<Graph> graph;
  int vocab = 0;
};

SamplingParams sampled(uint64_t seed) {
  SamplingParams s;
  s.temperature = 0.9f;
  s.top_k = 40;
  s.top_p = 0.95f;
  s.seed = seed;
  return s;
}

TEST_F(SchedulerTest, BatchedEqualsGenerateAlone) {
  // Five requests, three slots: two wait for a slot; prompts longer than one chunk.
  auto s = scheduler({.max_batch = 3, .max_seq = 128, .prefill_chunk = 8, .max_queue = 8});
  std::vector<RequestSpec> specs;
  for (int i = 0; i < 5; ++i) {
    RequestSpec r;
    r.prompt = prompt_of(5 + 7 * i, i, vocab);
    r.max_tokens = 10 + 3 * i;
    if (i % 2 == 1) r.sampling = sampled(uint64_t(1000 + i));
    r.stop_ids = {model->config.eos_token_ids.begin(), model->config.eos_token_ids.end()};
    specs.push_back(r);
  }
  std::vector<std::shared_ptr<RequestHandle>> hs;
  for (const auto& r : specs) hs.push_back(s->submit(r));
  for (size_t i = 0; i < specs.size(); ++i) {
    ASSERT_TRUE(hs[i]);
    const Done d = collect(*hs[i]);
    const GenerateResult g = alone(specs[i]);
    EXPECT_EQ(d.tokens, g.tokens) << "request " << i;
    EXPECT_EQ(d.reason, g.finish_reason) << "request " << i;
    EXPECT_EQ(hs[i]->stats().generated_tokens, int64_t(g.tokens.size()));
  }
  const SchedulerCounters c = s->counters();
  EXPECT_EQ(c.waiting, 0);
  EXPECT_EQ(c.running, 0);
}

// Log-probabilities are the log-softmax of the logits a teacher-forced pass gives at each
// generated position; asking for them changes no token, greedy or sampled.
TEST_F(SchedulerTest, LogprobsAreTheLogSoftmaxOfTheLogits) {
  auto s = scheduler({.max_batch = 2, .max_seq = 128, .prefill_chunk = 8, .max_queue = 4});
  RequestSpec greedy;
  greedy.prompt = prompt_of(11, 3, vocab);
  greedy.max_tokens = 6;
  greedy.logprobs = 4;
  RequestSpec samp = greedy;
  samp.sampling = sampled(7);
  samp.logprobs = 0;
  auto hg = s->submit(greedy);
  auto hs = s->submit(samp);
  ASSERT_TRUE(hg && hs);
  const Done dg = collect(*hg), ds = collect(*hs);
  EXPECT_EQ(dg.tokens, alone(greedy).tokens);
  EXPECT_EQ(ds.tokens, alone(samp).tokens);

  for (const auto& [spec, d] : {std::pair{greedy, dg}, std::pair{samp, ds}}) {
    ASSERT_EQ(d.logprobs.size(), d.tokens.size());
    // Teacher forcing: the prompt and every generated token but the last, logits at each position
    // from the prompt's last on.
    const int64_t n = int64_t(spec.prompt.size());
    auto ex = make_executor("cpu", *graph, ExecutorLimits{1, 128, 128, 128});
    StepBatch b;
    b.tokens = spec.prompt;
    b.tokens.insert(b.tokens.end(), d.tokens.begin(), d.tokens.end() - 1);
    for (size_t i = 0; i < b.tokens.size(); ++i) {
      b.positions.push_back(int32_t(i));
      b.slots.push_back(0);
      if (int64_t(i) >= n - 1) b.logit_rows.push_back(int32_t(i));
    }
    ex->forward(b);
    for (size_t t = 0; t < d.tokens.size(); ++t) {
      const float* row = ex->logits() + int64_t(t) * vocab;
      double z = 0;
      for (int v = 0; v < vocab; ++v) z += std::exp(double(row[v]));
      const auto ref = [&](int32_t id) { return double(row[id]) - std::log(z); };
      const TokenLogprobs& lp = d.logprobs[t];
      EXPECT_EQ(lp.token, d.tokens[t]);
      EXPECT_NEAR(lp.logprob, ref(d.tokens[t]), 2e-3) << "token " << t;
      ASSERT_EQ(lp.top.size(), size_t(spec.logprobs));
      for (size_t k = 0; k < lp.top.size(); ++k) {
        EXPECT_NEAR(lp.top[k].second, ref(lp.top[k].first), 2e-3);
        if (k > 0) EXPECT_GE(lp.top[k - 1].second, lp.top[k].second);
      }
      if (spec.sampling.temperature == 0.0f) EXPECT_EQ(lp.top.at(0).first, d.tokens[t]) << "greedy picks the most likely";
    }
  }
  RequestSpec too_many = greedy;
  too_many.logprobs = kMaxTopLogprobs + 1;
  EXPECT_THROW(s->submit(too_many), Error);
}

// An executor that selects each row's k largest logits "where the logits live" (here from the
// wrapped CPU executor's rows, in reverse order: any order is allowed), as the CUDA backend does,
// and counts the reads of whole rows.
class CandidateExecutor : public Executor {
 public:
  explicit CandidateExecutor(std::unique_ptr<Executor> in) : in_(std::move(in)) {}
  std::string name() const override { return in_->name(); }
  void forward(const StepBatch& b) override {
    rows_ = int64_t(b.logit_rows.size());
    in_->forward(b);
  }
  const float* logits() const override {
    ++row_reads;
    return in_->logits();
  }
  bool top_k_rows(int k, std::vector<std::pair<float, int32_t>>& out) override {
    ++top_k_calls;
    out.clear();
    for (int64_t r = 0; r < rows_; ++r) {
      auto c = top_k_candidates(in_->logits() + r * vocab_size(), vocab_size(), k);
      out.insert(out.end(), c.rbegin(), c.rend());
    }
    return true;
  }
  int64_t vocab_size() const override { return in_->vocab_size(); }
  const ExecutorLimits& limits() const override { return in_->limits(); }
  mutable std::atomic<int> row_reads{0};
  std::atomic<int> top_k_calls{0};

 private:
  std::unique_ptr<Executor> in_;
  int64_t rows_ = 0;
};

// Greedy and top-k rows draw from the backend's candidates without reading whole rows, and give
// the tokens of the whole-row path; a row sampling from the whole vocabulary reads its row.
TEST_F(SchedulerTest, TopKRowsSampleFromTheBackendsCandidates) {
  CandidateExecutor* ex = nullptr;
  Scheduler s(
      [&](const ExecutorLimits& lim) {
        auto e = std::make_unique<CandidateExecutor>(make_executor("cpu", *graph, lim));
        ex = e.get();
        return e;
      },
      {.max_batch = 3, .max_seq = 128, .prefill_chunk = 8, .max_queue = 4});
  s.wait_ready();
  std::vector<RequestSpec> specs(3);
  for (int i = 0; i < 3; ++i) {
    specs[size_t(i)].prompt = prompt_of(9 + 4 * i, 20 + i, vocab);
    specs[size_t(i)].max_tokens = 12;
  }
  specs[1].sampling = sampled(5);  // top_k 40, top_p 0.95
  specs[2].sampling = sampled(6);
  specs[2].sampling.top_k = 3;
  std::vector<std::shared_ptr<RequestHandle>> hs;
  for (const auto& r : specs) hs.push_back(s.submit(r));
  for (size_t i = 0; i < specs.size(); ++i) EXPECT_EQ(collect(*hs[i]).tokens, alone(specs[i]).tokens) << "request " << i;
  EXPECT_GT(ex->top_k_calls.load(), 0);
  EXPECT_EQ(ex->row_reads.load(), 0);

  RequestSpec whole = specs[1];
  whole.sampling.top_k = 0;
  EXPECT_EQ(collect(*s.submit(whole)).tokens, alone(whole).tokens);
  EXPECT_GT(ex->row_reads.load(), 0);
}

TEST_F(SchedulerTest, RequestJoiningMidStream) {
  auto s = scheduler({.max_batch = 2, .max_seq = 512, .prefill_chunk = 16, .max_queue = 4});
  RequestSpec a{prompt_of(6, 1, vocab), 400, sampled(7), {}};
  RequestSpec b{prompt_of(30, 2, vocab), 12, {}, {}};
  auto ha = s->submit(a);
  Done da;
  wait_tokens(*ha, da, 3);
  auto hb = s->submit(b);
  const Done db = collect(*hb);
  Done rest = collect(*ha);
  da.tokens.insert(da.tokens.end(), rest.tokens.begin(), rest.tokens.end());
  da.steps.insert(da.steps.end(), rest.steps.begin(), rest.steps.end());
  EXPECT_EQ(da.tokens, alone(a).tokens);
  EXPECT_EQ(db.tokens, alone(b).tokens);
  // b ran while a was streaming.
  ASSERT_FALSE(db.steps.empty());
  EXPECT_GT(db.steps.front(), da.steps.front());
  EXPECT_LT(db.steps.back(), da.steps.back());
}

TEST_F(SchedulerTest, LongPromptIsChunkedWhileAnotherStreams) {
  auto s = scheduler({.max_batch = 2, .max_seq = 256, .prefill_chunk = 16, .max_queue = 4});
  RequestSpec a{prompt_of(4, 3, vocab), 30, {}, {}};
  RequestSpec b{prompt_of(120, 4, vocab), 5, sampled(11), {}};  // 8 chunks of 16
  auto ha = s->submit(a);
  auto hb = s->submit(b);
  const Done da = collect(*ha), db = collect(*hb);
  EXPECT_EQ(da.tokens, alone(a).tokens);
  EXPECT_EQ(db.tokens, alone(b).tokens);
  ASSERT_EQ(da.steps.size(), 30u);
  ASSERT_FALSE(db.steps.empty());
  // a gets a token at every step, b's prefill included, which takes one step per chunk.
  for (size_t i = 1; i < da.steps.size(); ++i) EXPECT_EQ(da.steps[i], da.steps[i - 1] + 1) << i;
  EXPECT_GE(db.steps.front() - da.steps.front(), 7);
  EXPECT_LT(db.steps.front(), da.steps.back());
  const SchedulerCounters c = s->counters();
  EXPECT_EQ(c.prefilled_tokens, 124);
}

// Short prompts that arrive together share one step's prefill budget: their first tokens come
// from the same step (before, one prompt a step). A long prompt ahead of them uses the budget first.
TEST_F(SchedulerTest, PromptsArrivingTogetherArePrefilledTogether) {
  auto s = scheduler({.max_batch = 5, .max_seq = 256, .prefill_chunk = 64, .max_queue = 4});
  RequestSpec longer{prompt_of(192, 9, vocab), 4, {}, {}};  // three steps of 64
  auto hl = s->submit(longer);
  std::vector<RequestSpec> shorts;
  std::vector<std::shared_ptr<RequestHandle>> hs;
  for (int i = 0; i < 4; ++i) {
    shorts.push_back({prompt_of(5 + i, 30 + i, vocab), 6, {}, {}});
    hs.push_back(s->submit(shorts.back()));
  }
  const Done dl = collect(*hl);
  EXPECT_EQ(dl.tokens, alone(longer).tokens);
  std::vector<int64_t> first_steps;
  for (size_t i = 0; i < hs.size(); ++i) {
    const Done d = collect(*hs[i]);
    EXPECT_EQ(d.tokens, alone(shorts[i]).tokens) << "request " << i;
    ASSERT_FALSE(d.steps.empty());
    first_steps.push_back(d.steps.front());
  }
  for (int64_t st : first_steps) EXPECT_EQ(st, first_steps.front());
  EXPECT_GE(first_steps.front(), dl.steps.front()) << "the long prompt, ahead in the queue, came first";
}

TEST_F(SchedulerTest, CancellationFreesTheSlot) {
  auto s = scheduler({.max_batch = 1, .max_seq = 512, .prefill_chunk = 16, .max_queue = 4});
  RequestSpec a{prompt_of(6, 5, vocab), 450, {}, {}};
  RequestSpec b{prompt_of(9, 6, vocab), 8, {}, {}};
  auto ha = s->submit(a);
  Done da;
  wait_tokens(*ha, da, 2);
  auto hb = s->submit(b);  // waits: the only slot is a's
  auto hc = s->submit(b);  // waits too, and is cancelled while it waits
  hc->cancel();
  ha->cancel();
  const Done ra = collect(*ha);
  EXPECT_EQ(ra.reason, "cancelled");
  EXPECT_LT(da.tokens.size() + ra.tokens.size(), 450u);
  EXPECT_EQ(collect(*hc).reason, "cancelled");
  const Done db = collect(*hb);
  EXPECT_EQ(db.tokens, alone(b).tokens);
  EXPECT_EQ(db.reason, "length");
  EXPECT_EQ(hc->stats().generated_tokens, 0);
}

TEST_F(SchedulerTest, QueueIsBounded) {
  auto s = scheduler({.max_batch = 1, .max_seq = 512, .prefill_chunk = 16, .max_queue = 2});
  RequestSpec a{prompt_of(6, 5, vocab), 450, {}, {}};
  auto ha = s->submit(a);
  Done da;
  wait_tokens(*ha, da, 1);
  auto hb = s->submit(a), hc = s->submit(a);
  ASSERT_TRUE(hb && hc);
  EXPECT_EQ(s->counters().waiting, 2);
  EXPECT_EQ(s->submit(a), nullptr);  // full
  for (auto& h : {ha, hb, hc}) h->cancel();
  for (auto& h : {ha, hb, hc}) EXPECT_EQ(collect(*h).reason, "cancelled");
  EXPECT_NE(s->submit(a), nullptr);  // room again
  // Requests that cannot fit are refused before they queue.
  test::expect_bad_input([&] { s->submit(RequestSpec{prompt_of(500, 1, vocab), 13, {}, {}}); },
                         {"500 prompt tokens", "13 new tokens", "512"});
  test::expect_bad_input([&] { s->submit(RequestSpec{{}, 4, {}, {}}); }, {"empty"});
}

TEST_F(SchedulerTest, PrefixReuseGivesTheTokensOfAFreshPrefill) {
  auto s = scheduler({.max_batch = 2, .max_seq = 128, .prefill_chunk = 8, .max_queue = 4});
  RequestSpec first{prompt_of(40, 8, vocab), 6, {}, {}};
  RequestSpec second = first;
  second.prompt.resize(30);
  for (int i = 0; i < 10; ++i) second.prompt.push_back(int32_t((i * 13 + 200) % vocab));
  ASSERT_NE(second.prompt[30], first.prompt[30]);
  second.sampling = sampled(3);
  RequestSpec same = first;  // the whole prompt is cached but its last token, which must run

  auto h1 = s->submit(first);
  EXPECT_EQ(collect(*h1).tokens, alone(first).tokens);
  EXPECT_EQ(h1->stats().reused_tokens, 0);
  auto h3 = s->submit(same);
  EXPECT_EQ(collect(*h3).tokens, alone(same).tokens);
  EXPECT_EQ(h3->stats().reused_tokens, 39);
  auto h2 = s->submit(second);
  EXPECT_EQ(collect(*h2).tokens, alone(second).tokens);
  EXPECT_EQ(h2->stats().reused_tokens, 30);

  const SchedulerCounters c = s->counters();
  EXPECT_EQ(c.prefix_hits, 2);
  EXPECT_EQ(c.reused_tokens, 69);
  EXPECT_EQ(c.prefilled_tokens, 40 + 10 + 1);
}

TEST(SlotCache, TakesTheLongestSharedPrefixAmongFreeSlots) {
  SlotCache c(3);
  const std::vector<int32_t> a = {1, 2, 3, 4}, b = {1, 2, 9};
  auto p = c.acquire(a);
  EXPECT_EQ(p.slot, 0);
  EXPECT_EQ(p.reused, 0);
  c.append(0, a.data(), a.size());
  c.release(0);
  p = c.acquire(b);  // shares {1, 2} with slot 0
  EXPECT_EQ(p.slot, 0);
  EXPECT_EQ(p.reused, 2);
  EXPECT_EQ(c.tokens(0), (std::vector<int32_t>{1, 2}));
  auto q = c.acquire(a);  // slot 0 is busy: an empty one
  EXPECT_EQ(q.reused, 0);
  EXPECT_NE(q.slot, 0);
  c.release(0, /*valid=*/false);
  EXPECT_TRUE(c.tokens(0).empty());
  EXPECT_EQ(c.free_slots(), 2);
}

// With a 1,000-token shared prefix, the second request's time to first token is a small part of
// the first's: it prefills only its own tail.
TEST(SchedulerPrefix, SharedPrefixCutsTimeToFirstToken) {
  test::TempDir dir;
  test::TinyShape shape{.model_type = "llama", .hidden = 256, .intermediate = 768, .layers = 4, .heads = 4,
                        .kv_heads = 2, .head_dim = 64, .vocab = 512};
  Json cfg = test::tiny_config(shape);
  cfg["max_position_embeddings"] = 2048;
  test::write_bytes(dir / "config.json", cfg.dump());
  test::write_bytes(dir / "model.safetensors", test::st_file(test::tiny_tensors(shape, "F32")));
  auto model = load_model(dir.path());
  Graph graph = build_decoder_graph(model->config, model->weights);
  Scheduler s([&](const ExecutorLimits& lim) { return make_executor("cpu", graph, lim); },
              {.max_batch = 2, .max_seq = 1100, .prefill_chunk = 256, .max_queue = 4});
  s.wait_ready();
  std::vector<int32_t> prefix;
  for (int i = 0; i < 1000; ++i) prefix.push_back(int32_t((i * 7 + 3) % 512));
  auto with_tail = [&](int salt) {
    std::vector<int32_t> p = prefix;
    for (int i = 0; i < 8; ++i) p.push_back(int32_t((i * 11 + salt) % 512));
    return p;
  };
  auto warm = s.submit({{5, 6, 7}, 1, {}, {}});  // first-use costs land outside the measured requests
  collect(*warm);
  auto h1 = s.submit({with_tail(1), 1, {}, {}});
  const double ttft1 = collect(*h1).seconds.at(0);
  auto h2 = s.submit({with_tail(2), 1, {}, {}});
  const double ttft2 = collect(*h2).seconds.at(0);
  EXPECT_EQ(h2->stats().reused_tokens, 1000);
  EXPECT_LT(ttft2, 0.25 * ttft1) << "first " << ttft1 << " s, second " << ttft2 << " s";
}

}  // namespace
