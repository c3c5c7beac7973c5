// agentcompile synth-model --preset P --out DIR [--seed N] [--dtype D] [--tokenizer DIR]
#include <cstdio>

#include "agentcompile/core/error.h"
#include "agentcompile/model/synth_model.h"
#include "cli/cli_common.h"

namespace ac::cli {

namespace {
struct SynthCliOptions {
  std::string preset, out, dtype = "bf16", tokenizer, weights;
  uint64_t seed = 0;
  bool quiet = false;
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
            SynthResult r = synth_model(so);
            std::printf("wrote %s: preset %s, %lld parameters, %llu bytes of %s weights\n", o->out.c_str(),
                        o->preset.c_str(), static_cast<long long>(r.parameters),
                        static_cast<unsigned long long>(r.bytes),
                        (std::string(dtype_user_name(so.dtype)) + (so.weights.empty() ? "" : " and " + so.weights)).c_str());
            return 0;
          }};
}

}  // namespace ac::cli
