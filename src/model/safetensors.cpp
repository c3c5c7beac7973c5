#include "agentcompile/model/safetensors.h"

#include <algorithm>
#include <cstring>
#include <string_view>

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

// Reads the header straight from nlohmann's SAX events into TensorInfo. The format's grammar is
// fixed (an object of tensor entries plus an optional "__metadata__" object of strings), so no
// document is built: anything outside the grammar is refused where it appears, nesting cannot go
// deeper than shape arrays, and memory stays proportional to the tensors (a 100 MB header of tiny
// entries took 1.4 GB and 13 s as a DOM).
class HeaderReader {
 public:
  explicit HeaderReader(const std::string& subject) : subject_(subject) {}

  std::vector<TensorInfo> tensors;
  std::map<std::string, std::string> metadata;
  // The first defect: the subject it is about and what is wrong.
  std::string fail_subject, fail_reason;

  bool null() { return scalar(Value::Null, "null"); }
  bool boolean(bool v) { return scalar(Value::Other, v ? "true" : "false"); }
  bool number_integer(Json::number_integer_t v) {
    if (v >= 0) return unsigned_value(static_cast<uint64_t>(v));
    return scalar(Value::Other, std::to_string(v));
  }
  bool number_unsigned(Json::number_unsigned_t v) { return unsigned_value(v); }
  bool number_float(Json::number_float_t, const Json::string_t& text) { return scalar(Value::Other, text); }
  bool string(Json::string_t& v) {
    string_ = std::move(v);
    return scalar(Value::String, string_);
  }
  bool binary(Json::binary_t&) { return fail_json("binary values are not JSON"); }

  bool start_object(std::size_t) {
    switch (at_) {
      case At::Top: at_ = At::Root; return true;
      case At::Root:
        if (key_is_metadata_) {
          at_ = At::Metadata;
          return true;
        }
        tensors.emplace_back();
        tensors.back().name = std::move(key_);
        fields_ = 0;
        at_ = At::Entry;
        return true;
      default: return scalar(Value::Other, "an object");
    }
  }

  bool end_object() {
    switch (at_) {
      case At::Metadata: at_ = At::Root; return true;
      case At::Entry: at_ = At::Root; return finish_entry();
      default: at_ = At::Done; return true;  // the root
    }
  }

  bool start_array(std::size_t) {
    if (at_ == At::Entry && field_ == Field::Shape) {
      at_ = At::Shape;
      return true;
    }
    if (at_ == At::Entry && field_ == Field::Offsets) {
      at_ = At::Offsets;
      offsets_seen_ = 0;
      return true;
    }
    return scalar(Value::Other, "an array");
  }

  bool end_array() {
    at_ = At::Entry;
    return true;
  }

  bool key(Json::string_t& k) {
    last_key_ = k;
    switch (at_) {
      case At::Root:
        key_is_metadata_ = k == "__metadata__";
        if (key_is_metadata_ && metadata_seen_) return fail_json("duplicate key \"__metadata__\"");
        metadata_seen_ = metadata_seen_ || key_is_metadata_;
        key_ = std::move(k);
        return true;
      case At::Metadata:
        if (metadata.count(k)) return fail_json("duplicate key " + json_quote(k));
        key_ = std::move(k);
        return true;
      case At::Entry: {
        int bit;
        if (k == "dtype") field_ = Field::Dtype, bit = 1;
        else if (k == "shape") field_ = Field::Shape, bit = 2;
        else if (k == "data_offsets") field_ = Field::Offsets, bit = 4;
        else return fail_entry("unknown field " + json_quote(k));
        if (fields_ & bit) return fail_json("duplicate key " + json_quote(k));
        fields_ |= bit;
        return true;
      }
      default: return fail_json("unexpected key");
    }
  }

  bool parse_error(std::size_t, const std::string&, const Json::exception& ex) {
    std::string why = json_error_text(ex.what());
    if (!last_key_.empty()) why += " (after key " + json_error_text(json_quote(last_key_, 60)) + ")";
    return fail_json(why);
  }

 private:
  enum class At { Top, Root, Metadata, Entry, Shape, Offsets, Done };
  enum class Field { None, Dtype, Shape, Offsets };
  enum class Value { Null, String, Other };

  bool fail(std::string subject, std::string reason) {
    if (fail_reason.empty()) {
      fail_subject = std::move(subject);
      fail_reason = std::move(reason);
    }
    return false;
  }
  bool fail_json(const std::string& why) { return fail(subject_ + ": header", "invalid JSON: " + why); }
  std::string entry_subject() const { return subject_ + ": tensor " + json_quote(tensors.back().name); }
  bool fail_entry(std::string why) { return fail(entry_subject(), std::move(why)); }

