#pragma once
// safetensors: an 8-byte little-endian header length, a JSON header naming each tensor's dtype,
// shape and [begin, end) offsets into the data section, then the data. Everything the reference
// implementation (huggingface/safetensors) validates is validated here, plus duplicate keys and a
// bounded JSON depth; tensor data may be unaligned (read it with memcpy / load_as_f32).
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "agentcompile/core/dtype.h"
#include "agentcompile/core/fs.h"

namespace ac {

struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;     // offsets into the data section
  const uint8_t* data = nullptr;   // begin of the bytes (inside a mapped file), possibly unaligned
  std::string file;                // the file that holds it (for messages)

  int64_t numel() const;
  uint64_t nbytes() const { return end - begin; }
  std::string shape_str() const;   // "[2048, 64]"
};

struct SafetensorsHeader {
  std::vector<TensorInfo> tensors;               // sorted by begin offset
  std::map<std::string, std::string> metadata;   // __metadata__
  uint64_t data_offset = 0;                      // 8 + header length
};

constexpr uint64_t kSafetensorsMaxHeaderBytes = 100'000'000;
constexpr int kSafetensorsMaxRank = 8;

// Validates a whole safetensors buffer; throws Error(BadInput, subject, ...) on any defect.
// Tensor data pointers point into `data`.
SafetensorsHeader parse_safetensors(const uint8_t* data, size_t size, const std::string& subject);

// A mapped, validated safetensors file.
class SafetensorsFile {
 public:
  explicit SafetensorsFile(const fs::path& path);
  const SafetensorsHeader& header() const { return header_; }
  const fs::path& path() const { return map_.path(); }

 private:
  MappedFile map_;
  SafetensorsHeader header_;
};

// Serialises tensors into the safetensors format (used by synth-model and the tests).
struct TensorToWrite {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  const void* data;  // numel * dtype_size bytes
};
// Returns the header bytes (8-byte length + JSON padded with spaces to a multiple of 8).
std::string safetensors_header_bytes(const std::vector<TensorToWrite>& tensors,
                                     const std::map<std::string, std::string>& metadata);

}  // namespace ac
