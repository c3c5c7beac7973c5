#include "agentcompile/model/model.h"

#include <cmath>

namespace ac {

bool Model::has_tokenizer() const {
  std::error_code ec;
  return fs::exists(dir / "tokenizer.json", ec);
}

uint64_t Model::decode_step_bytes() const {
  return decode_step_bytes(config.is_moe() ? double(config.moe.experts_per_token) : 0.0);
}

uint64_t Model::decode_step_bytes(double experts_per_layer) const {
  const uint64_t es = dtype_size(weights.embed->dtype);
  const double picked = config.is_moe() ? experts_per_layer / double(config.moe.experts) : 1.0;
  double saved = 0;
  for (const auto& [name, fw] : dequant.weights)
    saved += (double(uint64_t(fw->out * fw->in) * es) - double(fw->stored_bytes)) *
             (name.find(".experts.") != std::string::npos ? picked : 1.0);
  // parameter_counts counts experts_per_token experts per sparse layer; the others add or drop.
  double bytes = double(parameter_counts(config, weights.embed->dtype).decode_bytes);
  if (config.is_moe())
    bytes += (experts_per_layer - double(config.moe.experts_per_token)) * double(config.sparse_layers()) * 3.0 *
             double(config.moe.expert_intermediate) * double(config.hidden_size) * double(es);
  return uint64_t(std::llround(bytes - saved));
}

std::unique_ptr<Model> load_model(const fs::path& dir) {
  auto m = std::make_unique<Model>();
  m->dir = dir;
  m->config = load_model_config(dir);
  m->store = WeightStore::open(dir);
  m->quant = read_quantization_config(dir);
  m->dequant = dequantize_fp8_weights(m->store, m->quant);
  m->quant.lm_head_fp8 = m->dequant.weights.count("lm_head.weight") > 0;
  m->weights = bind_weights(m->config, m->store, &m->dequant);
  return m;
}

}  // namespace ac
