#include "agentcompile/runtime/generation_defaults.h"

#include "agentcompile/core/json.h"

namespace ac {

SamplingParams load_sampling_defaults(const fs::path& model_dir) {
  SamplingParams p;
  fs::path path = model_dir / "generation_config.json";
  std::error_code ec;
  if (!fs::exists(path, ec)) return p;
  const std::string subject = path.string();
  Json j = parse_json_strict(read_file(path, 4u << 20), subject);
  if (!json_opt_bool(j, subject, "do_sample").value_or(false)) return p;
  p.temperature = float(json_opt_number(j, subject, "temperature").value_or(1.0));
  p.top_k = int(json_opt_int(j, subject, "top_k", 0, 1 << 30).value_or(0));
  p.top_p = float(json_opt_number(j, subject, "top_p").value_or(1.0));
  p.min_p = float(json_opt_number(j, subject, "min_p").value_or(0.0));
  validate_sampling(p);
  return p;
}

}  // namespace ac
