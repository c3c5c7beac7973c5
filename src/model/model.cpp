#include "agentcompile/model/model.h"

namespace ac {

bool Model::has_tokenizer() const {
  std::error_code ec;
  return fs::exists(dir / "tokenizer.json", ec);
}

std::unique_ptr<Model> load_model(const fs::path& dir) {
  auto m = std::make_unique<Model>();
  m->dir = dir;
  m->config = load_model_config(dir);
  m->store = WeightStore::open(dir);
  m->quant = read_quantization_config(dir);
  m->dequant = dequantize_fp8_weights(m->store, m->quant);
  m->weights = bind_weights(m->config, m->store);
  return m;
}

}  // namespace ac
