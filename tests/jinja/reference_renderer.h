#pragma once
// The reference side of the template engine's tests: tests/jinja/render_reference.js renders a
// whole batch of templates with @huggingface/jinja on node, in one process. Expected outputs
// always come from there, never from our own engine. A missing node or npm package fails the
// test that asked (the comparison must not pass without its reference).
#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "agentcompile/core/error.h"
#include "agentcompile/core/json.h"
#include "agentcompile/jinja/template.h"
#include "tokenizer/reference_client.h"  // TempDir, shell_quote, npm_dir, source_dir

namespace ac::test::jinja {

using ac::test::npm_dir;
using ac::test::shell_quote;
using ac::test::source_dir;
using ac::test::TempDir;

// The clock both sides read: the reference's strftime_now sees this instant (in UTC), ours the
// same broken-down time through Options::strftime_now.
inline constexpr const char* kNow = "2024-07-26T09:05:00Z";
inline ac::jinja::Options fixed_clock_options() {
  ac::jinja::Options o;
  o.strftime_now = [](std::string_view format) {
    std::tm t{};
    t.tm_year = 2024 - 1900;
    t.tm_mon = 6;
    t.tm_mday = 26;
    t.tm_hour = 9;
    t.tm_min = 5;
    return ac::jinja::format_time_like_reference(format, t);
  };
  return o;
}

// One template with its variables, as JSON text (both engines read the same text; ours keeps
// the key order written there).
struct Case {
  std::string source;
  std::string context = "{}";
};

// The reference's verdict on one case: the output, or that it failed (and its message).
struct Verdict {
  bool ok = false;
  std::string output;
  std::string error;
};

inline std::string read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// JavaScript strings may hold half a surrogate pair (s[i] can split an emoji), which JSON
// writes as a lone \udXXX escape and UTF-8 cannot hold. Such escapes become kLoneSurrogate, so
// that the case can still be judged: our engine fails there instead.
inline const std::string kLoneSurrogate = "<lone surrogate>";
inline std::string mark_lone_surrogates(const std::string& json) {
  auto hex_at = [&](size_t i) -> int {
    if (i + 6 > json.size() || json[i] != '\\' || json[i + 1] != 'u') return -1;
    return std::stoi(json.substr(i + 2, 4), nullptr, 16);
  };
  std::string out;
  for (size_t i = 0; i < json.size(); ++i) {
    if (json[i] == '\\' && i + 1 < json.size() && json[i + 1] != 'u') {
      out += json.substr(i, 2);
      ++i;
      continue;
    }
    int u = hex_at(i);
    if (u >= 0xd800 && u < 0xdc00 && hex_at(i + 6) >= 0xdc00 && hex_at(i + 6) < 0xe000) {
      out += json.substr(i, 12);
      i += 11;
    } else if (u >= 0xd800 && u < 0xe000) {
      out += kLoneSurrogate;
      i += 5;
    } else {
      out.push_back(json[i]);
    }
  }
  return out;
}

// Runs the reference on all cases at once; on failure to run it, ADD_FAILURE and an empty result.
inline std::vector<Verdict> render_reference(const std::vector<Case>& cases) {
  if (std::system("command -v node >/dev/null 2>&1") != 0) {
    ADD_FAILURE() << "node is not on PATH: the template reference cannot run (scripts/install-deps.sh)";
    return {};
  }
  if (!fs::exists(npm_dir() / "@huggingface" / "jinja" / "package.json")) {
    ADD_FAILURE() << "@huggingface/jinja is missing under " << npm_dir() << " (scripts/install-deps.sh)";
    return {};
  }
  TempDir tmp;
  const fs::path req = tmp.path() / "request.json", out = tmp.path() / "out.json", err = tmp.path() / "err.txt";
  {
    // The context text goes in verbatim, so that the reference sees the keys in the same order.
    std::string body = std::string("{\"now\":\"") + kNow + "\",\"cases\":[";
    for (size_t i = 0; i < cases.size(); ++i) {
      if (i) body += ",";
      body += "{\"template\":" + Json(cases[i].source).dump() + ",\"context\":" + cases[i].context + "}";
    }
    body += "]}";
    std::ofstream(req, std::ios::binary) << body;
  }
  const std::string script = (source_dir() / "tests" / "jinja" / "render_reference.js").string();
  const std::string cmd = "node " + shell_quote(script) + " " + shell_quote(npm_dir().string()) + " " +
                          shell_quote(req.string()) + " " + shell_quote(out.string()) + " 2> " + shell_quote(err.string());
  if (int rc = std::system(cmd.c_str()); rc != 0) {
    ADD_FAILURE() << "render_reference.js failed (" << rc << "): " << read_text(err).substr(0, 2000);
    return {};
  }
  Json results = Json::parse(mark_lone_surrogates(read_text(out)));
  std::vector<Verdict> verdicts;
  for (const Json& r : results) {
    Verdict v;
    v.ok = r.contains("output");
    if (v.ok) v.output = r["output"].get<std::string>();
    else v.error = r["error"].get<std::string>();
    verdicts.push_back(std::move(v));
  }
  if (verdicts.size() != cases.size()) {
    ADD_FAILURE() << "the reference answered " << verdicts.size() << " cases of " << cases.size();
    return {};
  }
  return verdicts;
}

// Ours, on the same case: the output, or the error message.
inline Verdict render_ours(const Case& c, ac::jinja::Limits limits = {}) {
  Verdict v;
  try {
    auto context = ac::jinja::parse_json_ordered(c.context, "context");
    auto t = ac::jinja::Template::parse(c.source, "template", fixed_clock_options(), limits);
    v.output = t.render_ordered(context);
    v.ok = true;
  } catch (const ac::Error& e) {
    v.error = e.what();
    if (e.kind() != ac::ErrorKind::BadInput) v.error = "NOT BAD INPUT: " + v.error;
  }
  return v;
}

inline std::string excerpt(const std::string& s, size_t n = 300) {
  std::string e = Json(s.substr(0, n)).dump(-1, ' ', false, Json::error_handler_t::replace);
  return e + (s.size() > n ? "... (" + std::to_string(s.size()) + " bytes)" : "");
}

// Renders every case on both sides and expects the same bytes, or a failure on both. Returns
// how many cases the reference rendered (rather than failed).
inline size_t expect_same_as_reference(const std::vector<Case>& cases) {
  std::vector<Verdict> expected = render_reference(cases);
  if (expected.empty() && !cases.empty()) return 0;  // already a failure
  size_t rendered = 0;
  size_t failures = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    Verdict got = render_ours(c);
    const Verdict& want = expected[i];
    rendered += want.ok;
    const bool lone = want.ok && want.output.find(kLoneSurrogate) != std::string::npos;
    const bool same = lone ? !got.ok && got.error.find("surrogate") != std::string::npos
                           : got.ok == want.ok && (!got.ok || got.output == want.output) &&
                                 got.error.rfind("NOT BAD INPUT", 0) != 0;
    if (!same && ++failures <= 40) {
      ADD_FAILURE() << "case " << i << ": " << excerpt(c.source) << "\n  context: " << excerpt(c.context, 200)
                    << "\n  reference: " << (want.ok ? "output " + excerpt(want.output) : "error: " + want.error)
                    << "\n  ours:      " << (got.ok ? "output " + excerpt(got.output) : "error: " + got.error);
    }
  }
  if (failures > 40) ADD_FAILURE() << failures << " cases differ in all";
  return rendered;
}

}  // namespace ac::test::jinja
