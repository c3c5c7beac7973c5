// The runtime around any executor: ragged batches, chunked prefill, stop tokens, context limits.
// Checked on the CPU backend with a fixture model; the same tests apply to other backends.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "agentcompile/core/error.h"
#include "agentcompile/ir/graph.h"
#include "agentcompile/model/model.h"
#include "agentcompile/runtime/backends.h"
#include "agentcompile/runtime/engine.h"
#include "agentcompile/runtime/sampler.h"

using namespace ac;

namespace {

struct RuntimeTest : ::testing::Test {
  void SetUp() override {
    model = load_model(fs::path(AC_TEST_FIXTURES) / "hf" / "qwen3_mha_untied_5x");
    graph = std::make_unique<Graph>(build_decoder_graph(model->config, model->weights));
  }
  std::unique_ptr<Executor> executor(int slots, int64_t seq) {
    return make_executor("cpu", *graph, ExecutorLimits{slots, seq, 0});
  }
  std::unique_ptr<Model> model;
  std::unique_ptr<Graph> graph;
};

float max_diff(const float* a, const float* b, int64_t n) {
  float m = 0;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

TEST_F(RuntimeTest, TeacherForcingInChunksEqualsOneStep) {
  const std::vector<int32_t> t = {5, 17, 99, 3, 250, 42, 7, 300, 11};
  const int64_t v = model->config.vocab_size;
  auto whole = executor(1, 16);
  const auto rows = teacher_forced_logits(*whole, t);
  for (int64_t chunk : {1, 2, 4}) {
    auto ex = make_executor("cpu", *graph, ExecutorLimits{1, 16, chunk, chunk});
    std::vector<int64_t> seen;
    teacher_forced_logits(*ex, t, chunk, [&](int64_t pos, const float* row) {
      seen.push_back(pos);
      EXPECT_LT(max_diff(row, rows[size_t(pos)].data(), v), 1e-5f) << "chunk " << chunk << " position " << pos;
    });
    EXPECT_EQ(seen, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8})) << "chunk " << chunk;
  }
}

TEST_F(RuntimeTest, RaggedBatchEqualsSeparateSequences) {
  const std::vector<int32_t> a = {5, 17, 99, 3, 250}, b = {42, 7, 300};
  const int64_t v = model->config.vocab_size;
  auto solo_a = executor(1, 16), solo_b = executor(1, 16), both = executor(2, 16);
  auto la = teacher_forced_logits(*solo_a, a);
  auto lb = teacher_forced_logits(*solo_b, b);

  StepBatch s;  // a in slot 1, b in slot 0, one step
  for (size_t i = 0; i < b.size(); ++i) { s.tokens.push_back(b[i]); s.positions.push_back(int32_t(i)); s.slots.push_back(0); }
  for (size_t i = 0; i < a.size(); ++i) { s.tokens.push_back(a[i]); s.positions.push_back(int32_t(i)); s.slots.push_back(1); }
  s.logit_rows = {2, 7};  // last of b, last of a
  both->forward(s);
  EXPECT_LT(max_diff(both->logits(), lb.back().data(), v), 1e-5f);
  EXPECT_LT(max_diff(both->logits() + v, la.back().data(), v), 1e-5f);

  // A batched decode step continues both sequences from their caches.
  StepBatch d;
  d.tokens = {11, 12};
  d.positions = {int32_t(b.size()), int32_t(a.size())};
  d.slots = {0, 1};
  d.logit_rows = {0, 1};
  both->forward(d);
  auto ea = a, eb = b;
  ea.push_back(12);
  eb.push_back(11);
  auto fa = teacher_forced_logits(*executor(1, 16), ea);
  auto fb = teacher_forced_logits(*executor(1, 16), eb);
  EXPECT_LT(max_diff(both->logits(), fb.back().data(), v), 1e-4f);
  EXPECT_LT(max_diff(both->logits() + v, fa.back().data(), v), 1e-4f);
}

TEST_F(RuntimeTest, ChunkedPrefillEqualsOneShot) {
  const std::vector<int32_t> toks = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  const int64_t v = model->config.vocab_size;
  auto whole = teacher_forced_logits(*executor(1, 16), toks);
  auto ex = executor(1, 16);
  StepBatch s1, s2;
  for (int i = 0; i < 6; ++i) { s1.tokens.push_back(toks[size_t(i)]); s1.positions.push_back(i); s1.slots.push_back(0); }
  for (int i = 6; i < 10; ++i) { s2.tokens.push_back(toks[size_t(i)]); s2.positions.push_back(i); s2.slots.push_back(0); }
  s1.logit_rows = {5};
  s2.logit_rows = {3};
  ex->forward(s1);
  EXPECT_LT(max_diff(ex->logits(), whole[5].data(), v), 1e-4f);
  ex->forward(s2);
  EXPECT_LT(max_diff(ex->logits(), whole[9].data(), v), 1e-4f);
}

