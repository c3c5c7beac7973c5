#pragma once
// A prompt step's GEMMs through cuBLASLt: the product cublas_gemm computes, with the algorithm
// taken by rank from cuBLASLt's heuristic list for the shape (rank 0 is its first choice). The
// list is the space the compile searches for a prefill GEMM region (cuda:gemm.lt's ALGO); the plan
// records the rank, not the algorithm, because the list is the library's answer for the GPU and
// the shape the step has (a plan moves between GPUs and cuBLAS versions; a rank stays meaningful).
#include <cublasLt.h>

#include <compare>
#include <memory>
#include <string>
#include <vector>

#include "agentcompile/core/dtype.h"
#include "agentcompile/core/lru_map.h"
#include "backends/cuda/device.h"

namespace ac::cuda {

// Workspace for split-K and stream-K algorithms (cuBLAS's own default on Hopper is 32 MiB).
inline constexpr size_t kLtWorkspaceBytes = size_t(32) << 20;
// Shapes whose descriptors and heuristic list are kept: a shape includes the prompt step's token
// count, so a server sees as many as it sees prompt lengths; past this many the least recently
// used is dropped (and queried again if it comes back: tens of microseconds).
inline constexpr size_t kLtCachedShapes = 64;

// out[n, out_dim] (out_t) = x[n, in] (t) * w[out_dim, in]^T (t) + (accumulate ? out : 0), row-major.
struct LtShape {
  DType t = DType::BF16, out_t = DType::F32;
  long long n = 0, in = 0, out_dim = 0;
  bool accumulate = false;
  auto operator<=>(const LtShape&) const = default;
};

class LtGemm {
 public:
  // Keeps the first `requested` algorithms of each shape's heuristic list.
  LtGemm(CUstream s, int requested);
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  // The algorithms the heuristic offers for the shape (at most `requested`), best guess first.
  int algorithms(const LtShape& s);
  // "algo 66 tile 17 stages 21 split-k 1 (waves 0.97)": the rank-th entry, for reports.
  std::string describe(const LtShape& s, int rank);
  // The product with the rank-th algorithm; a rank past the shape's list runs the first (a plan's
  // rank, searched at one prompt length, read at another where the list is shorter).
  void run(const LtShape& s, int rank, const void* x, const void* w, void* out);

 private:
  struct Entry;
  Entry& entry(const LtShape& s);

  cublasLtHandle_t h_ = nullptr;
  CUstream stream_ = nullptr;
  int requested_ = 1;
  DeviceBuffer workspace_;
  LruMap<LtShape, std::shared_ptr<Entry>> cache_{kLtCachedShapes};
};

}  // namespace ac::cuda
