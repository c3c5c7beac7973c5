#pragma once
// Recorded runs of the peers (bench/peers/*.py on the GPU machine: HF transformers eager
// generate, a compiled static-cache PyTorch decode) and the references they carry. Schema in
// docs/bench.md; every field is checked, errors name the file and the field.
#include <cstdint>
#include <string>
#include <vector>

#include "agentcompile/bench/validator.h"
#include "agentcompile/core/fs.h"
#include "agentcompile/core/json.h"

namespace ac::bench {

struct PeerRun {
  std::string workload;
  int64_t prompt = 0, gen = 0, batch = 1;
  std::vector<std::vector<int32_t>> prompts;  // one per batch row
  std::vector<std::vector<int32_t>> tokens;   // generated, one per batch row
  std::vector<double> prefill_ms;             // per repeat
  std::vector<double> decode_ms;              // every decode step (batch: one step for all rows)
  double prefill_median_ms = 0, decode_median_ms = 0;
};

struct PeerFile {
  std::string path;
  std::string peer;   // "hf-eager", "torch-compiled", ...
  std::string model;  // the name runs are matched by (preset name or folder basename)
  int64_t parameters = -1;
  Json environment;
  std::vector<PeerRun> runs;
  std::vector<Reference> references;

  // The run for this shape, or nullptr.
  const PeerRun* find_run(int64_t prompt, int64_t gen, int64_t batch) const;
};

PeerFile load_peer_file(const fs::path& path);

}  // namespace ac::bench
