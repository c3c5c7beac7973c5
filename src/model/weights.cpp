#include "agentcompile/model/weights.h"

#include "agentcompile/core/error.h"
#include "agentcompile/core/json.h"

namespace ac {

namespace {
constexpr size_t kMaxIndexBytes = 64u << 20;

// Shard names come from a file we do not trust: plain file names only, no paths.
bool is_plain_file_name(const std::string& s) {
  return !s.empty() && s != "." && s != ".." && s.find('/') == std::string::npos &&
         s.find('\\') == std::string::npos && s.find('\0') == std::string::npos;
}
}  // namespace

void WeightStore::add_file(const fs::path& path, const std::set<std::string>* only) {
  files_.push_back(std::make_unique<SafetensorsFile>(path));
  paths_.push_back(path);
  for (const auto& t : files_.back()->header().tensors) {
    if (only != nullptr && only->count(t.name) == 0)
      throw_input(path.string(), "tensor \"" + t.name + "\" is not listed for this file in model.safetensors.index.json");
    auto [it, inserted] = by_name_.emplace(t.name, &t);
    if (!inserted)
      throw_input(path.string(), "tensor \"" + t.name + "\" is also stored in " + it->second->file);
  }
}

WeightStore WeightStore::open(const fs::path& dir) {
  WeightStore ws;
  fs::path index = dir / "model.safetensors.index.json";
  fs::path single = dir / "model.safetensors";
  std::error_code ec;
  if (fs::exists(index, ec)) {
    const std::string subject = index.string();
    Json j = parse_json_strict(read_file(index, kMaxIndexBytes), subject);
    const Json& map = json_require(j, subject, "weight_map");
    if (!map.is_object() || map.empty()) throw_input(subject, "weight_map: expected a non-empty object");
    std::map<std::string, std::set<std::string>> by_file;
    for (auto it = map.begin(); it != map.end(); ++it) {
      if (!it->is_string()) throw_input(subject, "weight_map: \"" + it.key() + "\": file name is not a string");
      std::string file = it->get<std::string>();
      if (!is_plain_file_name(file)) throw_input(subject, "weight_map: \"" + it.key() + "\": bad file name \"" + file + "\"");
      by_file[file].insert(it.key());
    }
    for (const auto& [file, names] : by_file) ws.add_file(dir / file, &names);
    for (auto it = map.begin(); it != map.end(); ++it)
      if (ws.by_name_.count(it.key()) == 0)
        throw_input(subject, "weight_map: tensor \"" + it.key() + "\" is not in " + it->get<std::string>());
  } else if (fs::exists(single, ec)) {
    ws.add_file(single, nullptr);
  } else {
    throw_input(dir.string(), "no model.safetensors or model.safetensors.index.json");
  }
  return ws;
}

const TensorInfo* WeightStore::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

}  // namespace ac
