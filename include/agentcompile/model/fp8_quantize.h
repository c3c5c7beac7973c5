#pragma once
// FP8 quantization of 16-bit weights, as FP8 checkpoints are made: which weights are quantized
// (the decoder layers' linear weights; embeddings, norms, routers and lm_head stay 16-bit, as
// Qwen's FP8 releases and llm-compressor's defaults keep them; the lm_head on request), round-to-nearest e4m3 with amax
// scales, and a whole store quantized in place. synth-model writes its FP8 checkpoints with it,
// and a model quantized at load holds exactly what loading that checkpoint would (fp8 x scale in
// f32: W8A16).
//  - block: 128x128 blocks, F32 scales (Qwen's *-FP8, weight_scale_inv)
//  - channel: one BF16 scale per output row (llm-compressor's per-channel, weight_scale)
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "agentcompile/core/dtype.h"
#include "agentcompile/model/model.h"
#include "agentcompile/model/quantization.h"
#include "agentcompile/model/weights.h"

namespace ac {

inline constexpr int64_t kFp8Block = 128;  // fp8-block's weight_block_size, both ways

bool quantized_in_fp8(const std::string& name, const std::vector<int64_t>& shape);

// The rows and columns one scale covers, and the scales' stored dtype.
inline int64_t fp8_scale_rows(bool block) { return block ? kFp8Block : 1; }
inline int64_t fp8_scale_cols(bool block, int64_t in) { return block ? kFp8Block : in; }
inline DType fp8_scale_dtype(bool block) { return block ? DType::F32 : DType::BF16; }

// Round-to-nearest e4m3 with amax scales per block of [bo, bi]. `w` holds the weight as the
// 16-bit model stores it; the weight is divided by the stored (rounded) scale so that fp8 x scale
// is what a reader computes. q: [out * in] e4m3 bytes; scales: [ceil(out/bo) * ceil(in/bi)] in
// `scale_dtype`.
void quantize_fp8(const std::vector<float>& w, int64_t out, int64_t in, int64_t bo, int64_t bi, DType scale_dtype,
                  std::vector<uint8_t>& q, std::vector<uint8_t>& scales);

// The weight a reader of an FP8 checkpoint computes: each e4m3 byte of q [out * in] times the
// scale of its [bo, bi] block (scales row-major over the blocks, in `scale_dtype`), in f32.
std::vector<float> dequantize_fp8(const uint8_t* q, const uint8_t* scales, DType scale_dtype, int64_t out, int64_t in,
                                  int64_t bo, int64_t bi);

// An FP8 weight kept as stored (quantization.h Fp8Weight) beside the f32 it loads as: its codes
// (copied only with `own`, else they must outlive it, e.g. a mapped checkpoint) and its scales
// (ceil(out/bo) x ceil(in/bi) in `scale_dtype`) widened to f32.
std::shared_ptr<const Fp8Weight> keep_fp8_weight(const uint8_t* codes, const uint8_t* scales, DType scale_dtype,
                                                 int64_t out, int64_t in, int64_t bo, int64_t bi, uint64_t stored_bytes,
                                                 bool own);

// Every weight quantized_in_fp8 selects (16- or 32-bit) replaced by fp8 x scale in f32, as an
// FP8 checkpoint of it would load; stats as dequantize_fp8_weights counts them (the bytes such a
// checkpoint would store).
DequantStats quantize_fp8_weights(WeightStore& store, bool block);

// A loaded 16-bit model quantized the same way, its weights bound again; its quant and dequant say
// what was done ("fp8" block 128x128 or channel scales, quantized at load). Refused for a model
// that is already quantized. With `lm_head` the lm_head is quantized too (the variant that reads
// fewer bytes per token than the checkpoints ship); a tied one becomes a tensor of its own
// (lm_head.weight, the model untied in memory) so the embedding keeps its 16-bit rows.
void quantize_model_fp8(Model& m, bool block, bool lm_head = false);

}  // namespace ac
