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

ShardIndex parse_shard_index(std::string_view text, const std::string& subject) {
  // Only weight_map's object and "metadata" exist; arrays are never long in a real index.
  Json j = parse_json_strict(text, subject, JsonLimits{.max_depth = 16});
  const Json& map = json_require(j, subject, "weight_map");
  if (!map.is_object() || map.empty()) throw_input(subject, "weight_map: expected a non-empty object");
  ShardIndex idx;
  for (auto it = map.begin(); it != map.end(); ++it) {
    const std::string where = "weight_map: " + json_quote(it.key());
    if (!it->is_string()) throw_input(subject, where + ": file name is not a string");
    std::string file = it->get<std::string>();
    if (!is_plain_file_name(file)) throw_input(subject, where + ": bad file name " + json_quote(file));
    idx.tensors_in[file].insert(it.key());
    idx.file_of.emplace(it.key(), std::move(file));
  }
  return idx;
}

void WeightStore::add_file(const fs::path& path, const std::set<std::string>* only) {
  files_.push_back(std::make_unique<SafetensorsFile>(path));
  paths_.push_back(path);
  for (const auto& t : files_.back()->header().tensors) {
    if (only != nullptr && only->count(t.name) == 0)
      throw_input(path.string(), "tensor " + json_quote(t.name) + " is not listed for this file in model.safetensors.index.json");
    auto [it, inserted] = by_name_.emplace(t.name, &t);
    if (!inserted)
      throw_input(path.string(), "tensor " + json_quote(t.name) + " is also stored in " + it->second->file);
  }
}

WeightStore WeightStore::open(const fs::path& dir) {
  WeightStore ws;
  fs::path index = dir / "model.safetensors.index.json";
  fs::path single = dir / "model.safetensors";
  std::error_code ec;
  if (fs::exists(index, ec)) {
    ws.source_ = index;
    const std::string subject = index.string();
    ShardIndex idx = parse_shard_index(read_file(index, kMaxIndexBytes), subject);
    for (const auto& [file, names] : idx.tensors_in) {
      fs::path shard = dir / file;
      if (!fs::exists(shard, ec))
        throw_input(shard.string(), "cannot open: missing, but model.safetensors.index.json lists " +
                                        std::to_string(names.size()) + " tensors in it");
      ws.add_file(shard, &names);
    }
    for (const auto& [name, file] : idx.file_of)
      if (ws.by_name_.count(name) == 0)
        throw_input(subject, "weight_map: tensor " + json_quote(name) + " is not in " + file);
  } else if (fs::exists(single, ec)) {
    ws.source_ = single;
    ws.add_file(single, nullptr);
  } else {
    throw_input(dir.string(), "no model.safetensors or model.safetensors.index.json");
  }
  return ws;
}

WeightStore WeightStore::in_memory(const std::string& source) {
  WeightStore ws;
  ws.source_ = source;
  return ws;
}

void WeightStore::own(std::unique_ptr<Owned> o, const uint8_t* data, uint64_t nbytes) {
  o->info.begin = 0;
  o->info.end = nbytes;
  o->info.data = data;
  if (o->info.file.empty()) o->info.file = source_.string();
  by_name_[o->info.name] = &o->info;
  owned_.push_back(std::move(o));
}

void WeightStore::replace(TensorInfo info, std::vector<float> data) {
  auto o = std::make_unique<Owned>(Owned{std::move(info), std::move(data), {}});
  o->info.dtype = DType::F32;
  const uint8_t* p = reinterpret_cast<const uint8_t*>(o->data.data());
  const uint64_t n = o->data.size() * sizeof(float);
  own(std::move(o), p, n);
}

void WeightStore::replace_bytes(TensorInfo info, std::vector<uint8_t> bytes) {
  auto o = std::make_unique<Owned>(Owned{std::move(info), {}, std::move(bytes)});
  if (uint64_t(o->info.numel()) * dtype_size(o->info.dtype) != o->bytes.size())
    throw_internal("weights", "tensor " + o->info.name + ": " + std::to_string(o->bytes.size()) + " bytes for its shape");
  const uint8_t* p = o->bytes.data();
  const uint64_t n = o->bytes.size();
  own(std::move(o), p, n);
}

void WeightStore::drop(const std::string& name) { by_name_.erase(name); }

const TensorInfo* WeightStore::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

}  // namespace ac
