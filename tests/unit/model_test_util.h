#pragma once
// Helpers shared by the model-import tests: safetensors bytes written by hand (not by the writer
// under test), a list of HF tensor names written from the HF model code (not from
// expected_tensors), temporary folders, and a check that a call fails with BadInput naming things.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "agentcompile/core/dtype.h"
#include "agentcompile/core/error.h"
#include "agentcompile/core/fs.h"
#include "agentcompile/core/json.h"

namespace ac::test {

// Little-endian u64 followed by the header text padded with spaces to `pad_to`, then the data.
inline std::string st_bytes(std::string header, const std::string& data = "", size_t pad_to = 8) {
  while (pad_to > 1 && header.size() % pad_to != 0) header.push_back(' ');
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + data;
}

// The 8-byte length field alone.
inline std::string u64_le(uint64_t n) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out;
}

// The values every test tensor holds: exact in bf16, f16 and f32.
inline float pattern_value(const std::string& name, size_t i) {
  return float(int((7 * i + name.size()) % 13) - 6) / 8.0f;
}

struct TestTensor {
  std::string name;
  std::string dtype;  // safetensors spelling
  std::vector<int64_t> shape;
  std::string bytes;  // empty: filled with pattern_value in `dtype`
};

inline int64_t numel_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// A whole safetensors file: tensors laid out in the given order, header padded to pad_to.
inline std::string st_file(std::vector<TestTensor> tensors, const std::string& metadata_json = "",
                           size_t pad_to = 8) {
  std::string header = "{";
  if (!metadata_json.empty()) header += "\"__metadata__\":" + metadata_json;
  std::string data;
  for (auto& t : tensors) {
    if (t.bytes.empty()) {
      DType dt = *dtype_from_safetensors_name(t.dtype);
      size_t n = size_t(numel_of(t.shape));
      t.bytes.assign(n * dtype_size(dt), '\0');
      if (dtype_is_compute(dt))
        for (size_t i = 0; i < n; ++i) store_from_f32(t.bytes.data(), dt, i, pattern_value(t.name, i));
    }
    if (header.size() > 1) header += ",";
    std::string shape;
    for (size_t i = 0; i < t.shape.size(); ++i) shape += (i ? "," : "") + std::to_string(t.shape[i]);
    header += "\"" + t.name + "\":{\"dtype\":\"" + t.dtype + "\",\"shape\":[" + shape + "],\"data_offsets\":[" +
              std::to_string(data.size()) + "," + std::to_string(data.size() + t.bytes.size()) + "]}";
    data += t.bytes;
  }
  return st_bytes(header + "}", data, pad_to);
}

// A small model config, varied per test.
struct TinyShape {
  std::string model_type = "llama";
  int64_t hidden = 8, intermediate = 16, layers = 1, heads = 2, kv_heads = 1, head_dim = 4, vocab = 16;
  bool tied = true;
  bool attention_bias = false;  // llama / qwen3 config flag
};

inline Json tiny_config(const TinyShape& s) {
  return Json{{"model_type", s.model_type},
              {"hidden_size", s.hidden},
              {"intermediate_size", s.intermediate},
              {"num_hidden_layers", s.layers},
              {"num_attention_heads", s.heads},
              {"num_key_value_heads", s.kv_heads},
              {"head_dim", s.head_dim},
              {"vocab_size", s.vocab},
              {"max_position_embeddings", 64},
              {"rms_norm_eps", 1e-6},
              {"rope_theta", 10000.0},
              {"attention_bias", s.attention_bias},
              {"tie_word_embeddings", s.tied},
              {"eos_token_id", 2}};
}

// The tensors of a tiny model as HF's LlamaForCausalLM / Qwen2ForCausalLM / Qwen3ForCausalLM
// declare them (modeling_llama.py, modeling_qwen2.py, modeling_qwen3.py).
inline std::vector<TestTensor> tiny_tensors(const TinyShape& s, const std::string& dtype = "BF16") {
  const int64_t h = s.hidden, q = s.heads * s.head_dim, kv = s.kv_heads * s.head_dim, f = s.intermediate;
  const bool qkv_bias = s.model_type == "qwen2" || s.attention_bias;
  const bool o_bias = s.model_type != "qwen2" && s.attention_bias;
  std::vector<TestTensor> t = {{"model.embed_tokens.weight", dtype, {s.vocab, h}, ""}};
  for (int64_t i = 0; i < s.layers; ++i) {
    std::string p = "model.layers." + std::to_string(i) + ".";
    t.push_back({p + "input_layernorm.weight", dtype, {h}, ""});
    t.push_back({p + "self_attn.q_proj.weight", dtype, {q, h}, ""});
    t.push_back({p + "self_attn.k_proj.weight", dtype, {kv, h}, ""});
    t.push_back({p + "self_attn.v_proj.weight", dtype, {kv, h}, ""});
    t.push_back({p + "self_attn.o_proj.weight", dtype, {h, q}, ""});
    if (qkv_bias) {
      t.push_back({p + "self_attn.q_proj.bias", dtype, {q}, ""});
      t.push_back({p + "self_attn.k_proj.bias", dtype, {kv}, ""});
      t.push_back({p + "self_attn.v_proj.bias", dtype, {kv}, ""});
    }
    if (o_bias) t.push_back({p + "self_attn.o_proj.bias", dtype, {h}, ""});
    if (s.model_type == "qwen3") {
      t.push_back({p + "self_attn.q_norm.weight", dtype, {s.head_dim}, ""});
      t.push_back({p + "self_attn.k_norm.weight", dtype, {s.head_dim}, ""});
    }
    t.push_back({p + "post_attention_layernorm.weight", dtype, {h}, ""});
    t.push_back({p + "mlp.gate_proj.weight", dtype, {f, h}, ""});
    t.push_back({p + "mlp.up_proj.weight", dtype, {f, h}, ""});
    t.push_back({p + "mlp.down_proj.weight", dtype, {h, f}, ""});
  }
  t.push_back({"model.norm.weight", dtype, {h}, ""});
  if (!s.tied) t.push_back({"lm_head.weight", dtype, {s.vocab, h}, ""});
  return t;
}

inline int64_t total_numel(const std::vector<TestTensor>& ts) {
  int64_t n = 0;
  for (const auto& t : ts) n += numel_of(t.shape);
  return n;
}

// A fresh folder under the system temp dir, removed with everything in it at scope exit.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "ac-test-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }
  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

inline void write_bytes(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  write_file_atomic(path, bytes);
}

// Runs fn, which must throw ac::Error of kind BadInput whose message contains every needle;
// returns the message (empty when the check failed).
inline std::string expect_bad_input(const std::function<void()>& fn, std::initializer_list<std::string> needles) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadInput) << e.what();
    std::string msg = e.what();
    for (const auto& n : needles) EXPECT_NE(msg.find(n), std::string::npos) << "\"" << n << "\" not in: " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "multi-line message: " << msg;
    return msg;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected ac::Error, got std::exception: " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected a BadInput error, nothing was thrown";
  return "";
}

}  // namespace ac::test
