#pragma once
// JSON from untrusted files: strict parsing (valid UTF-8, bounded nesting depth, duplicate keys
// rejected) and typed field readers whose errors name the field.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace ac {

using Json = nlohmann::json;

struct JsonLimits {
  int max_depth = 64;
  // Longest array accepted; a format that only has short arrays sets it so that a file made of
  // one huge array cannot make the parser allocate many times the file's size.
  size_t max_array_size = SIZE_MAX;
};

// Throws Error(BadInput, subject, why) on malformed JSON, invalid UTF-8, a NUL byte, nesting
// deeper than limits.max_depth, an array longer than limits.max_array_size or an object with the
// same key twice. Time and memory are linear in the size of the text.
Json parse_json_strict(std::string_view text, const std::string& subject, JsonLimits limits = {});

// For parsers that consume nlohmann's SAX events themselves (the safetensors header):
// refuses a text holding a NUL byte (nlohmann would stop reading there, as if the text ended) ...
void json_reject_nul(std::string_view text, const std::string& subject);
// ... and turns a nlohmann exception text into one printable line: the "[json.exception...]"
// prefix dropped, bytes outside printable ASCII written as \xNN.
std::string json_error_text(std::string_view what);

// `s` as a JSON string literal for messages: quoted, control characters escaped, invalid UTF-8
// replaced, cut to about max_chars characters ("..." marks a cut). Strings from files go through it
// so that an error stays one printable line.
std::string json_quote(std::string_view s, size_t max_chars = 120);
// A JSON value for messages: its compact dump, cut like json_quote.
std::string json_brief(const Json& v, size_t max_chars = 80);

// Typed readers: `subject` names the file, `key` the field; a missing field or a wrong type is a
// BadInput error "subject: key: ...". Integers are range-checked into [lo, hi].
const Json& json_require(const Json& obj, const std::string& subject, const std::string& key);
int64_t json_int(const Json& obj, const std::string& subject, const std::string& key, int64_t lo, int64_t hi);
std::optional<int64_t> json_opt_int(const Json& obj, const std::string& subject, const std::string& key, int64_t lo,
                                    int64_t hi);
double json_number(const Json& obj, const std::string& subject, const std::string& key);
std::optional<double> json_opt_number(const Json& obj, const std::string& subject, const std::string& key);
std::string json_string(const Json& obj, const std::string& subject, const std::string& key);
std::optional<std::string> json_opt_string(const Json& obj, const std::string& subject, const std::string& key);
std::optional<bool> json_opt_bool(const Json& obj, const std::string& subject, const std::string& key);

// A JSON value as an integer in [lo, hi], or nullopt when it is not an integral number.
std::optional<int64_t> json_as_int(const Json& v, int64_t lo, int64_t hi);

}  // namespace ac
