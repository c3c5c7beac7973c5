// Context JSON with object keys in the order they were written (the reference, like Python,
// keeps that order, and it shows in tojson and in dict iteration).
#include <set>
#include <vector>

#include "agentcompile/core/error.h"
#include "agentcompile/core/json.h"
#include "agentcompile/jinja/template.h"

namespace ac::jinja {

namespace {

using OJson = nlohmann::ordered_json;

// Builds the document from SAX events, rejecting duplicate keys and deep nesting as it goes.
class OrderedBuilder {
 public:
  explicit OrderedBuilder(int max_depth) : max_depth_(max_depth) {}
  OJson root;
  std::string failure;

  bool null() { return add(OJson(nullptr)); }
  bool boolean(bool v) { return add(OJson(v)); }
  bool number_integer(OJson::number_integer_t v) { return add(OJson(v)); }
  bool number_unsigned(OJson::number_unsigned_t v) { return add(OJson(v)); }
  bool number_float(OJson::number_float_t v, const OJson::string_t&) { return add(OJson(v)); }
  bool string(OJson::string_t& v) { return add(OJson(std::move(v))); }
  bool binary(OJson::binary_t&) { return fail("binary values are not JSON"); }
  bool start_object(std::size_t) { return open(OJson::object()); }
  bool start_array(std::size_t) { return open(OJson::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(OJson::string_t& k) {
    Frame& f = stack_.back();
    if (!f.keys.insert(k).second) return fail("duplicate key " + json_quote(k));
    f.key = std::move(k);
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& ex) {
    return fail(json_error_text(ex.what()));
  }

 private:
  struct Frame {
    OJson* node;
    std::string key;
    std::set<std::string> keys;
  };
  bool fail(std::string why) {
    if (failure.empty()) failure = std::move(why);
    return false;
  }
  OJson* place(OJson&& v) {
    if (stack_.empty()) {
      root = std::move(v);
      return &root;
    }
    Frame& f = stack_.back();
    if (f.node->is_array()) {
      f.node->push_back(std::move(v));
      return &f.node->back();
    }
    OJson& slot = (*f.node)[f.key];
    slot = std::move(v);
    return &slot;
  }
  bool add(OJson&& v) { return place(std::move(v)) != nullptr; }
  bool open(OJson&& container) {
    if (int(stack_.size()) >= max_depth_) return fail("JSON nested deeper than " + std::to_string(max_depth_) + " levels");
    OJson* node = place(std::move(container));
    stack_.push_back({node, {}, {}});
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }
  int max_depth_;
  std::vector<Frame> stack_;
};

}  // namespace

nlohmann::ordered_json parse_json_ordered(std::string_view text, const std::string& subject, int max_depth) {
  json_reject_nul(text, subject);
  OrderedBuilder b(max_depth);
  bool ok = OJson::sax_parse(text.begin(), text.end(), &b, OJson::input_format_t::json, /*strict=*/true,
                             /*ignore_comments=*/false);
  if (!ok || !b.failure.empty()) throw_input(subject, "invalid JSON: " + (b.failure.empty() ? "parse error" : b.failure));
  return std::move(b.root);
}

}  // namespace ac::jinja
