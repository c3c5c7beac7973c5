// libFuzzer target: model.safetensors.index.json. An accepted index maps every tensor to a plain
// file name inside the model folder, and its two views (by tensor, by file) agree.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "agentcompile/model/weights.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ac;
  try {
    ShardIndex idx = parse_shard_index(std::string_view(reinterpret_cast<const char*>(data), size), "index.json");
    fuzz::require(!idx.file_of.empty(), "non-empty weight map");
    size_t listed = 0;
    for (const auto& [file, names] : idx.tensors_in) {
      fuzz::require(!file.empty() && file != "." && file != "..", "plain file name");
      fuzz::require(file.find('/') == std::string::npos && file.find('\\') == std::string::npos &&
                        file.find('\0') == std::string::npos,
                    "no path separators or NUL in " + file);
      fuzz::require(fs::path(file).filename() == fs::path(file), "stays in the folder: " + file);
      for (const auto& n : names) fuzz::require(idx.file_of.at(n) == file, "views agree");
      listed += names.size();
    }
    fuzz::require(listed == idx.file_of.size(), "every tensor in exactly one file");
  } catch (const Error& e) {
    fuzz::check_rejection(e);
  }
  return 0;
}
