#pragma once
// The benchmark workloads of docs/design.md (W1-W5: prompt tokens / generated tokens x batch) and the
// synthetic prompts every runner uses, so that our engine and the peers see the same token ids.
#include <cstdint>
#include <string>
#include <vector>

#include "agentcompile/model/hf_config.h"

namespace ac::bench {

struct Workload {
  std::string name;  // "W2", or "P/GxB" for a custom one
  int64_t prompt = 0, gen = 0, batch = 1;
};

const std::vector<Workload>& standard_workloads();
// A comma list of W1..W5 and "P/G" or "P/GxB" items; BadInput naming `flag` otherwise.
std::vector<Workload> parse_workloads(const std::string& spec, const std::string& flag);

// The KV-cache bytes an average decode step of `w` reads: every row's K and V in every layer over
// its context, which grows by one per step from the prompt (prompt + gen / 2 positions on
// average), in the fast path's bf16 cache. Part of bench e2e's floor.
double decode_kv_bytes(const ModelConfig& c, const Workload& w);

// The FLOPs of `w`'s prompt step, all rows: every layer's projections per token (2 per weight; a
// sparse layer's router and its top-k experts per token), causal attention (Q K^T and P V over the
// positions each token attends, within attention_window where the model has one), and the logits
// of each row's last token. What bench e2e divides by the time to first token and compares with
// the GEMM rate it measured.
double prefill_flops(const ModelConfig& c, const Workload& w);

// Row `row` of a synthetic prompt: n ids from splitmix64 seeded with 0x5eed0000 + row, mapped into
// [3, vocab) (ids 0-2 are often special). bench/peers/common.py computes the same ids.
std::vector<int32_t> synthetic_prompt(int64_t n, int row, int64_t vocab);

}  // namespace ac::bench
