// kernel_sweep's timing: a CUDA graph of back-to-back launches, median of replays.
#pragma once
#include <algorithm>
#include <string>
#include <vector>

#include "backends/cuda/device.h"

namespace ac::cuda {

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Timed {
  bool ok = false;
  std::string why;
  double us = 0;
};

// Times `launch(copy)` as a graph of kLaunches launches rotating over `copies` buffers.
template <class Launch>
inline Timed time_graph(int copies, Launch launch) {
  constexpr int kLaunches = 24, kReplays = 7;
  CUstream s = Device::get().stream();
  Timed t;
  for (int i = 0; i < 3; ++i) launch(i % copies);  // warm-up (also loads the module)
  Device::get().synchronize();
  CUgraph g;
  CU_CHECK(drv().cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  for (int i = 0; i < kLaunches; ++i) launch(i % copies);
  CU_CHECK(drv().cuStreamEndCapture(s, &g));
  CUgraphExec exec;
  CU_CHECK(drv().cuGraphInstantiateWithFlags(&exec, g, 0));
  std::vector<double> ms;
  EventTimer timer;
  for (int r = 0; r < kReplays + 1; ++r) {
    timer.start(s);
    CU_CHECK(drv().cuGraphLaunch(exec, s));
    const double m = timer.stop_ms(s);
    if (r > 0) ms.push_back(m);
  }
  drv().cuGraphExecDestroy(exec);
  drv().cuGraphDestroy(g);
  t.ok = true;
  t.us = median(ms) * 1000.0 / kLaunches;
  return t;
}

}  // namespace ac::cuda
