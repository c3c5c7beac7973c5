#include "agentcompile/ir/rope.h"

#include <cmath>

namespace ac {

std::vector<float> rope_inv_freq(const RopeConfig& rope, int64_t head_dim) {
  const int64_t half = head_dim / 2;
  std::vector<float> inv(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    // HF: 1 / base ** (arange(0, dim, 2).float() / dim), all in f32.
    float expo = float(2 * i) / float(head_dim);
    inv[static_cast<size_t>(i)] = 1.0f / std::pow(float(rope.theta), expo);
  }
  if (rope.type == RopeType::Linear) {
    for (float& f : inv) f = float(f / rope.factor);
  } else if (rope.type == RopeType::Llama3) {
    // Long wavelengths are slowed by `factor`, short ones kept, the band between interpolated.
    const double old_ctx = double(rope.original_max_position_embeddings);
    const double low_wavelen = old_ctx / rope.low_freq_factor;
    const double high_wavelen = old_ctx / rope.high_freq_factor;
    for (float& f : inv) {
      const double wavelen = 2.0 * M_PI / double(f);
      double scaled = wavelen > low_wavelen ? double(f) / rope.factor : double(f);
      if (!(wavelen < high_wavelen) && !(wavelen > low_wavelen)) {
        double smooth = (old_ctx / wavelen - rope.low_freq_factor) / (rope.high_freq_factor - rope.low_freq_factor);
        scaled = (1.0 - smooth) * scaled / rope.factor + smooth * scaled;
      }
      f = float(scaled);
    }
  }
  return inv;
}

void rope_cos_sin(const std::vector<float>& inv_freq, int64_t position, float* cos_out, float* sin_out) {
  const float p = float(position);
  for (size_t i = 0; i < inv_freq.size(); ++i) {
    const float angle = p * inv_freq[i];
    cos_out[i] = float(std::cos(double(angle)));
    sin_out[i] = float(std::sin(double(angle)));
  }
}

}  // namespace ac
