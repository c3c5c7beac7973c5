// topk.radix (kernels/cuda/sampling/topk.cuh) against the CPU's top_k_candidates: the same
// candidate set per row (ties to the lower id) over real vocabulary sizes cut into chunks (a
// short last chunk, many-way ties across chunks, counters reset for the next launch), ties at the
// threshold, negative and positive values, k from 1 to the device limit, and rows holding NaN or
// Inf flagged with id -1; then a fast-path generation sampling with top-k, its device candidates
// checked against the CPU's at every step.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "agentcompile/ir/graph.h"
#include "agentcompile/model/model.h"
#include "agentcompile/model/synth_model.h"
#include "agentcompile/runtime/engine.h"
#include "agentcompile/runtime/sampler.h"
#include "backends/cuda/family.h"
#include "backends/cuda/fast_executor.h"
#include "backends/cuda/kernel_loader.h"
#include "ops/cuda_test_util.h"

extern "C" {
#include "../../kernels/cuda/common/params.h"
}

using namespace ac;
using namespace ac::test;

namespace {

struct TopKCase {
  long long rows, vocab;
  int k, block;
  int pattern;  // 0: normal values; 1: few distinct levels (ties at the threshold); 2: all equal
};

// The CPU's order of candidates (value descending, then id): the device returns them unordered.
void sort_like_cpu(std::vector<LogitCandidate>& c) {
  std::sort(c.begin(), c.end(), [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  });
}

void PrintTo(const TopKCase& c, std::ostream* os) {
  *os << c.rows << "x" << c.vocab << " k" << c.k << " block" << c.block << " pattern" << c.pattern;
}

std::vector<float> logits_for(const TopKCase& c) {
  std::vector<float> l = random_vec(size_t(c.rows * c.vocab), 41 + uint64_t(c.vocab), 3.0f);
  if (c.pattern == 1)
    for (auto& x : l) x = std::round(x * 2.0f) / 2.0f;  // about 40 levels over the row
  if (c.pattern == 2) std::fill(l.begin(), l.end(), -1.25f);
  return l;
}

class CudaTopK : public ::testing::TestWithParam<TopKCase> {};

TEST_P(CudaTopK, SameCandidatesAsTheCpu) {
  AC_REQUIRE_GPU();
  const TopKCase c = GetParam();
  std::vector<float> l = logits_for(c);
  if (c.rows > 1) l[size_t(1 * c.vocab + c.vocab / 2)] = std::numeric_limits<float>::quiet_NaN();  // row 1
  if (c.rows > 2) l[size_t(2 * c.vocab + 3)] = -std::numeric_limits<float>::infinity();            // row 2
  auto dl = to_device(l);
  const cuda::TopKShape shape = cuda::topk_shape(c.vocab, c.k);
  const size_t parts = size_t(c.rows * shape.chunks * c.k);
  cuda::DeviceBuffer val(size_t(c.rows * c.k) * 4), idx(size_t(c.rows * c.k) * 4), pval(parts * 4), pidx(parts * 4),
      counters(size_t(2 * c.rows) * 4);
  counters.fill_u32(0u, cuda::Device::get().stream());
  TopKParams p{dl.as<float>(), val.as<float>(), idx.as<int>(), pval.as<float>(), pidx.as<int>(), counters.as<unsigned>(),
               c.rows, c.vocab, shape.chunk, c.k};
  const auto& kern = cuda::load_kernel(cuda::make_variant(cuda::find_family("topk", "radix"), {{"BLOCK", c.block}}, {},
                                                          cuda::Device::get().info().arch()));
  for (int rep = 0; rep < 2; ++rep) {  // twice: the last block of each row resets its counters
    idx.fill_u32(0x7fffffffu, cuda::Device::get().stream());  // an unwritten slot stays visible
    cuda::launch_kernel(kern, cuda::Dim3{unsigned(shape.chunks), unsigned(c.rows)}, unsigned(c.block), 0,
                        cuda::Device::get().stream(), &p);
    const auto v = to_host<float>(val, size_t(c.rows * c.k));
    const auto ix = to_host<int32_t>(idx, size_t(c.rows * c.k));
    SCOPED_TRACE("launch " + std::to_string(rep) + ", " + std::to_string(shape.chunks) + " chunks");
    for (long long r = 0; r < c.rows; ++r) {
      const bool bad = r == 1 || r == 2;
      if (bad) {
        EXPECT_EQ(ix[size_t(r * c.k)], -1) << "row " << r << " holds a non-finite logit";
        continue;
      }
      std::vector<LogitCandidate> got;
      for (int j = 0; j < c.k; ++j) got.push_back({v[size_t(r * c.k + j)], ix[size_t(r * c.k + j)]});
      sort_like_cpu(got);
      const auto want = top_k_candidates(l.data() + r * c.vocab, c.vocab, c.k);
      ASSERT_EQ(got, want) << "row " << r;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, CudaTopK,
                         ::testing::Values(TopKCase{1, 151936, 20, 1024, 0}, TopKCase{4, 128256, 50, 1024, 0},
                                           TopKCase{8, 1000, 1, 256, 0}, TopKCase{3, 5000, 1024, 512, 0},
                                           TopKCase{4, 151936, 40, 1024, 1}, TopKCase{1, 4096, 7, 256, 2},
                                           TopKCase{2, 300, 299, 256, 1}, TopKCase{3, 1001, 10, 256, 0},
                                           TopKCase{1, 7, 3, 256, 1}, TopKCase{8, 151936, 1024, 1024, 1},
                                           TopKCase{2, 40000, 5, 512, 2}));

// Wraps an executor: every top_k_rows answer is compared with the CPU's selection from the same
// step's logits (the decode's split-K atomics make logits differ in their last bits between two
// runs, so two whole generations are not compared; one generation checked step by step is).
class CheckingExecutor final : public Executor {
 public:
  explicit CheckingExecutor(Executor& inner) : in_(inner) {}
  std::string name() const override { return in_.name(); }
  void forward(const StepBatch& b) override { in_.forward(b); }
  const float* logits() const override { return in_.logits(); }
  bool argmax_rows(std::vector<int32_t>& out) override { return in_.argmax_rows(out); }
  int64_t vocab_size() const override { return in_.vocab_size(); }
  const ExecutorLimits& limits() const override { return in_.limits(); }
  bool top_k_rows(int k, std::vector<std::pair<float, int32_t>>& out) override {
    if (!in_.top_k_rows(k, out)) return false;
    std::vector<LogitCandidate> got(out.begin(), out.begin() + k);
    sort_like_cpu(got);
    checked += 1;
    if (got != top_k_candidates(in_.logits(), in_.vocab_size(), k)) mismatches += 1;
    return true;
  }
  int checked = 0, mismatches = 0;

 private:
  Executor& in_;
};

// Sampling with top-k on the fast path (through the CUDA graph): the device selects the same
// candidates as the CPU at every step, and the generation completes.
TEST(CudaTopKGenerate, DeviceCandidatesMatchTheCpuAtEveryStep) {
  AC_REQUIRE_GPU();
  const fs::path dir = fs::temp_directory_path() / "ac-topk-tiny-qwen3";
  synth_model(SynthOptions{"tiny-qwen3", dir, 5, DType::BF16, {}, true});
  auto model = load_model(dir);
  Graph g = build_decoder_graph(model->config, model->weights);
  std::vector<int32_t> prompt = {11, 2024, 7, 99, 31000, 5};
  const int64_t steps = 40, seq = int64_t(prompt.size()) + steps;
  GenerateOptions go;
  go.max_tokens = steps;
  go.ignore_eos = true;
  go.sampling = SamplingParams{0.8f, 20, 0.95f, 0.0f, 77};
  auto ex = cuda::make_fast_executor(g, ExecutorLimits{1, seq, seq, seq}, cuda::FastConfig{});
  CheckingExecutor check(*ex);
  const auto r = generate(check, model->config, prompt, go, nullptr);
  EXPECT_EQ(r.tokens.size(), size_t(steps));
  EXPECT_EQ(check.checked, int(steps));  // every token, prefill included, sampled from device candidates
  EXPECT_EQ(check.mismatches, 0);
  // Switched off, the executor declines and the host selects from the copied logits.
  cuda::FastConfig off;
  off.gpu_top_k = false;
  auto ex2 = cuda::make_fast_executor(g, ExecutorLimits{1, seq, seq, seq}, off);
  CheckingExecutor check2(*ex2);
  EXPECT_EQ(generate(check2, model->config, prompt, go, nullptr).tokens.size(), size_t(steps));
  EXPECT_EQ(check2.checked, 0);
  fs::remove_all(dir);
}

}  // namespace
