#include "agentcompile/model/safetensors.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "agentcompile/core/error.h"
#include "agentcompile/core/json.h"

namespace ac {

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;  // validated not to overflow at parse time
  return n;
}

std::string TensorInfo::shape_str() const {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

namespace {

uint64_t read_u64_le(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// A JSON value as a non-negative integer that fits in uint64 (offsets and dims are usize).
bool as_u64(const Json& v, uint64_t& out) {
  if (v.is_number_unsigned()) {
    out = v.get<uint64_t>();
    return true;
  }
  if (v.is_number_integer()) {
    int64_t x = v.get<int64_t>();
    if (x < 0) return false;
    out = static_cast<uint64_t>(x);
    return true;
  }
  return false;  // floats are not accepted for usize fields, as in the reference
}

TensorInfo parse_tensor_entry(const std::string& name, const Json& e, const std::string& subject) {
  const std::string where = subject + ": tensor " + json_quote(name);
  if (!e.is_object()) throw_input(where, "expected an object with dtype, shape and data_offsets");
  for (auto it = e.begin(); it != e.end(); ++it)
    if (it.key() != "dtype" && it.key() != "shape" && it.key() != "data_offsets")
      throw_input(where, "unknown field " + json_quote(it.key()));
  TensorInfo t;
  t.name = name;
  t.file = subject;

  auto dt = e.find("dtype");
  if (dt == e.end() || !dt->is_string()) throw_input(where, "dtype: missing or not a string");
  auto parsed = dtype_from_safetensors_name(dt->get<std::string>());
  if (!parsed) throw_input(where, "dtype: unknown dtype " + json_quote(dt->get<std::string>()));
  t.dtype = *parsed;

  auto sh = e.find("shape");
  if (sh == e.end() || !sh->is_array()) throw_input(where, "shape: missing or not an array");
  if (sh->size() > static_cast<size_t>(kSafetensorsMaxRank))
    throw_input(where, "shape: rank " + std::to_string(sh->size()) + " is more than " +
                           std::to_string(kSafetensorsMaxRank));
  uint64_t numel = 1;
  for (const Json& d : *sh) {
    uint64_t dim;
    if (!as_u64(d, dim)) throw_input(where, "shape: dimension " + json_brief(d) + " is not a non-negative integer");
    if (dim > uint64_t(INT64_MAX)) throw_input(where, "shape: dimension too large");
    if (dim != 0 && numel > UINT64_MAX / dim) throw_input(where, "shape: element count overflows");
    numel *= dim;
    t.shape.push_back(static_cast<int64_t>(dim));
  }
  if (numel > uint64_t(INT64_MAX)) throw_input(where, "shape: element count overflows");
  size_t es = dtype_size(t.dtype);
  if (numel > UINT64_MAX / es) throw_input(where, "shape: byte size overflows");
  uint64_t expected_bytes = numel * es;

  auto off = e.find("data_offsets");
  if (off == e.end() || !off->is_array() || off->size() != 2)
    throw_input(where, "data_offsets: expected [begin, end]");
  if (!as_u64((*off)[0], t.begin) || !as_u64((*off)[1], t.end))
    throw_input(where, "data_offsets: not non-negative integers");
  if (t.end < t.begin) throw_input(where, "data_offsets: end " + std::to_string(t.end) + " is before begin " +
                                              std::to_string(t.begin));
  if (t.end - t.begin != expected_bytes)
    throw_input(where, "data_offsets: " + std::to_string(t.end - t.begin) + " bytes, but shape " + t.shape_str() +
                           " of " + std::string(dtype_safetensors_name(t.dtype)) + " needs " +
                           std::to_string(expected_bytes));
  return t;
}

}  // namespace

SafetensorsHeader parse_safetensors(const uint8_t* data, size_t size, const std::string& subject) {
  if (size < 8) throw_input(subject, "file is " + std::to_string(size) + " bytes, too small for a safetensors header");
  uint64_t n = read_u64_le(data);
  if (n > kSafetensorsMaxHeaderBytes)
    throw_input(subject, "header length " + std::to_string(n) + " is more than the 100 MB limit");
  if (n > size - 8)
    throw_input(subject, "header length " + std::to_string(n) + " runs past the end of the file (" +
                             std::to_string(size) + " bytes)");
  std::string_view text(reinterpret_cast<const char*>(data + 8), static_cast<size_t>(n));
  if (text.empty() || text.front() != '{') throw_input(subject, "header does not start with '{'");
  // Trailing spaces are the format's padding; nlohmann accepts trailing whitespace. The only
  // arrays are shapes (rank <= 8) and offset pairs, so longer ones are cut off while parsing.
  Json header = parse_json_strict(text, subject + ": header", JsonLimits{.max_depth = 8, .max_array_size = 64});
  if (!header.is_object()) throw_input(subject, "header is not a JSON object");

  SafetensorsHeader out;
  out.data_offset = 8 + n;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (it->is_null()) continue;
      if (!it->is_object()) throw_input(subject, "__metadata__: expected an object of strings");
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (!m->is_string()) throw_input(subject, "__metadata__: value of " + json_quote(m.key()) + " is not a string");
        out.metadata[m.key()] = m->get<std::string>();
      }
      continue;
    }
    out.tensors.push_back(parse_tensor_entry(it.key(), *it, subject));
  }

  // Offsets must tile the data section exactly: sorted by (begin, end), each begins where the
  // previous ended, and the last ends where the file ends (no gap, overlap or trailing bytes).
  std::sort(out.tensors.begin(), out.tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t data_size = size - out.data_offset;
  uint64_t cursor = 0;
  for (auto& t : out.tensors) {
    if (t.begin != cursor) {
      throw_input(subject, "tensor " + json_quote(t.name) + ": data_offsets begin at " + std::to_string(t.begin) +
                               (t.begin < cursor ? ", overlapping the previous tensor (which ends at "
                                                 : ", leaving a gap after the previous tensor (which ends at ") +
                               std::to_string(cursor) + ")");
    }
    if (t.end > data_size)
      throw_input(subject, "tensor " + json_quote(t.name) + ": data ends at " + std::to_string(t.end) +
                               " but the file holds only " + std::to_string(data_size) + " data bytes (truncated?)");
    t.data = data + out.data_offset + t.begin;
    cursor = t.end;
  }
  if (cursor != data_size)
    throw_input(subject, "the tensors cover " + std::to_string(cursor) + " data bytes but the file holds " +
                             std::to_string(data_size) + " (trailing bytes)");
  return out;
}

SafetensorsFile::SafetensorsFile(const fs::path& path) : map_(path) {
  header_ = parse_safetensors(map_.data(), map_.size(), path.string());
  for (auto& t : header_.tensors) t.file = path.string();
}

std::string safetensors_header_bytes(const std::vector<TensorToWrite>& tensors,
                                     const std::map<std::string, std::string>& metadata) {
  Json h = Json::object();
  if (!metadata.empty()) h["__metadata__"] = metadata;
  uint64_t off = 0;
  for (const auto& t : tensors) {
    uint64_t numel = 1;
    for (int64_t d : t.shape) numel *= static_cast<uint64_t>(d);
    uint64_t bytes = numel * dtype_size(t.dtype);
    h[t.name] = {{"dtype", std::string(dtype_safetensors_name(t.dtype))},
                 {"shape", t.shape},
                 {"data_offsets", {off, off + bytes}}};
    off += bytes;
  }
  std::string json = h.dump();
  while (json.size() % 8 != 0) json.push_back(' ');
  std::string out(8, '\0');
  uint64_t n = json.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + json;
}

}  // namespace ac
