#pragma once
// The tensors of a model folder: one model.safetensors, or shards listed by
// model.safetensors.index.json. All files stay mapped for the lifetime of the store.
#include <map>
#include <set>
#include <memory>
#include <string>
#include <vector>

#include "agentcompile/model/safetensors.h"

namespace ac {

class WeightStore {
 public:
  // Loads <dir>/model.safetensors.index.json (sharded) or <dir>/model.safetensors.
  static WeightStore open(const fs::path& dir);

  const TensorInfo* find(const std::string& name) const;
  const std::map<std::string, const TensorInfo*>& all() const { return by_name_; }
  const std::vector<fs::path>& files() const { return paths_; }

 private:
  void add_file(const fs::path& path, const std::set<std::string>* only);
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::vector<fs::path> paths_;
  std::map<std::string, const TensorInfo*> by_name_;
};

}  // namespace ac
