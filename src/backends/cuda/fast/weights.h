#pragma once
// A graph's weights on the device in the fast path's layout (fast_weights_key), uploaded once and
// shared by the executors of one graph.
#include <map>
#include <memory>
#include <vector>

#include "agentcompile/ir/decoder_layers.h"
#include "backends/cuda/device.h"
#include "backends/cuda/fast_executor.h"

namespace ac::cuda {

// A graph's weights on the device as the fast path reads them: every tensor in its stored dtype
// but q, k and v, which each layer holds as one [q_dim + 2 kv_dim, hidden] matrix (and bias);
// W_down also tiled by mlp.fused's unit where that may run. Immutable once uploaded, so the
// executors of one graph may share it (ExecutorShare).
struct FastWeights {
  std::map<const TensorInfo*, DeviceBuffer> w;
  std::vector<DeviceBuffer> wqkv, bqkv;  // per layer
  std::vector<DeviceBuffer> wdown_tiled;  // per layer, when cfg.mlp_fused_batch > 0
};

// This executor's weights: the share's when it holds this graph's in cfg's layout, else uploaded
// (and left in the share, replacing what it held: one graph's weights in one layout at a time).
std::shared_ptr<const FastWeights> fast_weights(const Graph& g, const DecoderOps& ops, const FastConfig& cfg, DType wt,
                                                CUstream s, ExecutorShare* share);

}  // namespace ac::cuda