  // A non-negative integer: a dimension or an offset where those are expected.
  bool unsigned_value(uint64_t v) {
    if (at_ == At::Shape) {
      TensorInfo& t = tensors.back();
      if (t.shape.size() == size_t(kSafetensorsMaxRank))
        return fail_entry("shape: rank " + std::to_string(t.shape.size() + 1) + " is more than " +
                          std::to_string(kSafetensorsMaxRank));
      if (v > uint64_t(INT64_MAX)) return fail_entry("shape: dimension too large");
      t.shape.push_back(static_cast<int64_t>(v));
      return true;
    }
    if (at_ == At::Offsets) {
      if (offsets_seen_ >= 2) return fail_entry("data_offsets: expected [begin, end]");
      (offsets_seen_ == 0 ? tensors.back().begin : tensors.back().end) = v;
      ++offsets_seen_;
      return true;
    }
    return scalar(Value::Other, std::to_string(v));
  }

  // Any value other than a non-negative integer in a shape or offsets; `text` is how it was
  // written (a string's raw contents).
  bool scalar(Value kind, std::string_view text) {
    switch (at_) {
      case At::Top: return fail(subject_, "header is not a JSON object");
      case At::Root:
        if (key_is_metadata_) {
          if (kind == Value::Null) return true;  // "__metadata__": null is allowed
          return fail(subject_, "__metadata__: expected an object of strings");
        }
        tensors.emplace_back();
        tensors.back().name = key_;
        return fail_entry("expected an object with dtype, shape and data_offsets");
      case At::Metadata:
        if (kind != Value::String)
          return fail(subject_, "__metadata__: value of " + json_quote(key_) + " is not a string");
        metadata.emplace(std::move(key_), std::move(string_));
        return true;
      case At::Entry:
        if (field_ == Field::Dtype) {
          if (kind != Value::String) return fail_entry("dtype: missing or not a string");
          auto dt = dtype_from_safetensors_name(string_);
          if (!dt) return fail_entry("dtype: unknown dtype " + json_quote(string_));
          tensors.back().dtype = *dt;
          return true;
        }
        if (field_ == Field::Shape) return fail_entry("shape: missing or not an array");
        return fail_entry("data_offsets: expected [begin, end]");
      case At::Shape:
        return fail_entry("shape: dimension " + (kind == Value::String ? json_quote(text) : std::string(text)) +
                          " is not a non-negative integer");
      case At::Offsets: return fail_entry("data_offsets: not non-negative integers");
      case At::Done: break;
    }
    return fail_json("unexpected value");
  }

  // All fields read: check them against each other with overflow-checked sizes.
  bool finish_entry() {
    TensorInfo& t = tensors.back();
    t.file = subject_;
    if (!(fields_ & 1)) return fail_entry("dtype: missing or not a string");
    if (!(fields_ & 2)) return fail_entry("shape: missing or not an array");
    if (!(fields_ & 4) || offsets_seen_ != 2) return fail_entry("data_offsets: expected [begin, end]");
    uint64_t numel = 1;
    for (int64_t d : t.shape) {
      uint64_t dim = static_cast<uint64_t>(d);
      if (dim != 0 && numel > UINT64_MAX / dim) return fail_entry("shape: element count overflows");
      numel *= dim;
    }
    if (numel > uint64_t(INT64_MAX)) return fail_entry("shape: element count overflows");
    const uint64_t es = dtype_size(t.dtype);
    if (numel > UINT64_MAX / es) return fail_entry("shape: byte size overflows");
    const uint64_t expected_bytes = numel * es;
    if (t.end < t.begin)
      return fail_entry("data_offsets: end " + std::to_string(t.end) + " is before begin " + std::to_string(t.begin));
    if (t.end - t.begin != expected_bytes)
      return fail_entry("data_offsets: " + std::to_string(t.end - t.begin) + " bytes, but shape " + t.shape_str() +
                        " of " + std::string(dtype_safetensors_name(t.dtype)) + " needs " +
                        std::to_string(expected_bytes));
    return true;
  }

  const std::string& subject_;
  At at_ = At::Top;
  Field field_ = Field::None;
  int fields_ = 0;           // bits: dtype 1, shape 2, data_offsets 4
  int offsets_seen_ = 0;
  bool key_is_metadata_ = false, metadata_seen_ = false;
  std::string key_, string_, last_key_;
};

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
  json_reject_nul(text, subject + ": header");
  // Trailing spaces are the format's padding; nlohmann accepts trailing whitespace.
  HeaderReader reader(subject);
  bool ok = Json::sax_parse(text.begin(), text.end(), &reader, Json::input_format_t::json, /*strict=*/true,
                            /*ignore_comments=*/false);
  if (!ok || !reader.fail_reason.empty())
    throw_input(reader.fail_reason.empty() ? subject : reader.fail_subject,
                reader.fail_reason.empty() ? "invalid header" : reader.fail_reason);

  SafetensorsHeader out;
  out.data_offset = 8 + n;
  out.tensors = std::move(reader.tensors);
  out.metadata = std::move(reader.metadata);

  // Duplicate names (JSON keys) are refused, as by the strict JSON reader.
  std::vector<const std::string*> names;
  names.reserve(out.tensors.size());
  for (const auto& t : out.tensors) names.push_back(&t.name);
  std::sort(names.begin(), names.end(), [](const std::string* a, const std::string* b) { return *a < *b; });
  for (size_t i = 1; i < names.size(); ++i)
    if (*names[i] == *names[i - 1]) throw_input(subject + ": header", "invalid JSON: duplicate key " + json_quote(*names[i]));

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
