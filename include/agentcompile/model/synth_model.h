#pragma once
// Random-weight model folders with real architectures: config.json, generation_config.json,
// model.safetensors (or shards and model.safetensors.index.json) and (optionally) the tokenizer
// files, loadable by HF transformers. A folder without enough free disk for the weights is refused.
#include <cstdint>
#include <string>
#include <vector>

#include "agentcompile/core/dtype.h"
#include "agentcompile/core/fs.h"
#include "agentcompile/core/json.h"
#include "agentcompile/model/model.h"

namespace ac {

struct SynthPreset {
  std::string name;
  std::string description;
  Json config;             // config.json as HF writes it (4.x form)
  Json generation_config;  // generation_config.json
};

const std::vector<SynthPreset>& synth_presets();
const SynthPreset* find_synth_preset(const std::string& name);

struct SynthOptions {
  std::string preset;
  fs::path out;
  uint64_t seed = 0;
  DType dtype = DType::BF16;
  fs::path tokenizer_dir;  // empty: no tokenizer files
  bool quiet = false;
  uint64_t max_shard_bytes = 0;  // 0: one model.safetensors; else shards of at most this many bytes + the index
  bool config_only = false;      // config, generation config and tokenizer only (inspect reads such a folder)
  // "" (16-bit weights), "fp8-block" (Qwen's FP8 format: 128x128 F32 weight_scale_inv) or
  // "fp8-channel" (llm-compressor's compressed-tensors: per-channel BF16 weight_scale).
  std::string weights;
  // > 0: the preset cut to its first `layers` decoder layers (at most the preset's count): the
  // same layer shapes in a smaller model, for quick per-layer measurements of a large preset.
  int64_t layers = 0;
};

struct SynthResult {
  int64_t parameters = 0;
  uint64_t bytes = 0;  // of the weights (also with config_only: what they would take)
};

// Writes the folder (atomically: it appears complete or not at all). An existing folder at
// opts.out is replaced only when synth-model wrote it (synth_model_folder_kind).
SynthResult synth_model(const SynthOptions& opts);

// The same model made in memory, no file written: its tensors hold exactly the bytes synth_model
// would write for these options (out, tokenizer_dir, max_shard_bytes and config_only unused), then
// load as load_model would load them. For presets larger than a disk can hold (qwen3-30b-a3b).
std::unique_ptr<Model> synth_model_in_memory(const SynthOptions& opts);

// Folders synth-model writes: marked ones only (an unmarked model folder may be a user's download).
const FolderKind& synth_model_folder_kind();

}  // namespace ac
