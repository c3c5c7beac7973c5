// A prompt step's projection GEMMs through cuBLASLt (cuda:gemm.lt, cublaslt_route.h): the search's
// evaluator builds, checks (sampled rows against double precision) and times cublasGemmEx and every
// rank of the heuristic list at each region's shape; and a fast-path prompt long enough to take
// the plan's ranks gives the logits it gives through cublasGemmEx, within the bf16 bound of the CPU
// reference. Skipped, with the reason, where there is no GPU.
#include <gtest/gtest.h>

#include "agentcompile/ir/graph.h"
#include "agentcompile/model/model.h"
#include "agentcompile/model/synth_model.h"
#include "agentcompile/runtime/backends.h"
#include "agentcompile/runtime/engine.h"
#include "backends/cuda/fast_config.h"
#include "backends/cuda/fast_executor.h"
#include "backends/cuda/search_eval.h"
#include "ops/cuda_test_util.h"
#include "unit/model_test_util.h"

using namespace ac;
using namespace ac::test;

namespace {

TEST(CudaPrefillGemm, EvaluatorChecksAndTimesEveryRank) {
  AC_REQUIRE_GPU();
  struct Case {
    RegionKind kind;
    long long N, K;
  };
  // Widths that are not multiples of the libraries' tiles, and 1000 rows (a partial row tile).
  for (const Case& c : {Case{RegionKind::AttnIn, 320, 192}, Case{RegionKind::AttnOut, 192, 256},
                        Case{RegionKind::MlpIn, 448, 192}, Case{RegionKind::MlpOut, 192, 448}}) {
    SCOPED_TRACE(std::string(region_kind_name(c.kind)));
    auto ev = make_prefill_gemm_evaluator(c.kind, c.N, c.K, 1000, DType::BF16);
    ev->begin(RegionTask{});
    const Candidate gemm_ex{"cuda:fallback", {}};
    ASSERT_EQ(ev->compile(gemm_ex), "");
    const CorrectnessResult base = ev->check(gemm_ex);
    ASSERT_TRUE(base.ok) << base.reason;
    EXPECT_GT(base.checks, 0);
    int built = 0;
    for (int r = 0; r < cuda::kLtAlgorithms; ++r) {
      const Candidate lt{cuda::kLtFamily, {{"ALGO", r}}};
      const std::string why = ev->compile(lt);
      if (!why.empty()) {  // the list is shorter: every later rank says so too
        EXPECT_NE(why.find("offer"), std::string::npos) << why;
        continue;
      }
      ++built;
      const CorrectnessResult ok = ev->check(lt);
      EXPECT_TRUE(ok.ok) << "rank " << r << ": " << ok.reason;
      const TimingResult t = ev->time(lt, 1, 3);
      EXPECT_TRUE(t.ok) << "rank " << r;
      EXPECT_EQ(t.samples_us.size(), 3u);
    }
    EXPECT_GE(built, 1);
  }
}

// A 600-token prompt in one step (at least kLtFromTokens): the ranks run there.
TEST(CudaPrefillGemm, LtRanksGiveThePromptsLogits) {
  AC_REQUIRE_GPU();
  TempDir tmp;
  synth_model(SynthOptions{"tiny-qwen3", tmp / "m", 5, DType::BF16, {}, true});
  auto model = load_model(tmp / "m");
  Graph g = build_decoder_graph(model->config, model->weights);
  std::vector<int32_t> prompt;
  Rng rng(23);
  for (int i = 0; i < 600; ++i) prompt.push_back(int32_t(rng.next_u64() % uint64_t(model->config.vocab_size)));
  ASSERT_GE(int64_t(prompt.size()), cuda::kLtFromTokens);
  const ExecutorLimits lim{1, 608, 600, 600};
  auto last_rows = [&](Executor& ex) {  // the last 8 positions' logits
    std::vector<float> out;
    teacher_forced_logits(ex, prompt, 600, [&](int64_t pos, const float* r) {
      if (pos >= 592) out.insert(out.end(), r, r + model->config.vocab_size);
    });
    return out;
  };
  auto cpu = make_executor("cpu", g, lim);
  const std::vector<float> want = last_rows(*cpu);
  auto base = cuda::make_fast_executor(g, lim, cuda::FastConfig{});
  const std::vector<float> ex_rows = last_rows(*base);
  EXPECT_LE(rel_l2(ex_rows, want), 1e-2);
  for (int r : {0, 1}) {
    cuda::FastConfig cfg;
    cfg.prefill_algo_qkv = cfg.prefill_algo_o = cfg.prefill_algo_gate_up = cfg.prefill_algo_down = r;
    auto lt = cuda::make_fast_executor(g, lim, cfg);
    const std::vector<float> got = last_rows(*lt);
    EXPECT_LE(rel_l2(got, want), 1e-2) << "rank " << r;
    EXPECT_LE(rel_l2(got, ex_rows), 1e-2) << "rank " << r;
  }
}

}  // namespace
