#pragma once
// The tensors of a model folder: one model.safetensors, or shards listed by
// model.safetensors.index.json. All files stay mapped for the lifetime of the store.
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "agentcompile/model/safetensors.h"

namespace ac {

// model.safetensors.index.json: which shard holds each tensor. Shard names must be plain file
// names inside the model folder (no paths, no ".."); errors name the index file and the entry.
struct ShardIndex {
  std::map<std::string, std::string> file_of;                // tensor -> shard file name
  std::map<std::string, std::set<std::string>> tensors_in;   // shard file name -> its tensors
};
ShardIndex parse_shard_index(std::string_view text, const std::string& subject);

class WeightStore {
 public:
  // Loads <dir>/model.safetensors.index.json (sharded) or <dir>/model.safetensors.
  static WeightStore open(const fs::path& dir);

  const TensorInfo* find(const std::string& name) const;
  const std::map<std::string, const TensorInfo*>& all() const { return by_name_; }
  const std::vector<fs::path>& files() const { return paths_; }
  // The file that says which tensors exist: the index when sharded, else model.safetensors.
  const fs::path& source() const { return source_; }

  // A store of tensors made in memory, none from a file (a synthetic model's weights made where
  // no disk could hold them); `source` names it in messages.
  static WeightStore in_memory(const std::string& source);

  // Tensors made at load (dequantized weights): `info` takes the place of the stored tensor of
  // its name, its data held by the store; drop() removes a stored tensor (a consumed scale).
  void replace(TensorInfo info, std::vector<float> data);
  // The same for bytes in info.dtype (a tensor of an in-memory store).
  void replace_bytes(TensorInfo info, std::vector<uint8_t> bytes);
  void drop(const std::string& name);

 private:
  void add_file(const fs::path& path, const std::set<std::string>* only);
  struct Owned {
    TensorInfo info;
    std::vector<float> data;      // replace()
    std::vector<uint8_t> bytes;   // replace_bytes()
  };
  void own(std::unique_ptr<Owned> o, const uint8_t* data, uint64_t nbytes);
  std::vector<std::unique_ptr<Owned>> owned_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::vector<fs::path> paths_;
  fs::path source_;
  std::map<std::string, const TensorInfo*> by_name_;
};

}  // namespace ac
