// A prompt step's projection GEMMs: the search's evaluator builds, checks (sampled rows against
// double precision) and times cublasGemmEx, every rank of cuBLASLt's heuristic list (cuda:gemm.lt,
// cublaslt_route.h) and every point of our own GEMMs at each region's shape; and a fast-path prompt
// long enough to take the plan's ranks (or the plan's own-GEMM routes, per projection) gives the
// logits it gives through cublasGemmEx, within the bf16 bound of the CPU reference. Skipped, with
// the reason, where there is no GPU.
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

// Our own GEMMs' candidates (gemm.wgmma, gemm.mma) at every point of their search parameters.
std::vector<Candidate> own_candidates() {
  std::vector<Candidate> out;
  for (int bn : {64, 128, 256})
    for (int stages : {3, 4, 5}) {
      if (bn == 256 && stages == 5) continue;  // its ring does not fit
      for (int pipe : {0, 1})
        for (int load : {0, 1})
          for (int cluster : {1, 2})
            for (int sched : {0, 1})
              // a pair shares B through the copy engine; persistent blocks copy by TMA, one tile's sums a warpgroup
              if ((cluster == 1 || load == 1) && (sched == 0 || (load == 1 && cluster == 1 && bn < 256)))
                out.push_back({"cuda:gemm.wgmma", {{"BN", bn},
                                                   {"STAGES", stages},
                                                   {"PIPE", pipe},
                                                   {"LOAD", load},
                                                   {"CLUSTER", cluster},
                                                   {"SCHED", sched}}});
      if (stages < 5 && bn < 256) out.push_back({"cuda:gemm.mma", {{"BN", bn}, {"STAGES", stages}}});
    }
  return out;
}

// Every candidate of the region: the fallback and the ranks of cuBLASLt's list, and our own GEMMs'
// points where this GPU runs them (wgmma on sm_90, mma on sm_80+), mlp_in with the SwiGLU fused
// (EPI 3) and not (EPI 0: two GEMMs and swiglu.w16): checked against double precision, timed.
TEST(CudaPrefillGemm, EvaluatorChecksAndTimesEveryRank) {
  AC_REQUIRE_GPU();
  struct Case {
    RegionKind kind;
    long long N, K;
    int epi;  // our own GEMMs' store (prefill_gemm_epi)
  };
  // Widths that are not multiples of the libraries' tiles, and 1000 rows (a partial row tile).
  for (const Case& c : {Case{RegionKind::AttnIn, 320, 192, 1}, Case{RegionKind::AttnOut, 192, 256, 2},
                        Case{RegionKind::MlpIn, 448, 192, 3}, Case{RegionKind::MlpIn, 448, 192, 0},
                        Case{RegionKind::MlpOut, 192, 448, 2}}) {
    SCOPED_TRACE(std::string(region_kind_name(c.kind)) + " EPI " + std::to_string(c.epi));
    auto ev = make_prefill_gemm_evaluator(c.kind, c.N, c.K, 1000, DType::BF16, c.epi);
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
    const std::vector<Candidate> own = own_candidates();
    ev->prepare(own, Clock::now() + std::chrono::minutes(10));
    int own_built = 0;
    for (const Candidate& o : own) {
      SCOPED_TRACE(o.name());
      const std::string why = ev->compile(o);
      if (!why.empty()) {  // only a family this GPU does not run
        EXPECT_NE(why.find("does not run on"), std::string::npos) << why;
        continue;
      }
      ++own_built;
      const CorrectnessResult ok = ev->check(o);
      EXPECT_TRUE(ok.ok) << ok.reason;
      const TimingResult t = ev->time(o, 1, 3);
      EXPECT_TRUE(t.ok);
    }
    EXPECT_GE(own_built, 4) << "every gemm.mma point runs on sm_80+";
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
