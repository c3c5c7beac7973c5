#pragma once
// What tools/make_hf_fixtures.py recorded from HF transformers for one fixture model
// (tests/fixtures/hf/<name>/expected.{json,safetensors}): the prompt, HF's greedy tokens, its
// teacher-forced logits [prompt, vocab] and its top-2 margins. Shared by the CPU and CUDA tests.
#include <cstdint>
#include <vector>

#include "agentcompile/core/dtype.h"
#include "agentcompile/core/fs.h"
#include "agentcompile/core/json.h"
#include "agentcompile/model/safetensors.h"

namespace ac::test {

struct HfExpected {
  std::vector<int32_t> prompt, greedy;
  std::vector<float> logits;  // [prompt, vocab]
  std::vector<float> margins;
};

inline HfExpected load_hf_expected(const fs::path& dir) {
  HfExpected e;
  Json j = parse_json_strict(read_file(dir / "expected.json", 1 << 20), "expected.json");
  e.prompt = j["prompt"].get<std::vector<int32_t>>();
  e.greedy = j["greedy"].get<std::vector<int32_t>>();
  SafetensorsFile f(dir / "expected.safetensors");
  for (const auto& t : f.header().tensors) {
    std::vector<float> v(size_t(t.numel()));
    for (size_t i = 0; i < v.size(); ++i) v[i] = load_as_f32(t.data, t.dtype, i);
    (t.name == "logits" ? e.logits : e.margins) = std::move(v);
  }
  return e;
}

}  // namespace ac::test
