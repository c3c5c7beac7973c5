// gemm.wgmma's producer lead, shared by the kernel (gemm/wgmma.cuh) and the host test of its
// barrier protocol (tests/unit/test_wgmma_protocol.cpp). Plain C++: no CUDA in here.
#pragma once

// The stages the producer keeps in flight before it marks the oldest one full. At PIPE 1 a
// consumer releases a stage one step late (after the next stage's wgmma are issued), so the
// producer's wait to refill step kt's stage needs the consumers through step kt - STAGES + 1, which
// need that step marked full: at STAGES - 1 ahead it was marked only at step kt, after the wait
// (the first PIPE 1 run on an H100 hung). One fewer ahead breaks the cycle.
template <int STAGES, int PIPE>
struct WgmmaProducerAhead {
  static constexpr int value = STAGES - 1 - PIPE;
  static_assert(value >= 1, "PIPE 1 needs at least three stages");
};
