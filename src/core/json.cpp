#include "agentcompile/core/json.h"

#include <cmath>
#include <set>

#include "agentcompile/core/error.h"

namespace ac {

namespace {

// Tracks, per open container, the keys seen so far (arrays get an empty set). nlohmann's parser
// keeps the last of duplicate keys silently; the reference implementations reject them.
struct StrictState {
  std::vector<std::set<std::string>> keys;
  std::string failure;
};

}  // namespace

Json parse_json_strict(std::string_view text, const std::string& subject, JsonLimits limits) {
  StrictState st;
  Json::parser_callback_t cb = [&](int depth, Json::parse_event_t event, Json& parsed) -> bool {
    if (!st.failure.empty()) return false;
    switch (event) {
      case Json::parse_event_t::object_start:
      case Json::parse_event_t::array_start:
        if (depth >= limits.max_depth) {
          st.failure = "JSON nested deeper than " + std::to_string(limits.max_depth) + " levels";
          throw std::runtime_error(st.failure);
        }
        st.keys.emplace_back();
        break;
      case Json::parse_event_t::object_end:
      case Json::parse_event_t::array_end:
        if (!st.keys.empty()) st.keys.pop_back();
        break;
      case Json::parse_event_t::key:
        if (!st.keys.empty() && parsed.is_string()) {
          auto key = parsed.get<std::string>();
          if (!st.keys.back().insert(key).second) {
            st.failure = "duplicate key \"" + key + "\"";
            throw std::runtime_error(st.failure);
          }
        }
        break;
      case Json::parse_event_t::value:
        break;
    }
    return true;
  };
  try {
    return Json::parse(text.begin(), text.end(), cb, /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const Json::exception& e) {
    std::string why = e.what();
    // nlohmann messages look like "[json.exception.parse_error.101] parse error at line 1, ...": keep the tail.
    if (auto p = why.find("] "); p != std::string::npos) why = why.substr(p + 2);
    throw_input(subject, "invalid JSON: " + why);
  } catch (const std::runtime_error&) {
    throw_input(subject, "invalid JSON: " + st.failure);
  }
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
  if (!v.is_number()) throw_input(subject, key + ": expected an integer, got " + v.dump());
  auto x = json_as_int(v, INT64_MIN, INT64_MAX);
  if (!x) throw_input(subject, key + ": expected an integer, got " + v.dump());
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
  if (!v.is_number()) throw_input(subject, key + ": expected a number, got " + v.dump());
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
  if (!v.is_string()) throw_input(subject, key + ": expected a string, got " + v.dump());
  return v.get<std::string>();
}

std::optional<std::string> json_opt_string(const Json& obj, const std::string& subject, const std::string& key) {
  if (!obj.is_object() || !obj.contains(key) || obj.at(key).is_null()) return std::nullopt;
  return json_string(obj, subject, key);
}

std::optional<bool> json_opt_bool(const Json& obj, const std::string& subject, const std::string& key) {
  if (!obj.is_object() || !obj.contains(key) || obj.at(key).is_null()) return std::nullopt;
  const Json& v = obj.at(key);
  if (!v.is_boolean()) throw_input(subject, key + ": expected true or false, got " + v.dump());
  return v.get<bool>();
}

}  // namespace ac
