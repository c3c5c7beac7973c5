#include "backends/cuda/kernel_sources.h"

namespace ac::cuda {

const char* kernel_file(std::string_view path) {
  for (const auto& f : kernel_files())
    if (path == f.path) return f.text;
  return nullptr;
}

}  // namespace ac::cuda
