#include "agentcompile/model/synth_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "agentcompile/core/error.h"
#include "agentcompile/core/fp8.h"
#include "agentcompile/core/rng.h"
#include "agentcompile/core/threads.h"
#include "agentcompile/model/architecture.h"
#include "agentcompile/model/fp8_quantize.h"
#include "agentcompile/model/hf_config.h"
#include "agentcompile/model/safetensors.h"

namespace ac {

namespace {

constexpr size_t kChunk = size_t(1) << 20;  // elements per RNG stream; fixed so output ignores thread count

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// How a tensor is initialised: value = mean + std * z, z approximately standard normal.
struct Init {
  float mean;
  float std;
};

// Scales keep activations in a realistic range at every size: projections (experts and routers
// too) have unit gain (std 1/sqrt(fan_in)), norms sit near 1, and logits come out with a standard
// deviation of about 3 (as in trained models), neither flat nor one-hot.
Init init_for(const ExpectedTensor& t, const ModelConfig& c) {
  auto ends = [&](const char* suf) { return t.name.ends_with(suf); };
  const float h = float(c.hidden_size);
  if (t.name == "model.embed_tokens.weight") return {0.0f, c.tie_word_embeddings ? 3.0f / std::sqrt(h) : 1.0f};
  if (t.name == "lm_head.weight") return {0.0f, 3.0f / std::sqrt(h)};
  if (ends("norm.weight") || ends("layernorm.weight")) return {1.0f, 0.05f};
  if (ends(".bias")) return {0.0f, 0.1f};
  return {0.0f, 1.0f / std::sqrt(float(t.shape.back()))};  // [out, in]: fan_in = in
}

// Irwin-Hall with four 16-bit uniforms: mean 2, variance 1/3; rescaled to unit variance.
// One 64-bit draw per value, bounded tails (|z| <= 3.46); good enough for random weights.
inline float approx_normal(Rng& r) {
  uint64_t x = r.next_u64();
  float s = float(x & 0xffff) + float((x >> 16) & 0xffff) + float((x >> 32) & 0xffff) + float(x >> 48);
  return (s * (1.0f / 65536.0f) - 2.0f) * 1.7320508f;
}

// Values [base, base + n) of a tensor (base a multiple of kChunk): one RNG stream per kChunk
// elements, so the values do not depend on the thread count or on how the tensor is cut.
void generate(const Init& init, uint64_t tensor_seed, int64_t base, size_t n, float* out) {
  const size_t chunks = (n + kChunk - 1) / kChunk;
  parallel_for(chunks, 1, [&](size_t cb, size_t ce) {
    for (size_t c = cb; c < ce; ++c) {
      size_t first = c * kChunk, last = std::min(n, first + kChunk);
      Rng rng(tensor_seed + (uint64_t(base) + first) / kChunk * 0xd1b54a32d192ed03ull);
      for (size_t i = first; i < last; ++i) out[i] = init.mean + init.std * approx_normal(rng);
    }
  });
}

void write_all(std::FILE* f, const void* data, size_t n, const fs::path& path) {
  if (n != 0 && std::fwrite(data, 1, n, f) != n) throw_input(path.string(), "write failed (disk full?)");
}

// Largest token id named by a tokenizer.json (model vocab and added tokens), or -1.
int64_t tokenizer_max_id(const fs::path& tokenizer_json) {
  Json t = parse_json_strict(read_file(tokenizer_json, size_t(256) << 20), tokenizer_json.string());
  int64_t max_id = -1;
  if (t.contains("model") && t["model"].contains("vocab") && t["model"]["vocab"].is_object())
    for (const auto& v : t["model"]["vocab"])
      if (auto id = json_as_int(v, 0, INT64_MAX)) max_id = std::max(max_id, *id);
  if (t.contains("added_tokens") && t["added_tokens"].is_array())
    for (const auto& a : t["added_tokens"])
      if (a.is_object() && a.contains("id"))
        if (auto id = json_as_int(a["id"], 0, INT64_MAX)) max_id = std::max(max_id, *id);
  return max_id;
}

// Refuses a folder that cannot hold the weights (a 30B preset needs about 61 GB) before
// anything is written.
void check_free_space(const fs::path& staging, uint64_t bytes, const fs::path& out) {
  std::error_code ec;
  const fs::space_info sp = fs::space(staging, ec);
  const uint64_t margin = uint64_t(64) << 20;  // headers, configs, the tokenizer
  auto gb = [](uint64_t b) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f GB", double(b) / 1e9);
    return std::string(buf);
  };
  if (!ec && sp.available < bytes + margin)
    throw_input("--out " + out.string(),
                "the weights need " + gb(bytes) + ", the disk has " + gb(sp.available) + " free");
}

// synth-model --weights: which tensors are FP8, and their scales (fp8-block: 128x128 blocks of
// F32 weight_scale_inv, as Qwen's *-FP8; fp8-channel: a BF16 weight_scale per row, as llm-compressor).
struct Fp8Synth {
  explicit Fp8Synth(const SynthOptions& o)
      : on(!o.weights.empty()), block(o.weights == "fp8-block"), scale_dtype(fp8_scale_dtype(block)),
        suffix(block ? "weight_scale_inv" : "weight_scale") {}
  bool quantizes(const ExpectedTensor& t) const { return on && quantized_in_fp8(t.name, t.shape); }
  // The rows and columns one scale covers.
  std::pair<int64_t, int64_t> scale_block(const ExpectedTensor& t) const {
    return {fp8_scale_rows(block), fp8_scale_cols(block, t.shape[1])};
  }
  std::vector<int64_t> scale_shape(const ExpectedTensor& t) const {
    const auto [bo, bi] = scale_block(t);
    return {(t.shape[0] + bo - 1) / bo, (t.shape[1] + bi - 1) / bi};
  }
  std::string scale_name(const ExpectedTensor& t) const { return t.name.substr(0, t.name.size() - 6) + suffix; }
  // The tensor's bytes in the file, its scale's included.
  uint64_t bytes(const ExpectedTensor& t, DType dtype) const {
    uint64_t n = 1;
    for (int64_t d : t.shape) n *= uint64_t(d);
    if (!quantizes(t)) return n * dtype_size(dtype);
    const auto ss = scale_shape(t);
    return n + uint64_t(ss[0] * ss[1]) * dtype_size(scale_dtype);
  }
  bool on, block;
  DType scale_dtype;
  std::string suffix;
};

// A tensor's bytes, generated chunk by chunk from a stream seeded by its name (so they do not
// depend on the file it lands in, the thread count or whether it goes to a file at all), in
// pieces to `sink`; an FP8 weight is the 16-bit values quantized, its bytes then its scales'
// (to `scale_sink`).
template <class Sink, class ScaleSink>
void emit_tensor(const ExpectedTensor& t, const ModelConfig& cfg, const SynthOptions& opts, const Fp8Synth& fp8,
                 Sink&& sink, ScaleSink&& scale_sink) {
  const size_t es = dtype_size(opts.dtype);
  const size_t buf_elems = kChunk * 16;
  int64_t numel = 1;
  for (int64_t d : t.shape) numel *= d;
  std::vector<uint8_t> buf(std::min<size_t>(buf_elems, size_t(numel)) * es);
  const Init init = init_for(t, cfg);
  const uint64_t tensor_seed = opts.seed * 0x9e3779b97f4a7c15ull ^ fnv1a(t.name);
  if (fp8.quantizes(t)) {  // the whole weight: its scales' blocks span rows
    std::vector<float> w(static_cast<size_t>(numel));
    for (int64_t base = 0; base < numel; base += int64_t(buf_elems))
      generate(init, tensor_seed, base, size_t(std::min<int64_t>(int64_t(buf_elems), numel - base)), w.data() + base);
    for (auto& v : w) {  // as the 16-bit model stores it
      store_from_f32(buf.data(), opts.dtype, 0, v);
      v = load_as_f32(buf.data(), opts.dtype, 0);
    }
    std::vector<uint8_t> q, scales;
    const auto [bo, bi] = fp8.scale_block(t);
    quantize_fp8(w, t.shape[0], t.shape[1], bo, bi, fp8.scale_dtype, q, scales);
    sink(q.data(), q.size());
    scale_sink(scales.data(), scales.size());
    return;
  }
  std::vector<float> values(buf.size() / es);
  for (int64_t base = 0; base < numel; base += int64_t(buf_elems)) {
    size_t n = size_t(std::min<int64_t>(int64_t(buf_elems), numel - base));
    generate(init, tensor_seed, base, n, values.data());
    for (size_t i = 0; i < n; ++i) store_from_f32(buf.data(), opts.dtype, i, values[i]);
    sink(buf.data(), n * es);
  }
}

// One safetensors file of `tensors`: the header first (all shapes are known), then each tensor's
// bytes (emit_tensor).
void write_safetensors(const fs::path& st_path, const std::vector<ExpectedTensor>& tensors, const ModelConfig& cfg,
                       const SynthOptions& opts) {
  const Fp8Synth fp8(opts);
  std::vector<TensorToWrite> descr;
  for (const auto& t : tensors) {
    descr.push_back({t.name, fp8.quantizes(t) ? DType::F8_E4M3 : opts.dtype, t.shape, nullptr});
    if (fp8.quantizes(t)) descr.push_back({fp8.scale_name(t), fp8.scale_dtype, fp8.scale_shape(t), nullptr});
  }
  std::string header = safetensors_header_bytes(descr, {{"format", "pt"}});
  std::FILE* f = std::fopen(st_path.c_str(), "wb");
  if (f == nullptr) throw_input(st_path.string(), "cannot create");
  try {
    write_all(f, header.data(), header.size(), st_path);
    auto to_file = [&](const void* data, size_t n) { write_all(f, data, n, st_path); };
    for (const auto& t : tensors) {
      emit_tensor(t, cfg, opts, fp8, to_file, to_file);
      int64_t numel = 1;
      for (int64_t d : t.shape) numel *= d;
      if (!opts.quiet && numel > (int64_t(1) << 24))
        std::fprintf(stderr, "\r  wrote %s        ", t.name.c_str());
    }
    if (!opts.quiet) std::fprintf(stderr, "\r");
  } catch (...) {
    std::fclose(f);
    throw;
  }
  if (std::fclose(f) != 0) throw_input(st_path.string(), "write failed (disk full?)");
}

// model.safetensors, or with max_shard_bytes the shards and model.safetensors.index.json as HF's
// save_pretrained writes them: tensors in order, a new shard when the next one would pass the
// limit (a larger tensor gets a shard of its own).
void write_weights(const fs::path& dir, const std::vector<ExpectedTensor>& tensors, const ModelConfig& cfg,
                   const SynthOptions& opts) {
  if (opts.max_shard_bytes == 0) {
    write_safetensors(dir / "model.safetensors", tensors, cfg, opts);
    return;
  }
  std::vector<std::vector<ExpectedTensor>> shards(1);
  uint64_t in_shard = 0, total = 0;
  const Fp8Synth fp8(opts);
  for (const auto& t : tensors) {
    const uint64_t bytes = fp8.bytes(t, opts.dtype);
    if (!shards.back().empty() && in_shard + bytes > opts.max_shard_bytes) {
      shards.emplace_back();
      in_shard = 0;
    }
    shards.back().push_back(t);
    in_shard += bytes;
    total += bytes;
  }
  Json weight_map = Json::object();
  for (size_t i = 0; i < shards.size(); ++i) {
    char name[64];
    std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", i + 1, shards.size());
    write_safetensors(dir / name, shards[i], cfg, opts);
    for (const auto& t : shards[i]) {
      weight_map[t.name] = name;
      if (fp8.quantizes(t)) weight_map[fp8.scale_name(t)] = name;
    }
  }
  Json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
  write_file_atomic(dir / "model.safetensors.index.json", index.dump(2) + "\n");
}

}  // namespace

