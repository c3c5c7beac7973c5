// Programmatic dependent launch (sm_90): a kernel may start while the previous one finishes.
// pdl_wait() blocks until the previous grid has completed and its writes are visible, so a kernel
// issues work that does not depend on it (weight loads) first; pdl_launch_dependents() lets the
// next kernel be scheduled. Both are no-ops without PDL or below sm_90.
#pragma once
#include "common/timeline.cuh"

__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  AC_TIMELINE_WAITED();  // nothing unless the developer timeline is compiled in
}

__device__ __forceinline__ void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
