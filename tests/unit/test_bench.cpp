// bench library: workloads and prompts, the semantic validator (also against a recorded HF
// reference, tests/fixtures/bench), peer records, and the report writers.
#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>

#include "agentcompile/bench/peers.h"
#include "agentcompile/bench/report.h"
#include "agentcompile/bench/validator.h"
#include "agentcompile/bench/workloads.h"
#include "agentcompile/core/error.h"
#include "agentcompile/core/stats.h"
#include "agentcompile/ir/graph.h"
#include "agentcompile/model/fp8_quantize.h"
#include "agentcompile/model/model.h"
#include "agentcompile/model/synth_model.h"
#include "agentcompile/runtime/backends.h"
#include "bench/runner.h"
#include "bench/stats.h"
#include "model_test_util.h"

using namespace ac;
using namespace ac::bench;

namespace {

const fs::path kFixtures = AC_TEST_FIXTURES;

template <class F>
ErrorKind error_kind(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.kind();
  }
  return ErrorKind(0);
}

// The one median every stage uses (agentcompile/core/stats.h): middle value, mean of the middle
// two, 0 for none; unsorted input, and bench::median is the same function.
TEST(Stats, Median) {
  EXPECT_EQ(ac::median({}), 0.0);
  EXPECT_EQ(ac::median({3.0}), 3.0);
  EXPECT_EQ(ac::median({5.0, 1.0, 3.0}), 3.0);
  EXPECT_EQ(ac::median({4.0, 1.0, 3.0, 2.0}), 2.5);
  EXPECT_EQ(bench::median({2.0, 9.0}), 5.5);
}

// A layer's time in bench module is a difference of medians, reported only where it stands out:
// one sample each (--repeats 1), a negative difference, or one inside the noise is not.
TEST(Stats, MedianDifferenceSignificance) {
  MedianDifference one = median_difference({1.0}, {0.9});
  EXPECT_FALSE(one.significant);
  EXPECT_NE(one.why.find("--repeats 3"), std::string::npos) << one.why;
  MedianDifference neg = median_difference({1.0, 1.01, 0.99, 1.0}, {0.95, 0.96, 0.94, 0.95});
  EXPECT_FALSE(neg.significant);
  EXPECT_LT(neg.diff, 0);
  EXPECT_NE(neg.why.find("not positive"), std::string::npos) << neg.why;
  MedianDifference noisy = median_difference({1.0, 1.5, 0.5, 1.2, 0.8}, {1.05, 1.6, 0.4, 1.3, 0.9});
  EXPECT_FALSE(noisy.significant);
  EXPECT_NE(noisy.why.find("standard error"), std::string::npos) << noisy.why;
  MedianDifference clear = median_difference({1.0, 1.01, 0.99, 1.0, 1.02}, {2.0, 2.02, 1.98, 2.01, 2.0});
  EXPECT_TRUE(clear.significant) << clear.why;
  EXPECT_NEAR(clear.diff, 1.0, 0.02);
}

TEST(BenchWorkloads, StandardAndCustom) {
  auto w = parse_workloads("W2,W5", "--workloads");
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].prompt, 128);
  EXPECT_EQ(w[0].gen, 128);
  EXPECT_EQ(w[1].batch, 8);
  w = parse_workloads("48/40,16/8x4", "--workloads");
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].name, "48/40");
  EXPECT_EQ(w[0].prompt, 48);
  EXPECT_EQ(w[0].gen, 40);
  EXPECT_EQ(w[0].batch, 1);
  EXPECT_EQ(w[1].batch, 4);
  for (const char* bad : {"W9", "", "W1,", "12/", "0/5", "5/0", "1/2x99", "1/2x", "a/b", "1/2y3", "-1/2"})
    EXPECT_EQ(error_kind([&] { parse_workloads(bad, "--workloads"); }), ErrorKind::BadInput) << bad;
}

