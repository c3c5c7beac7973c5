#pragma once
// Tables of small templates for the comparison tests: each table is rendered with one shared
// context by both engines (reference_renderer.h).
#include <string>
#include <vector>

#include "reference_renderer.h"

namespace ac::test::jinja {

// Variables most snippets use: every JSON type, nesting, Unicode, and a chat conversation.
inline const char* const kContext = R"({
  "s": "Hello World", "e": "", "n": 42, "f": 3.5, "neg": -7, "z": 0, "t": true, "fl": false, "nul": null,
  "one": 1.0, "tiny": 1e-7, "huge": 1e21, "big": 12345678901234567890, "half": 0.5, "third": 0.3333333333333333,
  "l": [3, 1, 2], "ls": ["b", "A", "c", "a"], "el": [], "mixed": [1, "a", null, true, 2.5, [1, 2], {"k": "v"}],
  "d": {"b": 1, "a": 2, "10": 3, "2": 4}, "ed": {}, "nested": {"a": {"b": [1, {"c": "deep"}]}},
  "u": "héllo wörld ß 😀 Σ", "ws": "  \t pad \n ", "lines": "one\ntwo\n\nfour", "num_s": " 42abc", "flt_s": "3.25e1x",
  "people": [{"name": "bo", "age": 30, "tags": ["x"], "admin": true}, {"name": "Al", "age": 25, "admin": false},
             {"name": "cy", "age": 35, "info": {"city": "Oslo"}}],
  "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"},
               {"role": "assistant", "content": null, "tool_calls": [{"type": "function",
                 "function": {"name": "f", "arguments": {"a": 1, "b": "two"}}}]},
               {"role": "tool", "content": "done"}]
})";

inline std::vector<Case> with_context(const std::vector<std::string>& templates, const std::string& context = kContext) {
  std::vector<Case> cases;
  for (const std::string& t : templates) cases.push_back({t, context});
  return cases;
}

}  // namespace ac::test::jinja