const FolderKind& synth_model_folder_kind() {
  static const FolderKind k{"synth-model", "agentcompile synth-model", {}};
  return k;
}

namespace {

// The preset's config.json as synth-model writes it (torch_dtype, and the quantization_config of
// --weights); bad options are one-line errors.
Json synth_config(const SynthOptions& opts, const SynthPreset*& preset) {
  preset = find_synth_preset(opts.preset);
  if (preset == nullptr) {
    std::string names;
    for (const auto& p : synth_presets()) names += (names.empty() ? "" : ", ") + p.name;
    throw_input("--preset", "unknown preset \"" + opts.preset + "\" (one of: " + names + ")");
  }
  if (!dtype_is_compute(opts.dtype)) throw_input("--dtype", "must be bf16, f16 or f32");
  Json config = preset->config;
  config["torch_dtype"] = std::string(dtype_torch_name(opts.dtype));
  if (opts.layers != 0) {
    const int64_t full = config.at("num_hidden_layers").get<int64_t>();
    if (opts.layers < 1 || opts.layers > full)
      throw_input("--layers", std::to_string(opts.layers) + " is not between 1 and the preset's " + std::to_string(full) +
                                  " layers");
    config["num_hidden_layers"] = opts.layers;
    if (config.contains("max_window_layers"))
      config["max_window_layers"] = std::min(opts.layers, config.at("max_window_layers").get<int64_t>());
  }
  // FP8 weights: the 16-bit model's values, quantized (so the same seed gives the model it quantizes).
  const bool fp8_block = opts.weights == "fp8-block", fp8_channel = opts.weights == "fp8-channel";
  if (!opts.weights.empty() && !fp8_block && !fp8_channel)
    throw_input("--weights", "\"" + opts.weights + "\" is not one of fp8-block, fp8-channel");
  if ((fp8_block || fp8_channel) && opts.dtype == DType::F32) throw_input("--weights", "FP8 weights go with a 16-bit --dtype");
  if (fp8_block)
    config["quantization_config"] = {{"quant_method", "fp8"}, {"fmt", "e4m3"}, {"activation_scheme", "dynamic"},
                                     {"weight_block_size", {kFp8Block, kFp8Block}}};
  if (fp8_channel)
    config["quantization_config"] = {
        {"quant_method", "compressed-tensors"},
        {"format", "float-quantized"},
        {"quantization_status", "compressed"},
        {"config_groups",
         {{"group_0",
           {{"targets", {"Linear"}},
            {"weights", {{"num_bits", 8}, {"type", "float"}, {"strategy", "channel"}, {"symmetric", true}, {"dynamic", false}}},
            {"input_activations", nullptr}}}}},
        {"ignore", {"lm_head"}}};
  return config;
}

}  // namespace

