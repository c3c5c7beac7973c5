#include "agentcompile/core/json.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "agentcompile/core/error.h"

namespace ac {

namespace {

// Builds the document from nlohmann's SAX events. nlohmann's own callback parser rescans the
// parent container each time an object closes (quadratic: a header of 100k tensors took minutes);
// this builder is linear and applies the limits as it goes, before anything large is allocated.
class StrictBuilder {
 public:
  explicit StrictBuilder(JsonLimits limits) : limits_(limits) {}

  Json root;
  std::string failure;    // what was wrong; empty when the text is valid
  std::string last_key;   // the last object key read, to say where an error is

  bool null() { return add(Json(nullptr)) != nullptr; }
  bool boolean(bool v) { return add(Json(v)) != nullptr; }
  bool number_integer(Json::number_integer_t v) { return add(Json(v)) != nullptr; }
  bool number_unsigned(Json::number_unsigned_t v) { return add(Json(v)) != nullptr; }
  bool number_float(Json::number_float_t v, const Json::string_t&) { return add(Json(v)) != nullptr; }
  bool string(Json::string_t& v) { return add(Json(std::move(v))) != nullptr; }
  bool binary(Json::binary_t&) { return fail("binary values are not JSON"); }
  bool start_object(std::size_t) { return open(Json::object()); }
  bool start_array(std::size_t) { return open(Json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(Json::string_t& k) {
    Frame& f = stack_.back();
    if (f.node->contains(k)) return fail("duplicate key " + json_quote(k));
    last_key = k;
    f.key = std::move(k);
    return true;
  }

  bool parse_error(std::size_t, const std::string&, const Json::exception& ex) { return fail(json_error_text(ex.what())); }

 private:
  struct Frame {
    Json* node;
    std::string key;  // the key whose value comes next (objects)
  };

  bool fail(std::string why) {
    if (failure.empty()) failure = std::move(why);
    return false;
  }

  // Places a value in the open container (or as the root); returns where it now lives.
  Json* add(Json&& v) {
    if (stack_.empty()) {
      root = std::move(v);
      return &root;
    }
    Frame& f = stack_.back();
    if (f.node->is_array()) {
      auto& arr = f.node->get_ref<Json::array_t&>();
      if (arr.size() >= limits_.max_array_size) {
        fail("array longer than " + std::to_string(limits_.max_array_size) + " elements" +
             (last_key.empty() ? "" : " (near key " + json_quote(last_key) + ")"));
        return nullptr;
      }
      arr.push_back(std::move(v));
      return &arr.back();
    }
    auto& obj = f.node->get_ref<Json::object_t&>();
    return &obj.emplace(std::move(f.key), std::move(v)).first->second;
  }

  bool open(Json&& container) {
    if (stack_.size() >= static_cast<size_t>(std::max(limits_.max_depth, 0)))
      return fail("JSON nested deeper than " + std::to_string(limits_.max_depth) + " levels");
    Json* node = add(std::move(container));
    if (node == nullptr) return false;
    // Parents never grow while a child is open, so this pointer stays valid until close().
    stack_.push_back({node, {}});
    return true;
  }

  bool close() {
    stack_.pop_back();
    return true;
  }

  JsonLimits limits_;
  std::vector<Frame> stack_;
};

// Bytes outside printable ASCII written as \xNN (nlohmann quotes the raw bytes it choked on,
// which may be invalid UTF-8 or control characters).
std::string printable(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f) {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[5];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

std::string cut(std::string s, size_t max_chars) {
  if (s.size() > max_chars) {
    s.resize(max_chars);
    // Do not leave half a UTF-8 sequence behind.
    while (!s.empty() && (static_cast<unsigned char>(s.back()) & 0xc0) == 0x80) s.pop_back();
    if (!s.empty() && static_cast<unsigned char>(s.back()) >= 0xc0) s.pop_back();
    s += "...";
  }
  return s;
}

}  // namespace

void json_reject_nul(std::string_view text, const std::string& subject) {
  // nlohmann stops reading at a NUL byte as if the text ended there; JSON has no raw NULs.
  if (auto p = text.find('\0'); p != std::string_view::npos)
    throw_input(subject, "invalid JSON: NUL byte at offset " + std::to_string(p));
}

std::string json_error_text(std::string_view what) {
  // "[json.exception.parse_error.101] parse error at line 1, ...": keep the tail.
  if (what.starts_with("[json.exception."))
    if (auto p = what.find("] "); p != std::string_view::npos) what = what.substr(p + 2);
  // nlohmann quotes the token it was reading, which may be the whole of a long string.
  return cut(printable(what), 300);
}

Json parse_json_strict(std::string_view text, const std::string& subject, JsonLimits limits) {
  json_reject_nul(text, subject);
  StrictBuilder b(limits);
  bool ok = Json::sax_parse(text.begin(), text.end(), &b, Json::input_format_t::json, /*strict=*/true,
                            /*ignore_comments=*/false);
  if (!ok || !b.failure.empty()) {
    std::string why = b.failure.empty() ? "parse error" : b.failure;
    if (!b.last_key.empty() && why.find("near key") == std::string::npos && !why.starts_with("duplicate key"))
      why += " (after key " + json_quote(b.last_key, 60) + ")";
    throw_input(subject, "invalid JSON: " + cut(printable(why), 400));
  }
  return std::move(b.root);
}

std::string json_quote(std::string_view s, size_t max_chars) {
  std::string q = Json(cut(std::string(s), max_chars)).dump(-1, ' ', false, Json::error_handler_t::replace);
  return q;
}

std::string json_brief(const Json& v, size_t max_chars) {
  return cut(v.dump(-1, ' ', false, Json::error_handler_t::replace), max_chars);
}

const Json& json_require(const Json& obj, const std::string& subject, const std::string& key) {
  if (!obj.is_object()) throw_input(subject, "expected a JSON object");
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) throw_input(subject, key + ": missing");
  return *it;
}

std::optional<int64_t> json_as_int(const Json& v, int64_t lo, int64_t hi) {
  int64_t x;
  if (v.is_number_integer()) {
    if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX)) return std::nullopt;
    x = v.get<int64_t>();
  } else if (v.is_number_float()) {
    double d = v.get<double>();
    if (!std::isfinite(d) || d != std::floor(d) || d < -9.0e18 || d > 9.0e18) return std::nullopt;
    x = static_cast<int64_t>(d);
  } else {
    return std::nullopt;
  }
  if (x < lo || x > hi) return std::nullopt;
  return x;
}

int64_t json_int(const Json& obj, const std::string& subject, const std::string& key, int64_t lo, int64_t hi) {
  const Json& v = json_require(obj, subject, key);
  if (!v.is_number()) throw_input(subject, key + ": expected an integer, got " + json_brief(v));
  auto x = json_as_int(v, INT64_MIN, INT64_MAX);
  if (!x) throw_input(subject, key + ": expected an integer, got " + json_brief(v));
  if (*x < lo || *x > hi)
    throw_input(subject, key + ": " + std::to_string(*x) + " is out of range [" + std::to_string(lo) + ", " +
                             std::to_string(hi) + "]");
  return *x;
}

std::optional<int64_t> json_opt_int(const Json& obj, const std::string& subject, const std::string& key, int64_t lo,
                                    int64_t hi) {
  if (!obj.is_object() || !obj.contains(key) || obj.at(key).is_null()) return std::nullopt;
  return json_int(obj, subject, key, lo, hi);
}

double json_number(const Json& obj, const std::string& subject, const std::string& key) {
  const Json& v = json_require(obj, subject, key);
  if (!v.is_number()) throw_input(subject, key + ": expected a number, got " + json_brief(v));
  double d = v.get<double>();
  if (!std::isfinite(d)) throw_input(subject, key + ": not a finite number");
  return d;
}

std::optional<double> json_opt_number(const Json& obj, const std::string& subject, const std::string& key) {
  if (!obj.is_object() || !obj.contains(key) || obj.at(key).is_null()) return std::nullopt;
  return json_number(obj, subject, key);
}

std::string json_string(const Json& obj, const std::string& subject, const std::string& key) {
  const Json& v = json_require(obj, subject, key);
  if (!v.is_string()) throw_input(subject, key + ": expected a string, got " + json_brief(v));
  return v.get<std::string>();
}

std::optional<std::string> json_opt_string(const Json& obj, const std::string& subject, const std::string& key) {
  if (!obj.is_object() || !obj.contains(key) || obj.at(key).is_null()) return std::nullopt;
  return json_string(obj, subject, key);
}

std::optional<bool> json_opt_bool(const Json& obj, const std::string& subject, const std::string& key) {
  if (!obj.is_object() || !obj.contains(key) || obj.at(key).is_null()) return std::nullopt;
  const Json& v = obj.at(key);
  if (!v.is_boolean()) throw_input(subject, key + ": expected true or false, got " + json_brief(v));
  return v.get<bool>();
}

}  // namespace ac