// The KV cache in bench e2e's floor: Qwen3-1.7B (28 layers, 8 KV heads of 128) at W2 reads K and
// V over 128 + 64 positions on average, 22 MB a step (0.6% of its 3.4 GB of weights); W3's 2048-token
// prompt makes it 242 MB; a batch reads one cache per row.
TEST(BenchWorkloads, DecodeKvBytesOfTheFloor) {
  const ModelConfig c = parse_model_config(find_synth_preset("qwen3-1.7b")->config, "qwen3-1.7b");
  const auto w = parse_workloads("W2,W3,W5", "--workloads");
  EXPECT_DOUBLE_EQ(decode_kv_bytes(c, w[0]), 28.0 * 2 * 1024 * 2 * (128 + 64));
  EXPECT_DOUBLE_EQ(decode_kv_bytes(c, w[1]), 28.0 * 2 * 1024 * 2 * (2048 + 64));
  EXPECT_DOUBLE_EQ(decode_kv_bytes(c, w[2]), 8 * decode_kv_bytes(c, w[0]));
}

// The prompt's FLOPs that bench e2e compares with the GEMM rate: Qwen3-1.7B at W3 multiplies every
// token with each layer's q, k, v, o, gate, up and down (q/k norms are not matrices), attends
// causally (2048 * 2049 / 2 pairs per head), and computes one row of logits; a batch repeats it.
// A mixture of experts counts its router and top-k experts per token.
TEST(BenchWorkloads, PrefillFlopsCountProjectionsCausalAttentionAndLogits) {
  const ModelConfig c = parse_model_config(find_synth_preset("qwen3-1.7b")->config, "qwen3-1.7b");
  const auto w = parse_workloads("W3,2048/8x4", "--workloads");
  const double h = 2048, q = 16 * 128, kv = 8 * 128, ff = 6144, p = 2048;
  const double layer = h * q + 2 * h * kv + q * h + 3 * h * ff;
  const double want = 2 * p * 28 * layer + 4 * (p * (p + 1) / 2) * q * 28 + 2 * h * 151936;
  EXPECT_NEAR(prefill_flops(c, w[0]), want, want * 1e-12);
  EXPECT_NEAR(prefill_flops(c, w[1]), 4 * want, want * 1e-12);
  EXPECT_NEAR(want / 1e12, 6.25, 0.01);  // about 6.25 TFLOP

  const ModelConfig m = parse_model_config(find_synth_preset("qwen3-30b-a3b")->config, "qwen3-30b-a3b");
  const double mh = double(m.hidden_size), mq = double(m.q_dim()), mkv = double(m.kv_dim());
  const double moe_layer = mh * mq + 2 * mh * mkv + mq * mh + mh * double(m.moe.experts) +
                           double(m.moe.experts_per_token) * 3 * mh * double(m.moe.expert_intermediate);
  const double mp = 128;
  const double moe_want = 2 * mp * double(m.num_layers) * moe_layer + 4 * (mp * (mp + 1) / 2) * mq * double(m.num_layers) +
                          2 * mh * double(m.vocab_size);
  EXPECT_NEAR(prefill_flops(m, parse_workloads("W2", "--workloads")[0]), moe_want, moe_want * 1e-12);
}

TEST(BenchWorkloads, SyntheticPromptIsFixedAndInRange) {
  const auto a = synthetic_prompt(64, 0, 1000), b = synthetic_prompt(64, 0, 1000), c = synthetic_prompt(64, 1, 1000);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  for (int32_t id : a) {
    EXPECT_GE(id, 3);
    EXPECT_LT(id, 1000);
  }
  // The ids bench/peers/common.py prints for these (tests/e2e/bench.sh checks it too).
  EXPECT_EQ(synthetic_prompt(5, 0, 1000), (std::vector<int32_t>{734, 539, 67, 426, 585}));
  EXPECT_EQ(synthetic_prompt(3, 7, 151936), (std::vector<int32_t>{55125, 144764, 143498}));
}

Reference ref_of(std::vector<int32_t> tokens, std::vector<double> margins, std::vector<int32_t> second = {}) {
  Reference r;
  r.tokens = std::move(tokens);
  r.margins = std::move(margins);
  r.second = std::move(second);
  return r;
}

