// Warp-level tensor-core helpers (mma.sync, sm_80+): bf16 packing and the m16n8k16 bf16 MMA with
// f32 accumulation. Fragment layout (g = lane / 4, t = lane % 4): A a0 (row g, k 2t..2t+1), a1
// (row g+8, same k), a2 (row g, k 2t+8..2t+9), a3 (row g+8, same); B b0 (k 2t..2t+1, col g), b1
// (k 2t+8..2t+9, col g); C c0 c1 (row g, cols 2t, 2t+1), c2 c3 (row g+8, same cols).
#pragma once

// d = {lo: bf16(a), hi: bf16(b)}, round to nearest even.
__device__ __forceinline__ unsigned pack_bf16x2(float a, float b) {
  unsigned d;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(b), "f"(a));
  return d;
}

// c += A (16x16, row-major) * B (16x8, column-major), bf16 inputs, f32 accumulators.
__device__ __forceinline__ void mma_bf16_16816(float (&c)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3,
                                               unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// Four 8x8 b16 matrices from shared memory (ldmatrix): lanes 8i..8i+7 give the row addresses of
// matrix i, and register i receives, in lane l, row l / 4, columns 2 (l % 4) and 2 (l % 4) + 1 of
// matrix i; with .trans, matrix i transposed (its rows 2 (l % 4), 2 (l % 4) + 1 at column l / 4).
__device__ __forceinline__ void ldsm_x4(unsigned (&r)[4], const void* row) {
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}
__device__ __forceinline__ void ldsm_x4_trans(unsigned (&r)[4], const void* row) {
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}
// The same from a 32-bit shared-memory address (smem_addr + byte offsets): a lane's base address
// and compile-time offsets take fewer registers than 64-bit generic pointers.
__device__ __forceinline__ unsigned smem_addr(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }
__device__ __forceinline__ void ldsm_x4_at(unsigned (&r)[4], unsigned a) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}
__device__ __forceinline__ void ldsm_x4_trans_at(unsigned (&r)[4], unsigned a) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}
