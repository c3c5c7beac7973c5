// libFuzzer target: a whole model folder through load_model (config, weights, binding). The input
// is split: two little-endian bytes give the length of config.json, the rest is model.safetensors.
// Both are written to a private temporary folder per process, under $TMPDIR (the smoke script
// points it into build-fuzz and removes it: libFuzzer ends without running exit handlers). An accepted model must have every
// expected tensor bound, inside its file, and a parameter count equal to their sizes.
#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "agentcompile/model/model.h"
#include "fuzz_common.h"

namespace {

const ac::fs::path& work_dir() {
  static const ac::fs::path dir = [] {
    std::string tmpl = (ac::fs::temp_directory_path() / "ac-fuzz-model-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) ac::fuzz::finding("mkdtemp failed");
    std::atexit([] {
      std::error_code ec;
      ac::fs::remove_all(work_dir(), ec);
    });
    return ac::fs::path(tmpl);
  }();
  return dir;
}

void put(const ac::fs::path& path, const uint8_t* data, size_t size) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) ac::fuzz::finding("cannot write " + path.string());
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::write(fd, data + done, size - done);
    if (n <= 0) ac::fuzz::finding("write failed");
    done += size_t(n);
  }
  ::close(fd);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ac;
  if (size < 2) return 0;
  size_t config_len = std::min<size_t>(size_t(data[0]) | (size_t(data[1]) << 8), size - 2);
  const fs::path& dir = work_dir();
  put(dir / "config.json", data + 2, config_len);
  put(dir / "model.safetensors", data + 2 + config_len, size - 2 - config_len);
  try {
    auto m = load_model(dir);
    int64_t params = 0;
    for (const auto& e : expected_tensors(m->config)) {
      const TensorInfo* t = m->store.find(e.name);
      fuzz::require(t != nullptr && t->shape == e.shape && dtype_is_compute(t->dtype), "bound: " + e.name);
      params += t->numel();
    }
    fuzz::require(params == m->weights.parameters, "parameter count");
    fuzz::require(m->weights.layers.size() == size_t(m->config.num_layers), "one entry per layer");
    for (const auto& l : m->weights.layers) fuzz::require(l.q && l.k && l.v && l.o && l.gate && l.up && l.down, "layer bound");
  } catch (const Error& e) {
    fuzz::check_rejection(e);
  }
  return 0;
}