TEST(BenchValidator, EqualTiesAndFailures) {
  const Reference r = ref_of({5, 6, 7, 8}, {1.0, 0.01, 2.0, 0.05}, {9, 4, 1, 2});
  Validation v = validate_tokens({5, 6, 7, 8}, r, 32, 0.1);
  EXPECT_TRUE(v.passed());
  EXPECT_EQ(v.compared, 4);
  EXPECT_EQ(v.equal, 4);
  EXPECT_NE(v.detail.find("only 4 of 32"), std::string::npos);
  // A near-tie where ours is the runner-up: accepted and counted as a tie.
  v = validate_tokens({5, 4, 7, 2}, r, 4, 0.1);
  EXPECT_TRUE(v.passed());
  EXPECT_EQ(v.equal, 2);
  EXPECT_EQ(v.ties, 2);
  // A near-tie, but ours is neither of the top two.
  v = validate_tokens({5, 3, 7, 8}, r, 4, 0.1);
  EXPECT_FALSE(v.passed());
  EXPECT_EQ(v.first_failure, 1);
  // A clear margin: any other token fails, also with a larger epsilon just below the margin.
  v = validate_tokens({5, 6, 1, 8}, r, 4, 1.99);
  EXPECT_FALSE(v.passed());
  EXPECT_EQ(v.first_failure, 2);
  EXPECT_TRUE(validate_tokens({5, 6, 1, 8}, r, 4, 2.01).passed());
  // Only the first n positions count.
  EXPECT_TRUE(validate_tokens({5, 6, 0, 0}, r, 2, 0.1).passed());
  // Without runner-up ids, a near-tie accepts any token.
  EXPECT_TRUE(validate_tokens({5, 0, 7, 8}, ref_of({5, 6, 7, 8}, {1, 0.01, 2, 2}), 4, 0.1).passed());
  EXPECT_EQ(validate_tokens({}, r, 4, 0.1).status, "fail");
}

// The CPU engine against a recorded HF reference: our teacher-forced choices pass; the same
// choices against a reference with one confident token changed fail at that position.
TEST(BenchValidator, CpuEngineAgainstRecordedHfReference) {
  const PeerFile peer = load_peer_file(kFixtures / "bench" / "qwen3_mha_untied_5x.hf-eager.peer.json");
  ASSERT_EQ(peer.references.size(), 1u);
  const Reference& ref = peer.references[0];
  auto model = load_model(kFixtures / "hf" / "qwen3_mha_untied_5x");
  const Graph g = build_decoder_graph(model->config, model->weights);
  const int64_t seq = int64_t(ref.prompt.size()) + 32;
  auto ex = make_executor("cpu", g, ExecutorLimits{2, seq, 2 * int64_t(ref.prompt.size()), 2});
  const auto ours = teacher_forced_choices(*ex, ref.prompt, ref.tokens, 32, 2);
  ASSERT_EQ(ours.size(), 2u);
  EXPECT_EQ(ours[0], ours[1]);
  const Validation v = validate_tokens(ours[0], ref, 32, 1e-3);
  EXPECT_TRUE(v.passed()) << v.detail;
  EXPECT_EQ(v.compared, 32);
  Reference bad = ref;
  size_t pos = 10;
  while (bad.margins[pos] < 0.5) ++pos;
  bad.tokens[pos] = (bad.tokens[pos] + 1) % int32_t(model->config.vocab_size);
  const Validation f = validate_tokens(ours[0], bad, 32, 1e-3);
  EXPECT_FALSE(f.passed());
  EXPECT_EQ(f.first_failure, int(pos));
}

