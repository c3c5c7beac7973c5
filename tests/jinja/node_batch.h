#pragma once
// Runs one of the reference scripts of tests/jinja (render_reference.js, apply_reference.js) on a
// batch: `node SCRIPT NPM_DIR REQUEST.json OUT.json`. The expected side of the chat-template
// tests always comes from here. A missing node or npm package fails the test: the comparisons
// must never pass without their reference.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "../tokenizer/reference_client.h"  // npm_dir, source_dir, TempDir, shell_quote

namespace ac::test {

using OrderedJson = nlohmann::ordered_json;

inline fs::path jinja_test_dir() { return source_dir() / "tests" / "jinja"; }

// Why the reference cannot run, or "" when it can.
inline std::string node_reference_missing() {
  if (std::system("command -v node >/dev/null 2>&1") != 0) return "node is not on PATH";
  for (const char* package : {"@huggingface/jinja", "@lenml/tokenizers"})
    if (!fs::exists(npm_dir() / package / "package.json"))
      return std::string("npm package ") + package + " is missing under " + npm_dir().string();
  return "";
}

inline std::string read_text_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The answers of `script` (a file of tests/jinja) to `request`; null after a test failure when
// the script cannot run or fails.
inline OrderedJson run_node_batch(const std::string& script, const OrderedJson& request) {
  if (std::string why = node_reference_missing(); !why.empty()) {
    ADD_FAILURE() << script << " cannot run (" << why << "): run scripts/install-deps.sh";
    return OrderedJson();
  }
  TempDir tmp;
  const fs::path req = tmp.path() / "request.json", out = tmp.path() / "out.json", err = tmp.path() / "stderr.txt";
  std::ofstream(req, std::ios::binary) << request.dump();
  const std::string cmd = "node " + shell_quote((jinja_test_dir() / script).string()) + " " +
                          shell_quote(npm_dir().string()) + " " + shell_quote(req.string()) + " " +
                          shell_quote(out.string()) + " 2> " + shell_quote(err.string());
  if (int rc = std::system(cmd.c_str()); rc != 0) {
    ADD_FAILURE() << script << " failed (status " << rc << "): " << read_text_file(err).substr(0, 2000);
    return OrderedJson();
  }
  return OrderedJson::parse(read_text_file(out));
}

}  // namespace ac::test
