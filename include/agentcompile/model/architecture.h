#pragma once
// Binds stored tensors to an architecture: the list of tensors a config implies (names and
// shapes, HF naming), checked against the weight store. A missing, mis-shaped, wrongly typed or
// unexpected tensor is an error naming it.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "agentcompile/model/hf_config.h"
#include "agentcompile/model/weights.h"

namespace ac {

struct Fp8Weight;     // quantization.h
struct DequantStats;  // quantization.h

struct ExpectedTensor {
  std::string name;
  std::vector<int64_t> shape;
};

// Every tensor the architecture reads, in model order (embedding first, lm_head last unless tied).
std::vector<ExpectedTensor> expected_tensors(const ModelConfig& cfg);

// One expert of a sparse layer: a SwiGLU MLP of the experts' width (qwen3_moe gate/up/down_proj,
// mixtral w1/w3/w2).
struct ExpertWeights {
  const TensorInfo* gate = nullptr;  // [expert_intermediate, hidden]
  const TensorInfo* up = nullptr;
  const TensorInfo* down = nullptr;  // [hidden, expert_intermediate]
};

struct LayerWeights {
  const TensorInfo* input_norm = nullptr;
  const TensorInfo* q = nullptr;  // [q_dim, hidden]
  const TensorInfo* k = nullptr;  // [kv_dim, hidden]
  const TensorInfo* v = nullptr;  // [kv_dim, hidden]
  const TensorInfo* o = nullptr;  // [hidden, q_dim]
  const TensorInfo* q_bias = nullptr;
  const TensorInfo* k_bias = nullptr;
  const TensorInfo* v_bias = nullptr;
  const TensorInfo* o_bias = nullptr;
  const TensorInfo* q_norm = nullptr;  // [head_dim] (qwen3)
  const TensorInfo* k_norm = nullptr;
  const TensorInfo* post_norm = nullptr;
  const TensorInfo* gate = nullptr;  // [intermediate, hidden]; null in a sparse layer
  const TensorInfo* up = nullptr;
  const TensorInfo* down = nullptr;  // [hidden, intermediate]
  const TensorInfo* gate_bias = nullptr;
  const TensorInfo* up_bias = nullptr;
  const TensorInfo* down_bias = nullptr;
  const TensorInfo* router = nullptr;  // sparse layer: [experts, hidden]
  std::vector<ExpertWeights> experts;  // sparse layer: expert order
};

struct ModelWeights {
  const TensorInfo* embed = nullptr;       // [vocab, hidden]
  const TensorInfo* final_norm = nullptr;  // [hidden]
  const TensorInfo* lm_head = nullptr;     // [vocab, hidden]; == embed when tied
  std::vector<LayerWeights> layers;
  std::vector<std::string> ignored;        // stored tensors HF also ignores (rotary inv_freq, tied lm_head)
  int64_t parameters = 0;                  // elements of the bound tensors, a tied embedding once
  uint64_t bytes = 0;                      // bytes of the bound tensors
  // The bound tensors loaded from FP8 (f32 here), each as stored: for kernels that read that.
  std::map<const TensorInfo*, std::shared_ptr<const Fp8Weight>> fp8;
};

// `dequant`: what loading dequantized (Model::dequant), whose weights fill ModelWeights::fp8.
ModelWeights bind_weights(const ModelConfig& cfg, const WeightStore& store, const DequantStats* dequant = nullptr);

// Parameter counts from the config alone (no weights needed): every tensor's elements (a tied
// embedding once), those one token uses (all but the experts the router does not pick: a dense
// model uses all), and the weight bytes one decode step of one sequence reads at `dtype`: one
// embedding row, every other non-expert tensor, and the picked experts of each sparse layer.
struct ParameterCounts {
  int64_t total = 0;
  int64_t active_per_token = 0;
  uint64_t decode_bytes = 0;
};
ParameterCounts parameter_counts(const ModelConfig& cfg, DType dtype);

// The HF names of a sparse layer's router and of expert e's gate, up and down projections
// ("model.layers.3.mlp.gate.weight", "model.layers.3.mlp.experts.5.gate_proj.weight"; mixtral:
// "block_sparse_moe.gate", "experts.5.w1/w3/w2").
std::string router_tensor_name(const ModelConfig& cfg, int64_t layer);
// proj: "gate", "up" or "down".
std::string expert_tensor_name(const ModelConfig& cfg, int64_t layer, int64_t expert, const char* proj);

}  // namespace ac