// The reference bench e2e makes on the CPU for FP8 weights: the greedy tokens with their runner-up
// and margin; the engine on the same quantized weights passes against it at epsilon 0, and the
// same engine against the 16-bit model's reference fails (the check can tell the weights apart).
TEST(BenchValidator, CpuReferenceOfTheQuantizedWeights) {
  test::TempDir dir;
  synth_model(SynthOptions{"tiny-qwen3", dir / "m", 8, DType::BF16, {}, true});
  const std::vector<int32_t> prompt = {3, 1, 4, 1, 5, 9, 2, 6};
  const int n = 32;
  const ExecutorLimits lim{1, int64_t(prompt.size()) + n, int64_t(prompt.size()), 1};
  auto m16 = load_model(dir / "m");
  const Graph g16 = build_decoder_graph(m16->config, m16->weights);
  auto e16 = make_executor("cpu", g16, lim);
  const Reference r16 = greedy_reference(*e16, prompt, n, "16-bit");
  auto mq = load_model(dir / "m");
  quantize_model_fp8(*mq, true);
  const Graph gq = build_decoder_graph(mq->config, mq->weights);
  auto eq = make_executor("cpu", gq, lim);
  const Reference rq = greedy_reference(*eq, prompt, n, "fp8");
  ASSERT_EQ(rq.tokens.size(), size_t(n));
  ASSERT_EQ(rq.second.size(), size_t(n));
  ASSERT_EQ(rq.margins.size(), size_t(n));
  EXPECT_EQ(rq.prompt, prompt);
  for (int i = 0; i < n; ++i) {
    EXPECT_NE(rq.second[size_t(i)], rq.tokens[size_t(i)]) << i;
    EXPECT_GE(rq.margins[size_t(i)], 0.0) << i;
  }
  // Its tokens are the engine's own greedy generation.
  auto eg = make_executor("cpu", gq, lim);
  EXPECT_EQ(run_greedy(*eg, mq->config, {prompt}, n).tokens.at(0), rq.tokens);
  auto et = make_executor("cpu", gq, lim);
  const auto own = teacher_forced_choices(*et, prompt, rq.tokens, n, 1);
  const Validation pass = validate_tokens(own.at(0), rq, n, 0.0);
  EXPECT_TRUE(pass.passed()) << pass.detail;
  EXPECT_EQ(pass.equal, n);
  auto ef = make_executor("cpu", gq, lim);
  const auto other = teacher_forced_choices(*ef, prompt, r16.tokens, n, 1);
  const Validation fail = validate_tokens(other.at(0), r16, n, 0.0);
  EXPECT_FALSE(fail.passed()) << "FP8 weights chose every one of the 16-bit model's tokens";
}

// bench::run_greedy over a ragged batch (prompts of different lengths, as a server batches them):
// each row decodes at its own positions and gives exactly the tokens of that prompt alone (the
// CPU reference is deterministic). The runner once stepped every row at the first row's length.
TEST(BenchRunner, RaggedRowsDecodeLikeEachRowAlone) {
  auto model = load_model(kFixtures / "hf" / "qwen3_mha_untied_5x");
  const Graph g = build_decoder_graph(model->config, model->weights);
  const std::vector<std::vector<int32_t>> prompts = {{11, 42, 7, 99, 5, 23, 61}, {8, 3, 77, 14}, {5, 90, 31, 2, 64, 18, 40, 9, 71}};
  const int64_t gen = 10, seq = 9 + gen;
  auto batched = make_executor("cpu", g, ExecutorLimits{3, seq, 3 * seq, 3});
  const RunOut all = run_greedy(*batched, model->config, prompts, gen);
  ASSERT_EQ(all.tokens.size(), prompts.size());
  EXPECT_EQ(all.step_ms.size(), size_t(gen - 1));
  for (size_t r = 0; r < prompts.size(); ++r) {
    auto alone = make_executor("cpu", g, ExecutorLimits{1, seq, seq, 1});
    const RunOut one = run_greedy(*alone, model->config, {prompts[r]}, gen);
    ASSERT_EQ(one.tokens.size(), 1u);
    EXPECT_EQ(all.tokens[r], one.tokens[0]) << "row " << r << " (prompt of " << prompts[r].size() << ")";
  }
}

fs::path write_temp(const std::string& name, const std::string& text) {
  const fs::path p = fs::temp_directory_path() / ("ac-test-bench-" + std::to_string(::getpid()) + "-" + name);
  std::ofstream(p) << text;
  return p;
}

