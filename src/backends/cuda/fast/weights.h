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
// W_down also tiled by mlp.fused's unit where that may run. FP8 projections (Graph::fp8) are
// uploaded as stored, e4m3 codes [out, in] (not the f32 they load as), with their f32 scales in
// gemv.fp8's layout: one per output row (channel and tensor scales) or per 128 x 128 block.
// Immutable once uploaded, so the executors of one graph may share it (ExecutorShare).
struct FastWeights {
  std::map<const TensorInfo*, DeviceBuffer> w;
  std::vector<DeviceBuffer> wqkv, bqkv;  // per layer
  std::vector<DeviceBuffer> wdown_tiled;  // per layer, when cfg.mlp_fused_batch > 0
  Fp8Scales fp8 = Fp8Scales::None;
  std::map<const TensorInfo*, DeviceBuffer> scale;  // FP8: each projection's scales
  std::vector<DeviceBuffer> sqkv;  // FP8, per layer: q's, k's and v's scales, one after the other
  std::vector<DeviceBuffer> moe_experts;  // per layer: a sparse layer's experts, expert-major (gate E | up E | down E)
  std::vector<DeviceBuffer> moe_table;    // per layer: their device pointers, in that order
  std::vector<std::vector<CUdeviceptr>> moe_host_table;  // the same pointers on the host (the grouped GEMMs')
};

// This executor's weights: the share's when it holds this graph's in cfg's layout, else uploaded
// (and left in the share, replacing what it held: one graph's weights in one layout at a time).
std::shared_ptr<const FastWeights> fast_weights(const Graph& g, const DecoderOps& ops, const FastConfig& cfg, DType wt,
                                                CUstream s, ExecutorShare* share);

}  // namespace ac::cuda
