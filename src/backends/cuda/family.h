#pragma once
// Kernel template families. A family declares, in one place, the template that holds its logic
// (kernels/cuda/<op>/<file>.cuh), its parameter domains, its type parameters, and its
// constraints. A variant binds every parameter; the JIT renders only those bindings plus an
// extern "C" entry (flashinfer style), and the variant's name encodes every binding
// (rms_norm__ref__w_bf16__block256__sm90), so it doubles as a readable cache key.
#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "agentcompile/core/dtype.h"

namespace ac::cuda {

struct ParamDomain {
  std::string name;         // template parameter name, e.g. "BLOCK"
  std::vector<int> values;  // finite domain
};

struct Family {
  std::string op;             // what it computes: "rms_norm", "linear", ...
  std::string name;           // family within the op: "ref", ...
  std::string header;         // template file, relative to kernels/cuda
  std::string params_struct;  // kernel argument type (kernels/cuda/common/params.h)
  std::string device_fn;      // template function: device_fn<params..., types...>(const Params&)
  std::vector<ParamDomain> params;
  std::vector<std::string> type_params;  // typename template parameters
  std::vector<DType> type_domain = {DType::BF16, DType::F16, DType::F32};  // what they may be bound to
  std::string threads_param = "BLOCK";   // the parameter that is the block size
  bool needs_sm90a = false;              // uses wgmma/TMA features only sm_90a has
  int min_sm = 0;                        // lowest compute capability (90: thread block clusters), 0: any
  std::string cluster_dims;              // "": none; else __cluster_dims__ of the kernel, e.g. "1, CLUSTER, 1"
  // The kernel's parameters stay in parameter memory (__grid_constant__), so the kernel may take
  // their address: TMA reads its tensor maps (params.h TmaMap) from there.
  bool grid_constant = false;
  // Null, or the second __launch_bounds__ argument (blocks per SM ptxas must fit) of a point, 0 for
  // none: ptxas given only the block size aims at a full SM and may spill to get there.
  std::function<int(const std::map<std::string, int>&)> min_blocks;
  std::string description;
  // Extra constraint over the bound parameters; returns why it is invalid, "" when valid.
  std::function<std::string(const std::map<std::string, int>&)> constraint;
};

struct Variant {
  const Family* family = nullptr;
  std::map<std::string, int> values;  // one per family parameter
  std::vector<DType> types;           // one per type parameter
  std::string arch;                   // "sm_90", ...

  std::string name() const;
  // The rendered translation unit; instrumented when the developer timeline is on (timeline.h).
  std::string source() const;
  // The same with the timeline's instrumentation on or off, and `min_blocks` > 0 as the second
  // __launch_bounds__ argument instead of the family's (kernel_loader's timeline_source).
  std::string source_with(bool timeline, int min_blocks) const;
  int threads() const;
  int param(const std::string& name) const;
};

const std::vector<Family>& families();
// Throws Internal when unknown (families are code, not input).
const Family& find_family(const std::string& op, const std::string& name);

// Binds a variant; throws Internal when a value is outside its domain or a constraint fails.
Variant make_variant(const Family& f, std::map<std::string, int> values, std::vector<DType> types,
                     const std::string& arch);
// Why the variant cannot run on `arch` ("" when it can).
std::string arch_constraint(const Family& f, const std::string& arch);

// A deterministic sample of the family's space for `arch` (every type binding, parameter points
// spread over the domains), at most `max` variants; used by `kernels --compile-all`.
std::vector<Variant> sample_variants(const Family& f, const std::string& arch, size_t max);
// Number of points in the family's space (parameters x type bindings), before constraints.
size_t space_size(const Family& f);

// Blocks of `threads` threads that `registers` registers per thread let reside on one SM of
// `arch` (64K registers, allocated per warp in units of 256; 2048 threads per SM on sm_80 and
// sm_90, 1536 on the others; at most 32 blocks).
int resident_blocks_by_registers(int registers, int threads, const std::string& arch);

// Dynamic shared memory of an attn_decode.fused point: the split's K and V rows (16-byte padded)
// and its scores.
inline int attn_fused_smem_bytes(int split, int hd, int group) { return 2 * split * (hd + 8) * 2 + group * split * 4; }
// Dynamic shared memory of an attn_prefill.pipe point: two stages of BK K and V rows (16-byte padded).
inline int attn_prefill_pipe_smem(int bk, int hd) { return 2 * 2 * bk * (hd + 8) * 2; }
// Dynamic shared memory of an attn_prefill.qs point: the block's Q tile (16 * MT rows per warp),
// then attn_prefill.pipe's two stages, every row 16-byte padded.
inline int attn_prefill_qs_smem(int block, int mt, int bk, int hd) { return (16 * mt * (block / 32) + 4 * bk) * (hd + 8) * 2; }
// gemm/wgmma.cuh's gemm_wgmma_smem: the ring of STAGES (128 + BN) x 64 16-bit tiles, 1024 bytes of
// alignment slack, the barriers (STAGES full, STAGES empty, SCHED 1's two turns).
inline int gemm_wgmma_smem(int bn, int stages) { return stages * (128 + bn) * 64 * 2 + 1024 + (2 * stages + 2) * 8; }
// gemm/mma.cuh's ring: STAGES stages of (128 + BN) rows of 32 16-bit values padded to 40.
inline int gemm_mma_smem(int bn, int stages) { return stages * (128 + bn) * 40 * 2; }
// attn_o.cluster's dynamic shared memory: the attention's split (16-byte aligned), then a W_o
// tile of `rows` rows of group * hd 16-bit values padded by 8 (attention/decode_cluster_o.cuh).
inline long long attn_o_smem_bytes(int split, int hd, int group, long long rows) {
  return (attn_fused_smem_bytes(split, hd, group) + 15) / 16 * 16 + rows * (group * hd + 8) * 2;
}
// The dynamic shared memory a block may use on a GPU of `arch` ("sm_90a"): its opt-in limit
// (sm_90 and later 227 KiB, sm_80/sm_87 163 KiB, the others 99 KiB) less 16 KiB for the kernels'
// static arrays; kMaxDynamicSmem is the largest over every arch (a family's space bound).
int max_dynamic_smem(const std::string& arch);
inline constexpr int kMaxDynamicSmem = (227 - 16) * 1024;
// What attn_decode.fused's short-context splits (FastConfig::attn_split, the one the search tunes)
// may use on `arch`: at most 99 KiB on any GPU, so a plan's point runs the same on its siblings.
inline int attn_short_smem_budget(const std::string& arch) { return std::min(99 * 1024, max_dynamic_smem(arch)); }

}  // namespace ac::cuda