TEST(BenchPeers, LoadsAndRejects) {
  const std::string good = R"({"peer":"hf-eager","model":"m","parameters":12,"runs":[{"workload":"2/3","prompt":2,"gen":3,
    "batch":1,"prompts":[[4,5]],"tokens":[[1,2,3]],"prefill_ms":[3.0,5.0,4.0],"decode_ms":[1.0,2.0]}],
    "references":[{"prompt":[4,5],"tokens":[1,2],"second":[7,8],"margins":[0.5,0.25]}]})";
  const fs::path p = write_temp("good.json", good);
  const PeerFile f = load_peer_file(p);
  EXPECT_EQ(f.peer, "hf-eager");
  ASSERT_NE(f.find_run(2, 3, 1), nullptr);
  EXPECT_EQ(f.find_run(2, 3, 2), nullptr);
  EXPECT_DOUBLE_EQ(f.runs[0].prefill_median_ms, 4.0);
  EXPECT_DOUBLE_EQ(f.runs[0].decode_median_ms, 1.5);
  EXPECT_EQ(f.references[0].second, (std::vector<int32_t>{7, 8}));
  fs::remove(p);
  const std::pair<std::string, std::string> bad[] = {
      {R"({"peer":"x","runs":[]})", "model"},
      {R"({"peer":"x","model":"m","runs":[{"prompt":2,"gen":3,"batch":1,"prompts":[[4]],"tokens":[[1]],"prefill_ms":[1],"decode_ms":[1]}]})",
       "prompts"},
      {R"({"peer":"x","model":"m","runs":[{"prompt":1,"gen":3,"batch":2,"prompts":[[4]],"tokens":[[1]],"prefill_ms":[1],"decode_ms":[1]}]})",
       "rows"},
      {R"({"peer":"x","model":"m","runs":[{"prompt":1,"gen":3,"batch":1,"prompts":[[4]],"tokens":[[1]],"prefill_ms":[],"decode_ms":[1]}]})",
       "sample"},
      {R"({"peer":"x","model":"m","runs":[],"references":[{"prompt":[1],"tokens":[1,2],"margins":[0.1]}]})", "same length"},
      {R"({"peer":"x","model":"m","runs":[],"references":[{"prompt":[-1],"tokens":[1],"margins":[0.1]}]})", "token id"},
      {R"([1,2])", "object"},
      {R"({"peer":"x","model":"m","runs":[]} trailing)", ""},
  };
  for (const auto& [text, what] : bad) {
    const fs::path q = write_temp("bad.json", text);
    try {
      load_peer_file(q);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::BadInput);
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
    fs::remove(q);
  }
  EXPECT_EQ(error_kind([] { load_peer_file("/nonexistent/peer.json"); }), ErrorKind::BadInput);
}

Json e2e_report(double decode_ms, bool counted) {
  return {{"schema", kReportSchema},
          {"tier", "e2e"},
          {"created", "2026-11-30T00:00:00Z"},
          {"command", "agentcompile bench e2e"},
          {"environment", {{"engine_commit", "abc"}, {"gpu", {{"name", "H200"}, {"arch", "sm_90"}}}}},
          {"ceilings", {{"copy_GBps", 4000.0}, {"read_GBps", 4400.0}, {"gemm_tflops", 790.0}}},
          {"models", {{{"name", "m1"}, {"bytes", 2.0e9}, {"parameters", 1.0e9}}}},
          {"results",
           {{{"model", "m1"},
             {"workload", "W2"},
             {"batch", 1},
             {"backend", "cuda"},
             {"route", "fast"},
             {"prefill_ms", 10.0},
             {"decode_ms_per_token", decode_ms},
             {"request_ms", 10.0 + 127 * decode_ms},
             {"tokens_per_s", 1000.0 / decode_ms},
             {"pct_of_floor", 50.0},
             {"pct_of_read_floor", 45.5},
             {"prefill_tflops", 474.0},
             {"prefill_pct_of_gemm", 60.0},
             {"counted", counted},
             {"validation", {{"status", counted ? "pass" : "fail"}, {"equal", 32}, {"compared", 32}, {"ties", 0},
                             {"first_failure", counted ? Json(nullptr) : Json(3)}}},
             {"peers", {{"torch-compiled", {{"prefill_ms", 20.0}, {"decode_ms_per_token", 3.0}, {"request_ms", 20.0 + 127 * 3.0},
                                            {"speedup", 3.0 / decode_ms}, {"prefill_speedup", 2.0},
                                            {"request_speedup", (20.0 + 127 * 3.0) / (10.0 + 127 * decode_ms)}}},
                        {"hf-eager", {{"prefill_ms", 15.0}, {"decode_ms_per_token", 40.0}, {"request_ms", 15.0 + 127 * 40.0},
                                      {"speedup", 40.0 / decode_ms}, {"prefill_speedup", 1.5},
                                      {"request_speedup", (15.0 + 127 * 40.0) / (10.0 + 127 * decode_ms)}}}}}}}}};
}

