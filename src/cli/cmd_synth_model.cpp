// agentcompile synth-model --preset P --out DIR [--seed N] [--dtype D] [--tokenizer DIR] [--max-shard-size BYTES]
//                           [--config-only] [--layers N]
#include <cstdio>

#include "agentcompile/core/error.h"
#include "agentcompile/model/synth_model.h"
#include "cli/cli_common.h"

namespace ac::cli {

namespace {
struct SynthCliOptions {
  std::string preset, out, dtype = "bf16", tokenizer, weights;
  uint64_t seed = 0;
  uint64_t max_shard_bytes = 0;
  int64_t layers = 0;
  bool quiet = false;
  bool config_only = false;
};
}  // namespace

Subcommand add_synth_model(CLI::App& root) {
  auto o = std::make_shared<SynthCliOptions>();
  std::string preset_help = "Preset:";
  for (const auto& p : synth_presets()) preset_help += "\n  " + p.name + ": " + p.description;
  CLI::App* app = root.add_subcommand("synth-model", "Write a random-weight Hugging Face model folder with real shapes");
  app->add_option("--preset", o->preset, preset_help)->required();
  app->add_option("--out", o->out, "Output folder: new, empty, or one synth-model wrote (replaced atomically when complete)")->required();
  app->add_option("--seed", o->seed, "Random seed (default 0)")->check(in_range(0, 18446744073709551615.0L));
  app->add_option("--dtype", o->dtype, "Weight dtype: bf16 (default), f16, f32");
  app->add_option("--weights", o->weights,
                  "FP8 linear-layer weights, the --dtype model quantized: fp8-block (128x128 scales, as Qwen's *-FP8) or "
                  "fp8-channel (per-channel scales, as llm-compressor's FP8)");
  app->add_option("--tokenizer", o->tokenizer, "Folder with tokenizer.json (+ tokenizer_config.json) to copy in");
  app->add_option("--max-shard-size", o->max_shard_bytes,
                  "Write the weights as shards of at most BYTES each and model.safetensors.index.json, as the Hub "
                  "stores large models (default: one model.safetensors)")
      ->check(in_range(1, 1e15));
  app->add_flag("--config-only", o->config_only,
                "Write config.json, generation_config.json and the tokenizer files but no weights (for inspect)");
  app->add_option("--layers", o->layers,
                  "Only the preset's first N decoder layers: the same layer shapes in a smaller model, for quick "
                  "per-layer measurements of a large preset (default: all)")
      ->check(in_range(1, 1e6));
  app->add_flag("--quiet", o->quiet, "No progress output");
  return {app, [o]() {
            check_replaceable(o->out, synth_model_folder_kind(), "--out " + o->out);
            SynthOptions so;
            so.preset = o->preset;
            so.out = o->out;
            so.seed = o->seed;
            auto dt = dtype_from_user_name(o->dtype);
            if (!dt) throw_input("--dtype", "\"" + o->dtype + "\" is not one of bf16, f16, f32");
            so.dtype = *dt;
            so.tokenizer_dir = o->tokenizer;
            so.weights = o->weights;
            so.quiet = o->quiet;
            so.max_shard_bytes = o->max_shard_bytes;
            so.config_only = o->config_only;
            so.layers = o->layers;
            SynthResult r = synth_model(so);
            if (so.config_only) {
              std::printf("wrote %s: preset %s, config only (the weights would be %lld parameters, %llu bytes of %s)\n",
                          o->out.c_str(), o->preset.c_str(), static_cast<long long>(r.parameters),
                          static_cast<unsigned long long>(r.bytes), std::string(dtype_user_name(so.dtype)).c_str());
              return 0;
            }
            std::printf("wrote %s: preset %s, %lld parameters, %llu bytes of %s weights\n", o->out.c_str(),
                        o->preset.c_str(), static_cast<long long>(r.parameters),
                        static_cast<unsigned long long>(r.bytes),
                        (std::string(dtype_user_name(so.dtype)) + (so.weights.empty() ? "" : " and " + so.weights)).c_str());
            return 0;
          }};
}

}  // namespace ac::cli
