#include "backends/cuda/cublaslt_route.h"

#include <algorithm>
#include <cstdio>

#include "agentcompile/core/error.h"
#include "backends/cuda/cublas_route.h"
#include "backends/cuda/cuda_libs.h"

namespace ac::cuda {

namespace {

void lt_check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw_internal("cublaslt", std::string(what) + ": " + cublaslt().cublasLtGetStatusName(s) + ": " +
                                   cublaslt().cublasLtGetStatusString(s));
}

cudaDataType_t lt_type(DType d) { return d == DType::BF16 ? CUDA_R_16BF : d == DType::F16 ? CUDA_R_16F : CUDA_R_32F; }

}  // namespace

// One shape's descriptors and heuristic list; the column-major view of cublas_gemm:
// D^T [out_dim, n] = W [out_dim, in] (W^T stored, op T) * x^T [in, n].
struct LtGemm::Entry {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  std::vector<cublasLtMatmulHeuristicResult_t> algos;
  ~Entry() {
    const CublasLtApi& lt = cublaslt();
    if (a) lt.cublasLtMatrixLayoutDestroy(a);
    if (b) lt.cublasLtMatrixLayoutDestroy(b);
    if (d) lt.cublasLtMatrixLayoutDestroy(d);
    if (op) lt.cublasLtMatmulDescDestroy(op);
  }
};

LtGemm::LtGemm(CUstream s, int requested) : stream_(s), requested_(std::max(1, requested)) {
  Device::get();
  lt_check(cublaslt().cublasLtCreate(&h_), "cublasLtCreate");
  workspace_ = DeviceBuffer(kLtWorkspaceBytes);
}

LtGemm::~LtGemm() {
  cache_ = LruMap<LtShape, std::shared_ptr<Entry>>(kLtCachedShapes);  // the descriptors before the handle
  if (h_) cublaslt().cublasLtDestroy(h_);
}

LtGemm::Entry& LtGemm::entry(const LtShape& s) {
  if (std::shared_ptr<Entry>* hit = cache_.find(s)) return **hit;
  const CublasLtApi& lt = cublaslt();
  auto e = std::make_shared<Entry>();  // its destructor frees what was made if a step throws
  const cublasComputeType_t compute = CUBLAS_COMPUTE_32F;  // f32 accumulation, no TF32
  lt_check(lt.cublasLtMatmulDescCreate(&e->op, compute, CUDA_R_32F), "cublasLtMatmulDescCreate");
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  lt_check(lt.cublasLtMatmulDescSetAttribute(e->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "TRANSA");
  lt_check(lt.cublasLtMatmulDescSetAttribute(e->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "TRANSB");
  lt_check(lt.cublasLtMatrixLayoutCreate(&e->a, lt_type(s.t), uint64_t(s.in), uint64_t(s.out_dim), int64_t(s.in)), "layout A");
  lt_check(lt.cublasLtMatrixLayoutCreate(&e->b, lt_type(s.t), uint64_t(s.in), uint64_t(s.n), int64_t(s.in)), "layout B");
  lt_check(lt.cublasLtMatrixLayoutCreate(&e->d, lt_type(s.out_t), uint64_t(s.out_dim), uint64_t(s.n), int64_t(s.out_dim)),
           "layout D");
  cublasLtMatmulPreference_t pref = nullptr;
  lt_check(lt.cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  const uint64_t ws = kLtWorkspaceBytes;
  cublasStatus_t st = lt.cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
  std::vector<cublasLtMatmulHeuristicResult_t> got(size_t(requested_), cublasLtMatmulHeuristicResult_t{});
  int count = 0;
  if (st == CUBLAS_STATUS_SUCCESS)
    st = lt.cublasLtMatmulAlgoGetHeuristic(h_, e->op, e->a, e->b, e->d, e->d, pref, requested_, got.data(), &count);
  lt.cublasLtMatmulPreferenceDestroy(pref);
  lt_check(st, "cublasLtMatmulAlgoGetHeuristic");
  for (int i = 0; i < count; ++i)
    if (got[size_t(i)].state == CUBLAS_STATUS_SUCCESS) e->algos.push_back(got[size_t(i)]);
  if (e->algos.empty())
    throw_internal("cublaslt", "no algorithm for a " + std::to_string(s.n) + "x" + std::to_string(s.in) + "x" +
                                   std::to_string(s.out_dim) + " GEMM");
  // Evicting another shape's entry is safe: no caller holds one across calls.
  return *cache_.insert(s, std::move(e));
}

int LtGemm::algorithms(const LtShape& s) { return int(entry(s).algos.size()); }

std::string LtGemm::describe(const LtShape& s, int rank) {
  const Entry& e = entry(s);
  if (rank < 0 || size_t(rank) >= e.algos.size()) return "none";
  const cublasLtMatmulAlgo_t& algo = e.algos[size_t(rank)].algo;
  auto attr = [&](cublasLtMatmulAlgoConfigAttributes_t a) {
    uint32_t v = 0;  // every attribute read here is 32 bits or less (little-endian)
    size_t written = 0;
    cublaslt().cublasLtMatmulAlgoConfigGetAttribute(&algo, a, &v, sizeof v, &written);
    return std::to_string(v);
  };
  char waves[32];
  std::snprintf(waves, sizeof waves, "%.2f", double(e.algos[size_t(rank)].wavesCount));
  return "algo " + attr(CUBLASLT_ALGO_CONFIG_ID) + " tile " + attr(CUBLASLT_ALGO_CONFIG_TILE_ID) + " stages " +
         attr(CUBLASLT_ALGO_CONFIG_STAGES_ID) + " split-k " + attr(CUBLASLT_ALGO_CONFIG_SPLITK_NUM) + " (waves " + waves + ")";
}

void LtGemm::run(const LtShape& s, int rank, const void* x, const void* w, void* out) {
  const Entry& e = entry(s);
  const cublasLtMatmulHeuristicResult_t& r = e.algos[rank >= 0 && size_t(rank) < e.algos.size() ? size_t(rank) : 0];
  const float alpha = 1.0f, beta = s.accumulate ? 1.0f : 0.0f;
  lt_check(cublaslt().cublasLtMatmul(h_, e.op, &alpha, w, e.a, x, e.b, &beta, out, e.d, out, e.d, &r.algo,
                                     reinterpret_cast<void*>(workspace_.ptr()), kLtWorkspaceBytes,
                                     reinterpret_cast<cudaStream_t>(stream_)),
           "cublasLtMatmul");
}

}  // namespace ac::cuda
