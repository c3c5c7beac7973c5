#include "agentcompile/model/fp8_quantize.h"

#include <algorithm>
#include <cmath>

#include "agentcompile/core/error.h"
#include "agentcompile/core/fp8.h"
#include "agentcompile/model/architecture.h"

namespace ac {

bool quantized_in_fp8(const std::string& name, const std::vector<int64_t>& shape) {
  return shape.size() == 2 && name.ends_with(".weight") && name.starts_with("model.layers.") &&
         !name.ends_with("norm.weight") && !name.ends_with(".gate.weight");
}

void quantize_fp8(const std::vector<float>& w, int64_t out, int64_t in, int64_t bo, int64_t bi, DType scale_dtype,
                  std::vector<uint8_t>& q, std::vector<uint8_t>& scales) {
  const int64_t so = (out + bo - 1) / bo, si = (in + bi - 1) / bi;
  q.assign(size_t(out * in), 0);
  scales.assign(size_t(so * si) * dtype_size(scale_dtype), 0);
  for (int64_t a = 0; a < so; ++a)
    for (int64_t b = 0; b < si; ++b) {
      float amax = 0.0f;
      for (int64_t i = a * bo; i < std::min(out, (a + 1) * bo); ++i)
        for (int64_t j = b * bi; j < std::min(in, (b + 1) * bi); ++j) amax = std::max(amax, std::fabs(w[size_t(i * in + j)]));
      store_from_f32(scales.data(), scale_dtype, size_t(a * si + b), amax > 0.0f ? amax / kFp8E4M3Max : 1.0f);
      const float scale = load_as_f32(scales.data(), scale_dtype, size_t(a * si + b));
      for (int64_t i = a * bo; i < std::min(out, (a + 1) * bo); ++i)
        for (int64_t j = b * bi; j < std::min(in, (b + 1) * bi); ++j)
          q[size_t(i * in + j)] = f32_to_fp8_e4m3(w[size_t(i * in + j)] / scale);
    }
}

std::vector<float> dequantize_fp8(const uint8_t* q, const uint8_t* scales, DType scale_dtype, int64_t out, int64_t in,
                                  int64_t bo, int64_t bi) {
  const int64_t si = (in + bi - 1) / bi;
  std::vector<float> w(size_t(out * in));
  for (int64_t i = 0; i < out; ++i) {
    const int64_t srow = (i / bo) * si;
    for (int64_t j = 0; j < in; ++j)
      w[size_t(i * in + j)] = fp8_e4m3_to_f32(q[size_t(i * in + j)]) * load_as_f32(scales, scale_dtype, size_t(srow + j / bi));
  }
  return w;
}

std::shared_ptr<const Fp8Weight> keep_fp8_weight(const uint8_t* codes, const uint8_t* scales, DType scale_dtype,
                                                 int64_t out, int64_t in, int64_t bo, int64_t bi, uint64_t stored_bytes,
                                                 bool own) {
  auto kept = std::make_shared<Fp8Weight>();
  kept->out = out;
  kept->in = in;
  kept->bo = bo;
  kept->bi = bi;
  if (own) kept->owned_codes.assign(codes, codes + out * in);
  kept->codes = own ? kept->owned_codes.data() : codes;
  const int64_t count = (out + bo - 1) / bo * ((in + bi - 1) / bi);
  for (int64_t i = 0; i < count; ++i) kept->scales.push_back(load_as_f32(scales, scale_dtype, size_t(i)));
  kept->stored_bytes = stored_bytes;
  return kept;
}

namespace {

// `t` (16- or 32-bit) quantized into the store under `name` as fp8 x scale in f32, counted in stats.
void quantize_one(WeightStore& store, const TensorInfo& t, const std::string& name, bool block, DequantStats& stats) {
  const DType sdt = fp8_scale_dtype(block);
  std::vector<uint8_t> q, scales;
  const int64_t out = t.shape[0], in = t.shape[1];
  const int64_t bo = fp8_scale_rows(block), bi = fp8_scale_cols(block, in);
  std::vector<float> w(size_t(out * in));
  for (size_t i = 0; i < w.size(); ++i) w[i] = load_as_f32(t.data, t.dtype, i);
  quantize_fp8(w, out, in, bo, bi, sdt, q, scales);
  w = dequantize_fp8(q.data(), scales.data(), sdt, out, in, bo, bi);  // what a reader of the checkpoint computes
  stats.weights[name] = keep_fp8_weight(q.data(), scales.data(), sdt, out, in, bo, bi, q.size() + scales.size(), true);
  stats.tensors += 1;
  stats.stored_bytes += q.size() + scales.size();
  stats.loaded_bytes += w.size() * sizeof(float);
  TensorInfo info = t;
  info.name = name;
  store.replace(std::move(info), std::move(w));
}

}  // namespace

DequantStats quantize_fp8_weights(WeightStore& store, bool block) {
  DequantStats stats;
  std::vector<const TensorInfo*> picked;
  for (const auto& [name, t] : store.all())
    if (quantized_in_fp8(name, t->shape) && (t->dtype == DType::BF16 || t->dtype == DType::F16 || t->dtype == DType::F32))
      picked.push_back(t);
  for (const TensorInfo* t : picked) quantize_one(store, *t, t->name, block, stats);
  return stats;
}

void quantize_model_fp8(Model& m, bool block, bool lm_head) {
  if (m.quant.kind != QuantConfig::Kind::None)
    throw_input(m.dir.string(), "the model is already quantized (" + m.quant.describe() + ")");
  m.dequant = quantize_fp8_weights(m.store, block);
  if (lm_head) {
    // A tied head is the embedding's tensor, which keeps its 16-bit rows: the head is a copy.
    const TensorInfo head = *m.weights.lm_head;
    if (head.shape.size() != 2 || !dtype_is_compute(head.dtype))
      throw_input(m.dir.string(), "the lm_head " + head.name + " cannot be quantized (" + head.shape_str() + " " +
                                      std::string(dtype_user_name(head.dtype)) + ")");
    quantize_one(m.store, head, "lm_head.weight", block, m.dequant);
    m.config.tie_word_embeddings = false;  // in memory only: the head is a tensor of its own now
    m.quant.lm_head_fp8 = true;
  }
  m.quant.kind = QuantConfig::Kind::Fp8;
  m.quant.method = "fp8 (quantized at load)";
  m.quant.scheme = block ? "block " + std::to_string(kFp8Block) + "x" + std::to_string(kFp8Block) : "channel";
  m.quant.block_out = fp8_scale_rows(block);
  m.quant.block_in = block ? kFp8Block : 0;
  m.quant.scale_suffix = block ? "weight_scale_inv" : "weight_scale";
  m.weights = bind_weights(m.config, m.store, &m.dequant);
}

}  // namespace ac
