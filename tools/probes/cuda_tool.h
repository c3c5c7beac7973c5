// What the standalone measuring tools under tools/ (each built alone with nvcc) share: CK(call),
// a CUDA runtime call that must succeed (on an error: file, line, call and message, then exit 1),
// and the median event time of a batch of launches.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                                \
  do {                                                                                       \
    cudaError_t e_ = (x);                                                                    \
    if (e_ != cudaSuccess) {                                                                 \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                          \
    }                                                                                        \
  } while (0)

// The median over `reps` repeats of the event-timed time of `launches` calls launch(0 ..
// launches - 1) on stream `s` (the default stream unless given), in ms per call; the same calls
// run once before as a warm-up.
template <typename F>
float median_event_ms(F launch, int reps, int launches = 1, cudaStream_t s = 0) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  for (int i = 0; i < launches; ++i) launch(i);
  CK(cudaDeviceSynchronize());
  std::vector<float> ms;
  for (int r = 0; r < reps; ++r) {
    CK(cudaEventRecord(a, s));
    for (int i = 0; i < launches; ++i) launch(i);
    CK(cudaEventRecord(b, s));
    CK(cudaEventSynchronize(b));
    float t;
    CK(cudaEventElapsedTime(&t, a, b));
    ms.push_back(t);
  }
  CK(cudaGetLastError());
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2] / launches;
}