TEST_F(RuntimeTest, StopsAtStopTokenUnlessIgnored) {
  const std::vector<int32_t> prompt = {3, 1, 4, 1, 5, 9, 2, 6};
  GenerateOptions o;
  o.max_tokens = 12;
  auto free_run = generate(*executor(1, 32), model->config, prompt, o, nullptr);
  ASSERT_EQ(free_run.tokens.size(), 12u);
  EXPECT_EQ(free_run.finish_reason, "length");
  // Make the 4th generated token a stop token: generation ends there, and says so.
  const int32_t stop = free_run.tokens[3];
  size_t first = 0;
  while (free_run.tokens[first] != stop) ++first;
  o.stop_ids = {stop};
  std::vector<int32_t> streamed;
  auto r = generate(*executor(1, 32), model->config, prompt, o, [&](int32_t t) { streamed.push_back(t); });
  EXPECT_EQ(r.finish_reason, "stop");
  EXPECT_EQ(r.tokens.size(), first + 1);
  EXPECT_EQ(streamed, r.tokens);
  o.ignore_eos = true;
  auto ignored = generate(*executor(1, 32), model->config, prompt, o, nullptr);
  EXPECT_EQ(ignored.tokens, free_run.tokens);
  EXPECT_EQ(ignored.finish_reason, "length");
  EXPECT_GT(r.prefill_ms, 0.0);
}

// Greedy generation runs through Executor::decode_ahead (the host one step behind the device);
// on a backend whose steps are synchronous the default runs each at once. Its tokens equal
// step-by-step forward + argmax for every length, including 1 and 2 (nothing or one step ahead).
TEST_F(RuntimeTest, GreedyDecodeAheadEqualsStepByStep) {
  const std::vector<int32_t> prompt = {3, 1, 4, 1, 5, 9, 2, 6};
  const int32_t n = int32_t(prompt.size());
  auto ex = executor(1, 32);
  StepBatch s;
  s.tokens = prompt;
  for (int32_t i = 0; i < n; ++i) s.positions.push_back(i);
  s.slots.assign(prompt.size(), 0);
  s.logit_rows = {n - 1};
  std::vector<int32_t> manual;
  ex->forward(s);
  for (int i = 0; i < 12; ++i) {
    manual.push_back(argmax(ex->logits(), ex->vocab_size()));
    s = StepBatch{{manual.back()}, {n + i}, {0}, {0}};
    ex->forward(s);
  }
  GenerateOptions o;
  o.ignore_eos = true;
  for (int64_t len : {1, 2, 3, 12}) {
    o.max_tokens = len;
    auto r = generate(*executor(1, 32), model->config, prompt, o, nullptr);
    EXPECT_EQ(r.tokens, std::vector<int32_t>(manual.begin(), manual.begin() + len)) << len;
    EXPECT_EQ(r.decode_ms.size(), size_t(len - 1));
  }
  // The interface: two steps in flight, tokens oldest first; a third is refused; end_ahead
  // forgets the chain, so a chained step after it is an error, not a wrong token.
  ex = executor(1, 32);
  s = StepBatch{prompt, {}, std::vector<int32_t>(prompt.size(), 0), {n - 1}};
  for (int32_t i = 0; i < n; ++i) s.positions.push_back(i);
  ex->forward(s);
  ex->decode_ahead(StepBatch{{manual[0]}, {n}, {0}, {0}}, false);
  ex->decode_ahead(StepBatch{{0}, {n + 1}, {0}, {0}}, true);
  EXPECT_THROW(ex->decode_ahead(StepBatch{{0}, {n + 2}, {0}, {0}}, true), Error);
  std::vector<int32_t> got;
  ex->next_greedy(got);
  EXPECT_EQ(got, std::vector<int32_t>{manual[1]});
  ex->next_greedy(got);
  EXPECT_EQ(got, std::vector<int32_t>{manual[2]});
  EXPECT_THROW(ex->next_greedy(got), Error);
  ex->end_ahead();
  EXPECT_THROW(ex->decode_ahead(StepBatch{{0}, {n + 2}, {0}, {0}}, true), Error);
}

