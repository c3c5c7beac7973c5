#pragma once
// A loaded model folder: config, mapped weights bound to the architecture, and where the
// tokenizer files are (if any). Loading validates everything; later stages trust it.
#include <memory>
#include <optional>

#include "agentcompile/model/architecture.h"
#include "agentcompile/model/hf_config.h"
#include "agentcompile/model/quantization.h"
#include "agentcompile/model/weights.h"

namespace ac {

struct Model {
  fs::path dir;
  ModelConfig config;
  WeightStore store;     // FP8 weights already dequantized (quantization.h)
  QuantConfig quant;     // config.json's quantization_config
  DequantStats dequant;  // what loading dequantized
  ModelWeights weights;
  bool has_tokenizer() const;  // dir/tokenizer.json exists
  // The weights' bytes as stored (FP8 weights and their scales, not the f32 they load as): what a
  // decode step of kernels that read the stored format streams.
  uint64_t stored_bytes() const { return weights.bytes - dequant.loaded_bytes + dequant.stored_bytes; }
  // The weight bytes one decode step of one sequence reads, as stored (parameter_counts'
  // decode_bytes at the model's dtype, FP8 weights at their fp8 bytes and scales): an embedding
  // row, every non-expert tensor, the picked experts' share of each sparse layer.
  uint64_t decode_step_bytes() const;
  // The same where each sparse layer reads `experts_per_layer` experts (a batch's union of picks;
  // decode_step_bytes() is experts_per_token).
  uint64_t decode_step_bytes(double experts_per_layer) const;
};

std::unique_ptr<Model> load_model(const fs::path& dir);

}  // namespace ac
