// libFuzzer target: the chat-template engine. The input is a template, a NUL byte, then the
// variables as JSON (without a NUL: a fixed sample conversation). Parsing and rendering must
// either succeed or fail with clean BadInput, within the limits: no crash, no sanitizer report,
// no runaway time or memory. A rendered output is valid UTF-8, within the output limit, and the
// same when rendered again.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "agentcompile/jinja/template.h"
#include "fuzz_common.h"

namespace {

constexpr std::string_view kSample =
    R"({"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": null, "tool_calls": [{"type": "function",
          "function": {"name": "f", "arguments": {"x": 1}}}]}, {"role": "tool", "content": "ok"}],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
        "add_generation_prompt": true, "bos_token": "<s>"})";

bool valid_utf8(const std::string& s) {
  try {
    (void)ac::Json(s).dump();
    return true;
  } catch (const ac::Json::exception&) {
    return false;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  std::string_view source = input, context_text = kSample;
  if (size_t nul = input.find('\0'); nul != std::string_view::npos) {
    source = input.substr(0, nul);
    context_text = input.substr(nul + 1);
  }
  ac::jinja::Limits limits;
  limits.max_steps = 200'000;
  limits.max_output_bytes = 1 << 20;
  limits.max_memory_bytes = 64 << 20;
  ac::jinja::Options options;
  options.strftime_now = [](std::string_view format) { return "[" + std::string(format.substr(0, 20)) + "]"; };
  try {
    nlohmann::ordered_json context = ac::jinja::parse_json_ordered(context_text, "context");
    ac::jinja::Template t = ac::jinja::Template::parse(source, "template", options, limits);
    std::string out = t.render_ordered(context);
    ac::fuzz::require(out.size() <= limits.max_output_bytes, "output over the limit");
    ac::fuzz::require(valid_utf8(out), "output is not valid UTF-8");
    ac::fuzz::require(t.render_ordered(context) == out, "a second render differs");
  } catch (const ac::Error& e) {
    ac::fuzz::check_rejection(e);
  }
  return 0;
}