TEST(BenchReport, MarkdownTable) {
  const std::string md = markdown_report(e2e_report(1.5, true));
  EXPECT_NE(md.find("| model | size | params | backend | workload | prefill ms (TTFT) | decode ms/token | request ms | tok/s | "
                    "vs hf-eager | vs torch-compiled | % of floor | semantic check |"),
            std::string::npos)
      << md;
  // The headline against a peer is the whole request (prefill + 127 decode steps), its parts after.
  EXPECT_NE(md.find("| m1 | 1.86 GiB | 1.00 B | cuda fast | W2 | 10.00 | 1.500 | 200.5 | 666.7 | 25.41x (TTFT 1.50x, decode "
                    "26.67x) | 2.00x (TTFT 2.00x, decode 2.00x) | 50.0% | pass 32/32 |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| m1 | W2 | torch-compiled | 20.00 | 3.000 | 401.0 | — |"), std::string::npos) << md;
  EXPECT_NE(md.find("copy 4000 GB/s (read + write), reads alone 4400 GB/s"), std::string::npos) << md;
  EXPECT_NE(md.find("reads alone streamed in this run (4400 GB/s), the floor is lower: m1 W2 45.5% of it."),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("against the cuBLAS bf16 GEMM rate measured in this run (790 TFLOP/s): m1 W2 474 TFLOP/s (60.0%)."),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("H200"), std::string::npos);
  // Not counted: no speedups, marked, explained.
  const std::string bad = markdown_report(e2e_report(1.5, false));
  EXPECT_NE(bad.find("1.500 † |"), std::string::npos) << bad;
  EXPECT_NE(bad.find("| — | — | 50.0% | FAIL at 3 |"), std::string::npos) << bad;
  EXPECT_NE(bad.find("† not counted"), std::string::npos);
  EXPECT_EQ(bad.find("the floor is lower"), std::string::npos) << bad;  // only counted rows
  EXPECT_EQ(bad.find("GEMM rate measured in this run ("), std::string::npos) << bad;
  // A run that failed: no numbers, the error in the check column.
  Json err = e2e_report(1.5, false);
  Json& row = err["results"][0];
  for (const char* k : {"prefill_ms", "decode_ms_per_token", "request_ms", "tokens_per_s", "pct_of_floor"}) row.erase(k);
  row["peers"] = Json::object();
  row["validation"] = {{"status", "error"}, {"detail", "cuda: out of memory"}};
  const std::string e = markdown_report(err);
  EXPECT_NE(e.find("| W2 | — | — † | — | — | — | ERROR: cuda: out of memory |"), std::string::npos) << e;
  // A plan timed on other kernels than the engine's: said in the header; not when it is current.
  EXPECT_EQ(md.find("other kernel sources"), std::string::npos);
  Json stale = e2e_report(1.5, true);
  stale["settings"] = {{"plan", "/p"}, {"plan_stale_kernels", 0}};
  EXPECT_EQ(markdown_report(stale).find("other kernel sources"), std::string::npos);
  stale["settings"]["plan_stale_kernels"] = 7;
  EXPECT_NE(markdown_report(stale).find("plan built from other kernel sources** (7 kernels)"), std::string::npos)
      << markdown_report(stale);
}

