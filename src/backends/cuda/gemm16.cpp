#include "backends/cuda/gemm16.h"

#include <cstdint>

#include "agentcompile/core/error.h"
#include "backends/cuda/driver.h"

namespace ac::cuda {

namespace {

static_assert(sizeof(TmaMap) == sizeof(CUtensorMap) && alignof(TmaMap) == alignof(CUtensorMap),
              "params.h's TmaMap must be the driver's CUtensorMap");

// A [rows, k] row-major 16-bit matrix (row stride ld values) as boxes of 64 k x box_rows rows in the
// 128-byte swizzle: 64 16-bit values are one 128-byte row of the kernel's stage tiles, and the copy
// engine puts 16-byte chunk c of row r at chunk c ^ (r % 8), as wgmma's descriptors read them.
// Rows past `rows` arrive as zeros (the partial tiles at m and n).
TmaMap encode(const char* what, DType w, const void* base, long long rows, long long k, long long ld, int box_rows) {
  if (reinterpret_cast<std::uintptr_t>(base) % 16 != 0 || ld % 8 != 0 || k % 64 != 0 || rows < 1 || rows >= (1LL << 31))
    throw_internal(std::string("gemm.wgmma LOAD 1 ") + what,
                   "needs a 16-byte aligned matrix, a row stride of whole 16-byte units, k % 64 == 0 and 1..2^31 rows");
  TmaMap map{};
  const cuuint64_t dims[2] = {cuuint64_t(k), cuuint64_t(rows)};
  const cuuint64_t strides[1] = {cuuint64_t(ld) * 2};  // bytes between rows (the innermost stride is the element)
  const cuuint32_t box[2] = {64, cuuint32_t(box_rows)};
  const cuuint32_t elem[2] = {1, 1};
  CU_CHECK(drv().cuTensorMapEncodeTiled(reinterpret_cast<CUtensorMap*>(&map),
                                        w == DType::BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                                        2, const_cast<void*>(base), dims, strides, box, elem, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                        CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  return map;
}

// Columns of C per block: at EPI 3 a tile's BN B rows are BN / 2 gate rows and the same up rows.
int columns_per_block(const Variant& v) { return v.param("EPI") == 3 ? v.param("BN") / 2 : v.param("BN"); }
// Blocks per cluster along the rows (gemm.wgmma's CLUSTER; 1 elsewhere): each copies its share of B.
int cluster_of(const Variant& v) { return v.family->name == "wgmma" ? v.param("CLUSTER") : 1; }

}  // namespace

GemmW16Params gemm16_params(const Variant& v, DType w, const void* a, const void* b, void* c, long long m, long long n,
                            long long k, long long lda, long long ldb, long long ldc, const void* b2) {
  if ((v.param("EPI") == 3) != (b2 != nullptr))
    throw_internal(v.name(), "the up projection (b2) is given with EPI 3 and only then");
  GemmW16Params p{};
  p.a = a;
  p.b = b;
  p.c = c;
  p.m = m;
  p.n = n;
  p.k = k;
  p.lda = lda;
  p.ldb = ldb;
  p.ldc = ldc;
  p.b2 = b2;
  if (v.family->name == "wgmma" && v.param("LOAD") == 1) {
    p.ta = encode("A", w, a, m, k, lda, 128);  // AC_WGMMA_BM rows
    p.tb = encode("B", w, b, n, k, ldb, columns_per_block(v) / cluster_of(v));
    if (b2) p.tb2 = encode("B2", w, b2, n, k, ldb, columns_per_block(v) / cluster_of(v));
  }
  return p;
}

Dim3 gemm16_grid(const Variant& v, long long m, long long n, int sms) {
  const long long cols = columns_per_block(v), c = cluster_of(v);
  if (v.family->name == "wgmma" && v.param("SCHED") == 1) {
    const long long tiles = (n + cols - 1) / cols * ((m + 127) / 128);
    return Dim3{unsigned(sms > 0 && sms < tiles ? sms : tiles), 1};
  }
  // 128 rows: both families' BM; whole clusters (a pair's second block past m computes zeros and
  // stores nothing, but copies its share of B for the first).
  return Dim3{unsigned((n + cols - 1) / cols), unsigned(((m + 127) / 128 + c - 1) / c * c)};
}

int gemm16_smem(const Variant& v) {
  return v.family->name == "wgmma" ? gemm_wgmma_smem(v.param("BN"), v.param("STAGES"))
                                   : gemm_mma_smem(v.param("BN"), v.param("STAGES"));
}

std::string gemm16_shape_reason(long long k, long long n) {
  if (k % 64 != 0) return "K " + std::to_string(k) + " is not a multiple of 64";
  if (n % 8 != 0) return "N " + std::to_string(n) + " is not a multiple of 8";
  return "";
}

}  // namespace ac::cuda