SynthResult synth_model(const SynthOptions& opts) {
  const SynthPreset* preset = nullptr;
  const Json config = synth_config(opts, preset);
  const ModelConfig cfg = parse_model_config(config, "preset " + preset->name);

  static const char* kTokenizerFiles[] = {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                                          "chat_template.jinja"};
  if (!opts.tokenizer_dir.empty()) {
    fs::path tj = opts.tokenizer_dir / "tokenizer.json";
    std::error_code ec;
    if (!fs::exists(tj, ec)) throw_input(tj.string(), "missing (--tokenizer needs a folder with tokenizer.json)");
    int64_t max_id = tokenizer_max_id(tj);
    if (max_id >= cfg.vocab_size)
      throw_input(tj.string(), "token id " + std::to_string(max_id) + " does not fit the preset's vocabulary of " +
                                   std::to_string(cfg.vocab_size));
  }

  StagingDir out(opts.out, synth_model_folder_kind());
  write_file_atomic(out.path() / "config.json", config.dump(2) + "\n");
  write_file_atomic(out.path() / "generation_config.json", preset->generation_config.dump(2) + "\n");
  if (!opts.tokenizer_dir.empty())
    for (const char* name : kTokenizerFiles) {
      std::error_code ec;
      fs::path src = opts.tokenizer_dir / name;
      if (!fs::exists(src, ec)) continue;
      fs::copy_file(src, out.path() / name, ec);
      if (ec) throw_input(src.string(), "cannot copy: " + ec.message());
    }

  SynthResult result;
  std::vector<ExpectedTensor> tensors = expected_tensors(cfg);
  for (const auto& t : tensors) {
    int64_t numel = 1;
    for (int64_t d : t.shape) numel *= d;
    result.parameters += numel;
    result.bytes += Fp8Synth(opts).bytes(t, opts.dtype);
  }
  if (!opts.config_only) {
    check_free_space(out.path(), result.bytes, opts.out);
    write_weights(out.path(), tensors, cfg, opts);
  }
  out.commit();
  return result;
}

