#pragma once
// The heuristic advisor's CPU parameter-order rules (heuristic.cpp), exposed for unit tests. Each
// returns a permutation of `values` in the order to try.
#include <cstdint>
#include <string>
#include <vector>

namespace ac {

// Fewest threads first unless the region's roofline time is at least 400 us.
std::vector<int> heuristic_cpu_threads_order(std::vector<int> values, double roofline_us);
// 1 first when the longest input row (max_in floats) fits a 32 KiB L1, then the square tile side
// (ROWS^2 <= simd_registers), then larger values ascending, then smaller descending.
std::vector<int> heuristic_cpu_rows_order(const std::vector<int>& values, double max_in, int simd_registers);
// 1 first when the largest weight matrix (f32 bytes) fits a 1 MiB L2, then the widest tile the
// step's tokens fill, narrower, then the wasted ones.
std::vector<int> heuristic_cpu_tokens_order(const std::vector<int>& values, int64_t tokens, double max_weight_bytes);

// The CUDA prompt attention's point (cuda:attn_prefill.pipe), parameter `name`: BLOCK 128, 64,
// 256; BK largest first; QS 2, 0, 1; PAIR 1 first when the prompt's 64-row query tiles times
// `heads` exceed two blocks per SM (`sms`), else 0. Other names: empty (no rule).
std::vector<int> heuristic_prompt_attention_order(const std::string& name, const std::vector<int>& values, int64_t tokens,
                                                  int64_t heads, int sms);

// Our own prompt GEMMs' point (cuda:gemm.wgmma, cuda:gemm.mma), parameter `name`: BN largest first;
// STAGES 4 first, then the deeper, then the shallower; PIPE, LOAD and CLUSTER largest first. Other
// names: empty.
std::vector<int> heuristic_prompt_gemm_order(const std::string& name, const std::vector<int>& values);

}  // namespace ac
