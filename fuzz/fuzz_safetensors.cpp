// libFuzzer target: parse_safetensors over arbitrary bytes (header length, JSON header, data).
// An accepted buffer must describe tensors that tile the data section exactly, each inside the
// buffer and as large as its shape says; every byte of them is read so ASan checks the bounds.
#include <cstddef>
#include <cstdint>

#include "agentcompile/model/safetensors.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ac;
  try {
    SafetensorsHeader h = parse_safetensors(data, size, "fuzz.safetensors");
    fuzz::require(h.data_offset >= 8 && h.data_offset <= size, "data offset inside the buffer");
    uint64_t cursor = 0;
    volatile float sink = 0;
    for (const auto& t : h.tensors) {
      fuzz::require(t.begin == cursor, "tensors tile the data");
      fuzz::require(t.end >= t.begin && h.data_offset + t.end <= size, "tensor inside the buffer");
      fuzz::require(t.shape.size() <= size_t(kSafetensorsMaxRank), "rank bounded");
      fuzz::require(t.numel() >= 0 && uint64_t(t.numel()) * dtype_size(t.dtype) == t.nbytes(), "size matches shape");
      fuzz::require(t.data == data + h.data_offset + t.begin, "data pointer");
      if (dtype_is_compute(t.dtype))
        for (int64_t i = 0; i < t.numel(); ++i) sink = sink + load_as_f32(t.data, t.dtype, size_t(i));
      else
        for (uint64_t i = 0; i < t.nbytes(); ++i) sink = sink + t.data[i];
      cursor = t.end;
    }
    fuzz::require(h.data_offset + cursor == size, "no trailing bytes");
  } catch (const Error& e) {
    fuzz::check_rejection(e);
  }
  return 0;
}
