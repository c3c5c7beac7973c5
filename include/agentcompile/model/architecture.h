#pragma once
// Binds stored tensors to an architecture: the list of tensors a config implies (names and
// shapes, HF naming), checked against the weight store. A missing, mis-shaped, wrongly typed or
// unexpected tensor is an error naming it.
#include <string>
#include <vector>

#include "agentcompile/model/hf_config.h"
#include "agentcompile/model/weights.h"

namespace ac {

struct ExpectedTensor {
  std::string name;
  std::vector<int64_t> shape;
};

// Every tensor the architecture reads, in model order (embedding first, lm_head last unless tied).
std::vector<ExpectedTensor> expected_tensors(const ModelConfig& cfg);

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
  const TensorInfo* gate = nullptr;  // [intermediate, hidden]
  const TensorInfo* up = nullptr;
  const TensorInfo* down = nullptr;  // [hidden, intermediate]
  const TensorInfo* gate_bias = nullptr;
  const TensorInfo* up_bias = nullptr;
  const TensorInfo* down_bias = nullptr;
};

struct ModelWeights {
  const TensorInfo* embed = nullptr;       // [vocab, hidden]
  const TensorInfo* final_norm = nullptr;  // [hidden]
  const TensorInfo* lm_head = nullptr;     // [vocab, hidden]; == embed when tied
  std::vector<LayerWeights> layers;
  std::vector<std::string> ignored;        // stored tensors HF also ignores (rotary inv_freq, tied lm_head)
  int64_t parameters = 0;                  // elements of the bound tensors, a tied embedding once
  uint64_t bytes = 0;                      // bytes of the bound tensors
};

ModelWeights bind_weights(const ModelConfig& cfg, const WeightStore& store);

}  // namespace ac
