#include "agentcompile/core/fp8.h"

#include <cmath>

namespace ac {

float fp8_e4m3_to_f32(uint8_t v) {
  const int sign = v >> 7, exp = (v >> 3) & 0xf, man = v & 0x7;
  if (exp == 0xf && man == 0x7) return NAN;
  // Subnormals (exp 0): man/8 * 2^-6; normals: (1 + man/8) * 2^(exp-7).
  const float mag = exp == 0 ? std::ldexp(float(man), -9) : std::ldexp(float(8 + man), exp - 10);
  return sign ? -mag : mag;
}

uint8_t f32_to_fp8_e4m3(float f) {
  if (std::isnan(f)) return 0x7f;
  const uint8_t sign = std::signbit(f) ? 0x80 : 0;
  float a = std::fabs(f);
  if (a >= kFp8E4M3Max) return sign | 0x7e;  // 448
  // The representable values are exact in f32, so search the 127 magnitudes' neighbours: the
  // exponent gives the spacing, nearbyint (round half to even) the mantissa step.
  int e;
  std::frexp(a, &e);                       // a = m * 2^e, m in [0.5, 1)
  const int exp = std::max(e - 1, -6);     // unbiased exponent of a's binade, subnormals at -6
  const float step = std::ldexp(1.0f, exp - 3);
  const float q = std::nearbyint(a / step) * step;  // a / step is exact (a power-of-two step)
  if (q >= kFp8E4M3Max) return sign | 0x7e;
  if (q == 0.0f) return sign;
  int qe;
  const float qm = std::frexp(q, &qe);     // q = qm * 2^qe
  const int biased = qe - 1 + 7;
  if (biased <= 0) return sign | uint8_t(std::lround(q / std::ldexp(1.0f, -9)));  // subnormal: man/8 * 2^-6
  const int man = int(std::lround((qm * 2.0f - 1.0f) * 8.0f));
  return sign | uint8_t(biased << 3) | uint8_t(man);
}

}  // namespace ac
