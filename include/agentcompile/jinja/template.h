#pragma once
// A Jinja template engine for Hugging Face chat templates (src/jinja/). Its reference is the
// `@huggingface/jinja` npm package (the renderer of transformers.js): for every template and
// context, render() gives the bytes that package's Template.render gives, or both fail.
//
// Values are JSON (the context) plus what templates make while they run (namespaces, macros,
// loop objects, undefined). Templates are untrusted input: parsing and rendering are bounded in
// time (steps), memory (output bytes, value sizes) and depth (nesting, recursion), and every
// failure is BadInput with a one-line message naming the template and, where it applies, the
// line and column.
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "agentcompile/core/json.h"

namespace ac::jinja {

struct Limits {
  size_t max_source_bytes = size_t(1) << 20;   // template text
  size_t max_output_bytes = size_t(16) << 20;  // rendered text, and any one string value
  uint64_t max_steps = 20'000'000;             // evaluation steps in one render (loops, calls, ...)
  int max_depth = 256;                         // nesting of the syntax tree and of macro calls
  size_t max_memory_bytes = size_t(256) << 20;  // strings and containers alive during one render
};

// Rendering options as Hugging Face sets them for chat templates (trim_blocks and lstrip_blocks on).
struct Options {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
  // strftime_now(format): the local time, formatted; tests fix the clock with this.
  std::function<std::string(std::string_view format)> strftime_now;  // empty: the system clock
};

// strftime_now's formatting as the reference does it for `time`: %Y %m %d %H %M, %b and %B
// (English month names) and %%; any other directive stays as written.
std::string format_time_like_reference(std::string_view format, const std::tm& time);

// Parses JSON text for render_ordered: strict like ac::parse_json_strict, object keys in order.
nlohmann::ordered_json parse_json_ordered(std::string_view text, const std::string& subject, int max_depth = 64);

class Template {
 public:
  // Parses `source`; `name` is the subject of every error ("tokenizer_config.json: chat_template").
  static Template parse(std::string_view source, std::string name, Options options = {}, Limits limits = {});

  // Renders with the keys of `context` (a JSON object) as variables. raise_exception(msg) in the
  // template is BadInput whose reason holds msg.
  std::string render(const Json& context) const;
  // The same with a context whose objects keep the order their keys were written in (Python
  // and the reference keep it; nlohmann::json sorts keys). Keys that look like array indexes
  // ("0", "17") come first in numeric order, as in JavaScript.
  std::string render_ordered(const nlohmann::ordered_json& context) const;

  ~Template();
  Template(Template&&) noexcept;
  Template& operator=(Template&&) noexcept;

 private:
  struct Impl;
  explicit Template(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ac::jinja