// A conversation's next turn reuses the cache: generate with cached_prefix prefills only the
// rest of the prompt, and gives what a fresh executor prefilling the whole prompt gives (tokens,
// and the logits of the last step), for greedy and sampled replies, also when the new prompt
// leaves the cached tokens before their end (the stale tail is overwritten).
TEST_F(RuntimeTest, CachedPrefixEqualsAFreshPrefill) {
  struct Recording : Executor {  // the token count of each step
    explicit Recording(std::unique_ptr<Executor> e) : in(std::move(e)) {}
    std::string name() const override { return in->name(); }
    void forward(const StepBatch& b) override {
      steps.push_back(b.tokens.size());
      first_positions.push_back(b.positions.at(0));
      in->forward(b);
    }
    const float* logits() const override { return in->logits(); }
    int64_t vocab_size() const override { return in->vocab_size(); }
    const ExecutorLimits& limits() const override { return in->limits(); }
    std::unique_ptr<Executor> in;
    std::vector<size_t> steps;
    std::vector<int32_t> first_positions;
  };
  const int64_t v = model->config.vocab_size;
  for (float temperature : {0.0f, 0.8f}) {
    GenerateOptions o;
    o.max_tokens = 6;
    o.ignore_eos = true;
    o.sampling.temperature = temperature;
    o.sampling.seed = 7;
    Recording chat(executor(1, 64));
    // Turn 1: the cache then holds the prompt and the reply but its last token (never fed).
    const std::vector<int32_t> turn1 = {3, 1, 4, 1, 5, 9, 2, 6};
    const GenerateResult r1 = generate(chat, model->config, turn1, o, nullptr);
    std::vector<int32_t> cached = turn1;
    cached.insert(cached.end(), r1.tokens.begin(), r1.tokens.end() - 1);
    // Turn 2 continues the conversation; turn 3 leaves it inside turn 1's reply.
    std::vector<int32_t> turn2 = turn1;
    turn2.insert(turn2.end(), r1.tokens.begin(), r1.tokens.end());
    turn2.insert(turn2.end(), {8, 9, 7, 9});
    std::vector<int32_t> turn3(turn1.begin(), turn1.end());
    turn3.insert(turn3.end(), {r1.tokens[0], r1.tokens[1], 42, 43});
    for (const auto& prompt : {turn2, turn3}) {
      size_t common = 0;
      while (common < cached.size() && common < prompt.size() && cached[common] == prompt[common]) ++common;
      ASSERT_GE(common, turn1.size());
      o.cached_prefix = int64_t(common);
      chat.steps.clear();
      chat.first_positions.clear();
      const GenerateResult reused = generate(chat, model->config, prompt, o, nullptr);
      EXPECT_EQ(chat.steps.at(0), prompt.size() - common) << "prefilled more than the new tokens";
      EXPECT_EQ(chat.first_positions.at(0), int32_t(common));
      std::vector<float> reused_logits(chat.logits(), chat.logits() + v);

      o.cached_prefix = 0;
      auto fresh = executor(1, 64);
      const GenerateResult whole = generate(*fresh, model->config, prompt, o, nullptr);
      EXPECT_EQ(reused.tokens, whole.tokens) << "temperature " << temperature;
      EXPECT_LT(max_diff(reused_logits.data(), fresh->logits(), v), 1e-4f) << "temperature " << temperature;
      cached = prompt;
      cached.insert(cached.end(), reused.tokens.begin(), reused.tokens.end() - 1);
    }
  }
  // A cached prefix must leave the last prompt token to run.
  GenerateOptions bad;
  bad.cached_prefix = 3;
  EXPECT_THROW(generate(*executor(1, 64), model->config, {1, 2, 3}, bad, nullptr), Error);
}

// A greedy loop that ends by an exception (here the token callback's) leaves through
// DecodeAheadScope, which drops the steps in flight; a failure there (a device already in error)
// must not be thrown from its destructor, which would terminate the process.
TEST_F(RuntimeTest, DecodeAheadCleanupFailureDoesNotTerminate) {
  struct CleanupFails : Executor {
    explicit CleanupFails(std::unique_ptr<Executor> e) : in(std::move(e)) {}
    std::string name() const override { return in->name(); }
    void forward(const StepBatch& b) override { in->forward(b); }
    const float* logits() const override { return in->logits(); }
    int64_t vocab_size() const override { return in->vocab_size(); }
    const ExecutorLimits& limits() const override { return in->limits(); }
    void end_ahead() override {
      Executor::end_ahead();
      throw_internal("test", "cleanup failed");
    }
    std::unique_ptr<Executor> in;
  } ex(executor(1, 32));
  const std::vector<int32_t> prompt = {3, 1, 4, 1, 5, 9, 2, 6};
  GenerateOptions o;
  o.max_tokens = 8;
  o.ignore_eos = true;
  int seen = 0;
  try {
    generate(ex, model->config, prompt, o, [&](int32_t) {
      if (++seen == 3) throw std::runtime_error("output closed");
    });
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "output closed");
  }
  EXPECT_EQ(seen, 3);
  // Ending normally passes through the same scope.
  EXPECT_EQ(generate(ex, model->config, prompt, o, nullptr).tokens.size(), 8u);
}

TEST_F(RuntimeTest, RefusesPromptBeyondContext) {
  const int64_t ctx = model->config.context_limit();
  EXPECT_NO_THROW(check_context(model->config, ctx - 10, 10));
  try {
    check_context(model->config, ctx - 10, 11);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadInput);
    EXPECT_NE(std::string(e.what()).find("exceed the model's context of " + std::to_string(ctx)), std::string::npos);
  }
  EXPECT_THROW(check_context(model->config, 0, 5), Error);
}

TEST_F(RuntimeTest, RejectsTokensOutsideVocabulary) {
  auto ex = executor(1, 8);
  StepBatch s;
  s.tokens = {int32_t(model->config.vocab_size)};
  s.positions = {0};
  s.slots = {0};
  s.logit_rows = {0};
  EXPECT_THROW(ex->forward(s), Error);
}

}  // namespace
