#include "agentcompile/model/quantization.h"

#include <regex>

#include "agentcompile/core/error.h"
#include "agentcompile/model/fp8_quantize.h"

namespace ac {

namespace {

constexpr size_t kMaxConfigBytes = 4u << 20;

std::string where(const std::string& key) { return "quantization_config." + key; }

std::vector<std::string> string_list(const Json& q, const std::string& key, const std::string& subject) {
  std::vector<std::string> out;
  auto it = q.find(key);
  if (it == q.end() || it->is_null()) return out;
  if (!it->is_array()) throw_input(subject, where(key) + ": expected a list of module names");
  for (const Json& e : *it) {
    if (!e.is_string()) throw_input(subject, where(key) + ": expected a list of module names");
    out.push_back(e.get<std::string>());
  }
  return out;
}

// Qwen / DeepSeek FP8: {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]}.
void parse_fp8(const Json& q, const std::string& subject, QuantConfig& out) {
  if (auto f = q.find("fmt"); f != q.end() && !(f->is_string() && f->get<std::string>() == "e4m3"))
    throw_input(subject, where("fmt") + ": " + f->dump() + " is not supported (only e4m3)");
  out.scale_suffix = "weight_scale_inv";
  auto b = q.find("weight_block_size");
  if (b == q.end() || b->is_null()) {  // per-tensor scales
    out.scheme = "tensor";
  } else {
    if (!b->is_array() || b->size() != 2 || !(*b)[0].is_number_integer() || !(*b)[1].is_number_integer() ||
        (*b)[0].get<int64_t>() < 1 || (*b)[1].get<int64_t>() < 1 || (*b)[0].get<int64_t>() > (1 << 20) ||
        (*b)[1].get<int64_t>() > (1 << 20))
      throw_input(subject, where("weight_block_size") + ": expected two positive integers, got " + b->dump());
    out.block_out = (*b)[0].get<int64_t>();
    out.block_in = (*b)[1].get<int64_t>();
    out.scheme = "block " + std::to_string(out.block_out) + "x" + std::to_string(out.block_in);
  }
  out.not_converted = string_list(q, "modules_to_not_convert", subject);
}

// llm-compressor: {"quant_method": "compressed-tensors", "format": "float-quantized",
// "config_groups": {"group_0": {"weights": {"num_bits": 8, "type": "float", "strategy": "channel"},
// "targets": ["Linear"]}}, "ignore": ["lm_head"]}.
void parse_compressed_tensors(const Json& q, const std::string& subject, QuantConfig& out) {
  const std::string format = q.value("format", std::string());
  auto groups = q.find("config_groups");
  if (groups == q.end() || !groups->is_object() || groups->empty())
    throw_input(subject, where("config_groups") + ": missing or empty");
  if (groups->size() != 1)
    throw_input(subject, where("config_groups") + ": " + std::to_string(groups->size()) +
                             " groups (only one weight scheme for every linear layer is supported)");
  const Json& g = groups->begin().value();
  const std::string gname = "config_groups." + groups->begin().key();
  const std::string gformat = g.is_object() ? g.value("format", format) : format;
  if (gformat != "float-quantized")
    throw_input(subject, where("format") + ": \"" + gformat + "\" is not supported (only \"float-quantized\", FP8 weights)");
  const Json* w = g.is_object() && g.contains("weights") ? &g["weights"] : nullptr;
  if (!w || !w->is_object()) throw_input(subject, where(gname + ".weights") + ": missing");
  if (w->value("num_bits", 0) != 8 || w->value("type", std::string()) != "float")
    throw_input(subject, where(gname + ".weights") + ": " + w->dump() + " is not 8-bit float weights");
  if (!w->value("symmetric", true)) throw_input(subject, where(gname + ".weights.symmetric") + ": asymmetric FP8 is not supported");
  const std::string strategy = w->value("strategy", std::string("tensor"));
  out.scale_suffix = "weight_scale";
  if (strategy == "channel") {
    out.block_out = 1;
    out.scheme = "channel";
  } else if (strategy == "tensor") {
    out.scheme = "tensor";
  } else if (strategy == "block") {
    const Json bs = w->value("block_structure", Json());
    if (!bs.is_array() || bs.size() != 2 || !bs[0].is_number_integer() || !bs[1].is_number_integer() ||
        bs[0].get<int64_t>() < 1 || bs[1].get<int64_t>() < 1)
      throw_input(subject, where(gname + ".weights.block_structure") + ": expected two positive integers");
    out.block_out = bs[0].get<int64_t>();
    out.block_in = bs[1].get<int64_t>();
    out.scheme = "block " + std::to_string(out.block_out) + "x" + std::to_string(out.block_in);
  } else {
    throw_input(subject, where(gname + ".weights.strategy") + ": \"" + strategy +
                             "\" is not supported (channel, tensor or block)");
  }
  out.not_converted = string_list(q, "ignore", subject);
}

// Whether the module of `weight` (its name without ".weight") is one the config keeps 16-bit.
bool kept_16bit(const QuantConfig& q, const std::string& weight) {
  const std::string module = weight.substr(0, weight.size() - std::string(".weight").size());
  for (const auto& e : q.not_converted) {
    if (e.starts_with("re:")) {
      try {
        if (std::regex_search(module, std::regex("^(?:" + e.substr(3) + ")"))) return true;
      } catch (const std::regex_error&) {
        continue;  // a pattern ECMAScript cannot read matches nothing
      }
    } else if (module == e || module.ends_with("." + e)) {
      return true;
    }
  }
  return false;
}

std::string shape_of(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

}  // namespace

std::string QuantConfig::describe() const {
  if (kind == Kind::None) return "none";
  return method + ": fp8 e4m3 weights" + (lm_head_fp8 ? " (the lm_head's too)" : "") + ", " + scheme +
         " scales (W8A16: dequantized weights, 16/32-bit activations)";
}

QuantConfig parse_quantization_config(const Json& config, const std::string& subject) {
  QuantConfig out;
  auto it = config.find("quantization_config");
  if (it == config.end() || it->is_null()) return out;
  if (!it->is_object()) throw_input(subject, "quantization_config: expected an object");
  const Json& q = *it;
  auto m = q.find("quant_method");
  if (m == q.end() || !m->is_string()) throw_input(subject, where("quant_method") + ": missing or not a string");
  out.method = m->get<std::string>();
  out.kind = QuantConfig::Kind::Fp8;
  if (out.method == "fp8") parse_fp8(q, subject, out);
  else if (out.method == "compressed-tensors") parse_compressed_tensors(q, subject, out);
  else
    throw_input(subject, where("quant_method") + ": \"" + out.method +
                             "\" is not supported (supported: fp8, compressed-tensors float-quantized FP8)");
  return out;
}

QuantConfig read_quantization_config(const fs::path& dir) {
  const fs::path path = dir / "config.json";
  return parse_quantization_config(parse_json_strict(read_file(path, kMaxConfigBytes), path.string()), path.string());
}

DequantStats dequantize_fp8_weights(WeightStore& store, const QuantConfig& q) {
  DequantStats stats;
  std::vector<const TensorInfo*> fp8;
  for (const auto& [name, t] : store.all()) {
    if (t->dtype == DType::F8_E5M2 || t->dtype == DType::F8_E8M0)
      throw_input(t->file, "tensor " + json_quote(name) + " has dtype " + std::string(dtype_safetensors_name(t->dtype)) +
                               " (FP8 weights must be F8_E4M3)");
    if (t->dtype == DType::F8_E4M3) fp8.push_back(t);
  }
  for (const TensorInfo* t : fp8) {
    const std::string& name = t->name;
    if (q.kind == QuantConfig::Kind::None)
      throw_input(t->file, "tensor " + json_quote(name) + " is F8_E4M3 but config.json has no quantization_config");
    if (!name.ends_with(".weight") || t->shape.size() != 2)
      throw_input(t->file, "tensor " + json_quote(name) + " is F8_E4M3 but not a linear layer's 2-D weight");
    if (kept_16bit(q, name))
      throw_input(t->file, "tensor " + json_quote(name) + " is F8_E4M3 but quantization_config keeps its module unquantized");
    const std::string base = name.substr(0, name.size() - std::string("weight").size());
    const std::string scale_name = base + q.scale_suffix;
    const TensorInfo* s = store.find(scale_name);
    if (!s) throw_input(store.source().string(), "FP8 weight " + json_quote(name) + " has no scale tensor " + json_quote(scale_name));
    if (s->dtype != DType::F32 && s->dtype != DType::BF16 && s->dtype != DType::F16)
      throw_input(s->file, "scale " + json_quote(scale_name) + " has dtype " + std::string(dtype_safetensors_name(s->dtype)) +
                               " (expected F32, BF16 or F16)");
    const int64_t out = t->shape[0], in = t->shape[1];
    const int64_t bo = q.block_out > 0 ? q.block_out : out, bi = q.block_in > 0 ? q.block_in : in;
    const int64_t so = (out + bo - 1) / bo, si = (in + bi - 1) / bi;
    // The scale's shape: [so, si]; a per-channel one may be [out] too, a per-tensor one [] or [1].
    const auto& ss = s->shape;
    const bool ok = (ss == std::vector<int64_t>{so, si}) || (si == 1 && ss == std::vector<int64_t>{so}) ||
                    (so == 1 && si == 1 && (ss.empty() || ss == std::vector<int64_t>{1}));
    if (!ok)
      throw_input(s->file, "scale " + json_quote(scale_name) + " has shape " + shape_of(ss) + ", expected " +
                               shape_of({so, si}) + " for weight " + shape_of(t->shape) + " with " + q.scheme + " scales");
    std::vector<float> w = dequantize_fp8(t->data, s->data, s->dtype, out, in, bo, bi);
    // The checkpoint's codes stay mapped; a per-tensor scale of shape [] holds one value too.
    stats.weights[name] = keep_fp8_weight(t->data, s->data, s->dtype, out, in, bo, bi, t->nbytes() + s->nbytes(), false);
    stats.tensors += 1;
    stats.stored_bytes += t->nbytes() + s->nbytes();
    stats.loaded_bytes += w.size() * sizeof(float);
    TensorInfo info = *t;
    store.drop(scale_name);
    store.drop(base + "input_scale");  // a static activation scale: activations stay unquantized
    store.replace(std::move(info), std::move(w));
  }
  return stats;
}

}  // namespace ac