std::unique_ptr<Model> synth_model_in_memory(const SynthOptions& opts) {
  const SynthPreset* preset = nullptr;
  const Json config = synth_config(opts, preset);
  const std::string subject = "preset " + preset->name + " seed " + std::to_string(opts.seed) + " (in memory)";
  auto m = std::make_unique<Model>();
  m->dir = subject;  // no folder: nothing is read from it (no tokenizer)
  m->config = parse_model_config(config, subject);
  m->store = WeightStore::in_memory(subject);
  const Fp8Synth fp8(opts);
  for (const ExpectedTensor& t : expected_tensors(m->config)) {
    std::vector<uint8_t> bytes, scales;
    bytes.reserve(size_t(fp8.bytes(t, opts.dtype)));
    emit_tensor(
        t, m->config, opts, fp8, [&](const void* d, size_t n) { bytes.insert(bytes.end(), (const uint8_t*)d, (const uint8_t*)d + n); },
        [&](const void* d, size_t n) { scales.insert(scales.end(), (const uint8_t*)d, (const uint8_t*)d + n); });
    TensorInfo info;
    info.name = t.name;
    info.dtype = fp8.quantizes(t) ? DType::F8_E4M3 : opts.dtype;
    info.shape = t.shape;
    if (fp8.quantizes(t)) {
      TensorInfo s;
      s.name = fp8.scale_name(t);
      s.dtype = fp8.scale_dtype;
      s.shape = fp8.scale_shape(t);
      m->store.replace_bytes(std::move(s), std::move(scales));
    }
    m->store.replace_bytes(std::move(info), std::move(bytes));
    if (!opts.quiet) std::fprintf(stderr, "\r  made %s        ", t.name.c_str());
  }
  if (!opts.quiet) std::fprintf(stderr, "\r");
  m->quant = parse_quantization_config(config, subject);
  m->dequant = dequantize_fp8_weights(m->store, m->quant);
  m->weights = bind_weights(m->config, m->store, &m->dequant);
  return m;
}

}  // namespace ac
