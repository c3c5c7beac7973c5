#pragma once
// The kernel templates (kernels/cuda/**), embedded in the binary at build time.
#include <span>
#include <string_view>

namespace ac::cuda {

struct EmbeddedFile {
  const char* path;  // relative to kernels/cuda, e.g. "rms_norm/reference.cuh"
  const char* text;
};

std::span<const EmbeddedFile> kernel_files();
// nullptr when there is no such file.
const char* kernel_file(std::string_view path);

}  // namespace ac::cuda
