// The CPU reference backend against HF transformers (tests/fixtures/hf, made on the GPU machine
// by tools/make_hf_fixtures.py, make_hf_moe_fixtures.py and make_hf_fp8_fixtures.py): dense,
// mixture-of-experts and FP8 checkpoints; teacher-forced logits within 2e-3 of the reference's scale, and
// the same 40 greedy tokens (a different token is allowed only where HF's own top-2 margin is
// below the tie epsilon, and the comparison stops there).
#include <gtest/gtest.h>

#include <cmath>

#include "agentcompile/core/json.h"
#include "agentcompile/ir/graph.h"
#include "agentcompile/model/model.h"
#include "agentcompile/runtime/backends.h"
#include "agentcompile/runtime/engine.h"
#include "unit/hf_fixture_util.h"

using namespace ac;

namespace {

class HfFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(HfFixture, CpuMatchesTransformers) {
  const fs::path dir = fs::path(AC_TEST_FIXTURES) / "hf" / GetParam();
  const test::HfExpected e = test::load_hf_expected(dir);
  auto model = load_model(dir);
  const int64_t vocab = model->config.vocab_size;
  ASSERT_EQ(e.logits.size(), e.prompt.size() * size_t(vocab));
  Graph g = build_decoder_graph(model->config, model->weights);

  // Teacher-forced logits.
  auto ex = make_executor("cpu", g, ExecutorLimits{1, int64_t(e.prompt.size() + e.greedy.size()), 0});
  auto rows = teacher_forced_logits(*ex, e.prompt);
  float scale = 0.0f, max_err = 0.0f;
  for (float v : e.logits) scale = std::max(scale, std::fabs(v));
  for (size_t t = 0; t < rows.size(); ++t)
    for (int64_t i = 0; i < vocab; ++i)
      max_err = std::max(max_err, std::fabs(rows[t][size_t(i)] - e.logits[t * size_t(vocab) + size_t(i)]));
  EXPECT_LE(max_err, 2e-3f * scale) << "max |ours - HF| = " << max_err << ", reference scale " << scale;

  // Greedy generation through the KV-cache path (a fresh executor: its cache starts empty).
  auto ex2 = make_executor("cpu", g, ExecutorLimits{1, int64_t(e.prompt.size() + e.greedy.size()), 0});
  GenerateOptions opts;
  opts.max_tokens = int64_t(e.greedy.size());
  opts.ignore_eos = true;
  GenerateResult r = generate(*ex2, model->config, e.prompt, opts, nullptr);
  ASSERT_EQ(r.tokens.size(), e.greedy.size());
  const float tie_eps = 1e-3f * scale;
  size_t agreed = 0;
  for (; agreed < e.greedy.size(); ++agreed) {
    if (r.tokens[agreed] == e.greedy[agreed]) continue;
    EXPECT_LT(e.margins[agreed], tie_eps) << "step " << agreed << ": ours " << r.tokens[agreed] << ", HF "
                                          << e.greedy[agreed] << " with margin " << e.margins[agreed];
    break;
  }
  RecordProperty("greedy_agreement", int(agreed));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, HfFixture,
                         ::testing::Values("llama_gqa2_tied_llama3", "qwen3_mha_untied_5x", "qwen2_gqa5_bias_f16",
                                           "llama_gqa5_f32_5x", "qwen3_moe_e6k2_dense1", "mixtral_e4_window20",
                                           "qwen3_fp8_block32x40", "llama_fp8_channel_ct"));

}  // namespace
