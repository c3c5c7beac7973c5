// The chat REPL's KV-cache reuse on the CUDA fast path: a conversation's next turn prefilled
// from the cache the turn before left (GenerateOptions::cached_prefix) gives the logits a fresh
// prefill of the whole prompt gives, and prefills only the new tokens. The CPU backend's version
// of this check is RuntimeTest.CachedPrefixEqualsAFreshPrefill.
#ifdef AGENTCOMPILE_HAVE_CUDA
#include <gtest/gtest.h>

#include "agentcompile/ir/graph.h"
#include "agentcompile/model/model.h"
#include "agentcompile/runtime/backends.h"
#include "agentcompile/runtime/engine.h"
#include "ops/cuda_test_util.h"

namespace ac {
namespace {

// Records each step's token count and first position, and the logits of the first step (the
// prefill's last row).
struct Recording : Executor {
  explicit Recording(std::unique_ptr<Executor> e) : in(std::move(e)) {}
  std::string name() const override { return in->name(); }
  void forward(const StepBatch& b) override {
    steps.push_back(b.tokens.size());
    first_positions.push_back(b.positions.at(0));
    in->forward(b);
    if (steps.size() == 1) first_logits.assign(in->logits(), in->logits() + in->vocab_size());
  }
  const float* logits() const override { return in->logits(); }
  int64_t vocab_size() const override { return in->vocab_size(); }
  const ExecutorLimits& limits() const override { return in->limits(); }
  void reset() {
    steps.clear();
    first_positions.clear();
    first_logits.clear();
  }
  std::unique_ptr<Executor> in;
  std::vector<size_t> steps;
  std::vector<int32_t> first_positions;
  std::vector<float> first_logits;
};

TEST(CudaRuntime, CachedPrefixEqualsAFreshPrefill) {
  AC_REQUIRE_GPU();
  // Head dim 32: the fast path's (the Qwen3 fixture's 24 runs the library route).
  const auto model = load_model(fs::path(AC_TEST_FIXTURES) / "hf" / "llama_gqa2_tied_llama3");
  const Graph g = build_decoder_graph(model->config, model->weights);
  BackendOptions bo;
  bo.cuda_route = "fast";
  auto executor = [&] { return make_executor("cuda", g, ExecutorLimits{1, 64, 0}, bo); };
  GenerateOptions o;
  o.max_tokens = 6;
  o.ignore_eos = true;
  Recording chat(executor());
  const std::vector<int32_t> turn1 = {3, 1, 4, 1, 5, 9, 2, 6};
  const GenerateResult r1 = generate(chat, model->config, turn1, o, nullptr);
  // The cache holds the prompt and the reply but its last token (never fed). Turn 2 continues the
  // conversation; turn 3 leaves it inside turn 1's reply (the stale tail is overwritten).
  std::vector<int32_t> cached = turn1;
  cached.insert(cached.end(), r1.tokens.begin(), r1.tokens.end() - 1);
  std::vector<int32_t> turn2 = turn1;
  turn2.insert(turn2.end(), r1.tokens.begin(), r1.tokens.end());
  turn2.insert(turn2.end(), {8, 9, 7, 9});
  std::vector<int32_t> turn3 = turn1;
  turn3.insert(turn3.end(), {r1.tokens[0], r1.tokens[1], 42, 43});
  for (const auto& prompt : {turn2, turn3}) {
    size_t common = 0;
    while (common < cached.size() && common < prompt.size() && cached[common] == prompt[common]) ++common;
    ASSERT_GE(common, turn1.size());
    o.cached_prefix = int64_t(common);
    chat.reset();
    const GenerateResult reused = generate(chat, model->config, prompt, o, nullptr);
    EXPECT_EQ(chat.steps.at(0), prompt.size() - common) << "prefilled more than the new tokens";
    EXPECT_EQ(chat.first_positions.at(0), int32_t(common));
    o.cached_prefix = 0;
    Recording fresh(executor());
    generate(fresh, model->config, prompt, o, nullptr);
    ASSERT_EQ(chat.first_logits.size(), fresh.first_logits.size());
    const double err = test::rel_l2(chat.first_logits, fresh.first_logits);
    EXPECT_LT(err, 1e-2) << "the reused cache's prefill logits differ from a fresh prefill's";
    std::printf("[ cached prefix ] %zu of %zu prompt tokens from the cache, prefill logits rel L2 %.2e\n", common,
                prompt.size(), err);
    cached = prompt;
    cached.insert(cached.end(), reused.tokens.begin(), reused.tokens.end() - 1);
  }
}

}  // namespace
}  // namespace ac
#endif
