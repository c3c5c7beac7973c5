#pragma once
// Quantized checkpoints: config.json's quantization_config, and the FP8 weights it describes
// turned into the f32 weights the rest of the model path reads (W8A16: weight = fp8 value x its
// scale, exactly as f32 holds the product; activations are not quantized).
//  - "fp8" (Qwen's and DeepSeek's *-FP8): weight_block_size [bo, bi]; F8_E4M3 `X.weight` with an
//    F32/BF16 `X.weight_scale_inv` of shape [ceil(out/bo), ceil(in/bi)] (edge blocks partial).
//  - "compressed-tensors", format "float-quantized" (llm-compressor): 8-bit float weights with
//    `X.weight_scale` per channel [out, 1], per tensor, or per block; an `ignore` list; a static
//    `X.input_scale` is dropped (activations stay unquantized).
// Any other quant_method (awq, gptq, bitsandbytes, ...) or format is refused, naming it.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "agentcompile/core/fs.h"
#include "agentcompile/core/json.h"
#include "agentcompile/model/weights.h"

namespace ac {

struct QuantConfig {
  enum class Kind { None, Fp8 };
  Kind kind = Kind::None;
  std::string method;        // quant_method as written ("fp8", "compressed-tensors")
  std::string scheme;        // "block 128x128", "channel", "tensor"
  int64_t block_out = 0, block_in = 0;  // scale granularity; 0: the whole dimension
  std::string scale_suffix;  // "weight_scale_inv" or "weight_scale"
  std::vector<std::string> not_converted;  // modules kept 16-bit (names, or "re:" regexes)
  bool lm_head_fp8 = false;  // the lm_head is FP8 too (most checkpoints keep it 16-bit)
  std::string describe() const;  // "fp8 e4m3, block 128x128 scales (W8A16)", or "none"
};

// The quantization_config of a parsed config.json (Kind::None without one); `subject` names the
// file in errors.
QuantConfig parse_quantization_config(const Json& config, const std::string& subject);
// The same from dir/config.json.
QuantConfig read_quantization_config(const fs::path& dir);

// An FP8 weight as stored, for kernels that read it so: e4m3 codes [out, in] row-major (the
// checkpoint's own bytes, whose file stays mapped, or made at load into owned_codes) and its
// scales widened to f32 (exactly), one per [bo, bi] block, [ceil(out/bo), ceil(in/bi)] row-major.
struct Fp8Weight {
  int64_t out = 0, in = 0, bo = 0, bi = 0;
  const uint8_t* codes = nullptr;
  std::vector<uint8_t> owned_codes;
  std::vector<float> scales;
  uint64_t stored_bytes = 0;  // the codes' and the scales' bytes as stored
};

struct DequantStats {
  int64_t tensors = 0;        // FP8 weights dequantized
  uint64_t stored_bytes = 0;  // their fp8 bytes and their scales' bytes, as stored
  uint64_t loaded_bytes = 0;  // the f32 weights made of them
  std::map<std::string, std::shared_ptr<const Fp8Weight>> weights;  // each one as stored
};

// Replaces every FP8 weight of the store and its scale by the f32 weight they describe. Errors
// name the tensor: an FP8 weight without quantization_config, or in a module it keeps 16-bit, a
// missing scale or one of the wrong shape or dtype, an FP8 format other than E4M3.
DequantStats dequantize_fp8_weights(WeightStore& store, const QuantConfig& q);

}  // namespace ac
