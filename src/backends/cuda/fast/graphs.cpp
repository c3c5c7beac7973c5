// Kernel launches on the executor's stream and the decode step's CUDA graphs: one captured per batch
// template and attention range, replayed by later steps.
#include "backends/cuda/fast/executor.h"

namespace ac::cuda {

int batch_template(long long n) { return n <= 1 ? 1 : n <= 2 ? 2 : n <= 4 ? 4 : 8; }

void FastExecutor::run_decode_step(long long n) {
  if (profile_) {
    record_decode(n);
    flush_profile();
    tokens_ready_ = true;
    return;
  }
  if (!cfg_.cuda_graph) {
    record_decode(n);
    tokens_ready_ = true;
    return;
  }
  const int key = int(n) * 4 + int(attn_range_of(cfg_, batch_template(n), longest_, cluster_reach_));
  auto it = graphs_.find(key);
  if (it == graphs_.end()) {
    // First step of this batch size: run it directly (loads every kernel), then capture it.
    record_decode(n);
    CU_CHECK(drv().cuStreamSynchronize(s_));
    CUgraph graph;
    CU_CHECK(drv().cuStreamBeginCapture(s_, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    try {
      record_decode(n);
    } catch (...) {
      CUgraph discard;
      drv().cuStreamEndCapture(s_, &discard);
      throw;
    }
    CU_CHECK(drv().cuStreamEndCapture(s_, &graph));
    CUgraphExec exec;
    CU_CHECK(drv().cuGraphInstantiateWithFlags(&exec, graph, 0));
    CU_CHECK(drv().cuGraphDestroy(graph));
    graphs_.emplace(key, exec);
    tokens_ready_ = true;
    return;
  }
  CU_CHECK(drv().cuGraphLaunch(it->second, s_));
  tokens_ready_ = true;
}

// Every launch of this executor on its stream, with its shared-memory carveout: the step's
// (FastConfig::smem_carveout), or the region's where it has one (FastConfig::region_carveout,
// both as the function's and as the launch's preference).
void FastExecutor::launch(const LoadedKernel& k, Dim3 grid, unsigned threads, size_t smem, const void* params, bool pdl,
                          const char* region) {
  const auto it = region ? cfg_.region_carveout.find(region) : cfg_.region_carveout.end();
  const int own = it != cfg_.region_carveout.end() ? it->second : -1;
  launch_kernel(k, grid, threads, smem, s_, params, pdl, own >= 0 ? own : cfg_.smem_carveout, own);
}

const LoadedKernel& FastExecutor::ref(const std::string& op, std::map<std::string, int> params, std::vector<DType> types) {
  params.emplace("BLOCK", int(kRefBlock));
  return load_kernel(make_variant(find_family(op, "ref"), std::move(params), std::move(types), arch_));
}

}  // namespace ac::cuda