TEST(BenchReport, KernelsAndModuleTables) {
  Json k = {{"schema", kReportSchema}, {"tier", "kernels"}, {"created", "x"}, {"environment", Json::object()},
            {"results",
             {{{"model", "m1"},
               {"region", "o"},
               {"batch", 1},
               {"shape", "2048x2048"},
               {"routes",
                {{"fast", {{"kernel", "gemv__x"}, {"us", 2.5}, {"GBps", 3355.4}, {"pct_of_copy", 83.9}, {"pct_of_read", 79.1}, {"TFLOPs", 3.36}}},
                 {"library", {{"kernel", "cublasGemmEx"}, {"us", 9.0}, {"GBps", 932.1}, {"TFLOPs", 0.93}}}}}}}}};
  const std::string md = markdown_report(k);
  EXPECT_NE(md.find("| m1 | o | 1 | 2048x2048 | fast | gemv__x | 2.50 | 3355 | 83.9% | 79.1% | 3.36 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| m1 | o | 1 | 2048x2048 | library | cublasGemmEx | 9.00 | 932 | — | — | 0.93 |"), std::string::npos) << md;
  EXPECT_EQ(md.find("| reference |"), std::string::npos);
  Json k2 = k;
  k2["results"][0]["routes"]["fast"]["us"] = 2.0;
  EXPECT_NE(compare_markdown(k, k2, "old").find("| m1 o b1 fast | µs | 2.5 | 2 | -20.0% faster |"), std::string::npos);
  Json m = {{"schema", kReportSchema}, {"tier", "module"}, {"environment", Json::object()},
            {"results", {{{"model", "m1"}, {"phase", "decode"}, {"backend", "cuda"}, {"route", "fast"}, {"tokens", 1},
                          {"context", 128}, {"layer_ms", 0.05}, {"GBps", 2000.0}, {"pct_of_copy", 50.0}}}}};
  EXPECT_NE(markdown_report(m).find("| m1 | decode | cuda fast | 1 | 128 | 0.0500 | 2000 | 50.0% | — | — |"),
            std::string::npos)
      << markdown_report(m);
}

TEST(BenchReport, CompareAndLoad) {
  const std::string md = compare_markdown(e2e_report(2.0, true), e2e_report(1.0, true), "old.json");
  EXPECT_NE(md.find("| m1 W2 cuda fast | decode ms/token | 2 | 1 | -50.0% faster |"), std::string::npos) << md;
  EXPECT_NE(md.find("| m1 W2 cuda fast | prefill ms | 10 | 10 | +0.0% |"), std::string::npos) << md;
  Json other = e2e_report(1.0, true);
  other["results"][0]["workload"] = "W3";
  const std::string md2 = compare_markdown(e2e_report(2.0, true), other, "old.json");
  EXPECT_NE(md2.find("new |"), std::string::npos) << md2;
  EXPECT_NE(md2.find("gone |"), std::string::npos) << md2;
  Json mod = e2e_report(1.0, true);
  mod["tier"] = "module";
  EXPECT_NE(compare_markdown(e2e_report(1.0, true), mod, "x").find("not comparable"), std::string::npos);

  const fs::path p = write_temp("report.json", e2e_report(1.0, true).dump());
  EXPECT_EQ(load_report(p)["tier"], "e2e");
  fs::remove(p);
  const fs::path q = write_temp("notreport.json", R"({"tier":"e2e","results":[]})");
  EXPECT_EQ(error_kind([&] { load_report(q); }), ErrorKind::BadInput);
  fs::remove(q);
}

// A mistyped field of a saved report is a BadInput error naming it, not an exception from the
// renderer or a silent "—".
TEST(BenchReport, LoadRefusesMistypedFields) {
  const auto message = [](const Json& r) {
    const fs::path p = write_temp("typed.json", r.dump());
    std::string what;
    try {
      load_report(p);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::BadInput);
      what = e.what();
    }
    fs::remove(p);
    return what;
  };
  Json ok = e2e_report(1.0, true);
  EXPECT_EQ(message(ok), "");
  Json a = ok;
  a["results"][0]["counted"] = "yes";
  EXPECT_NE(message(a).find("results[0].counted: expected true or false, found string"), std::string::npos) << message(a);
  Json b = ok;
  b["environment"] = 3;
  EXPECT_NE(message(b).find("environment: expected an object"), std::string::npos) << message(b);
  Json c = ok;
  c["results"][0]["prefill_ms"] = "10";
  EXPECT_NE(message(c).find("results[0].prefill_ms: expected a number"), std::string::npos) << message(c);
  Json d = ok;
  d["tier"] = "module";
  d["results"][0]["layer_ms"] = Json::array();
  EXPECT_NE(message(d).find("results[0].layer_ms: expected a number, found array"), std::string::npos) << message(d);
  Json k = ok;
  k["tier"] = "kernels";
  k["results"][0]["routes"] = {{"fast", {{"us", "slow"}}}};
  EXPECT_NE(message(k).find("results[0].routes.fast.us: expected a number"), std::string::npos) << message(k);
  Json n = ok;
  n["results"][0]["prefill_ms"] = nullptr;  // null: a measurement that was not taken
  EXPECT_EQ(message(n), "");
}

}  // namespace
