#include "backends/cuda/kernel_cache.h"

#include <cstdlib>

#include "agentcompile/core/error.h"
#include "agentcompile/core/hash.h"
#include "agentcompile/core/json.h"

namespace ac::cuda {

namespace {
constexpr std::string_view kMagic = "ACKC1\n";
}

fs::path kernel_cache_dir() {
  if (const char* env = std::getenv("AGENTCOMPILE_KERNEL_CACHE"); env && *env) return env;
  const char* home = std::getenv("HOME");
  return fs::path(home && *home ? home : "/tmp") / ".cache" / "agentcompile" / "kernels";
}

// File: magic, 64 hex digits of sha256(body), '\n', body. body: 8-byte length of the JSON meta, meta, cubin.
std::optional<JitResult> cache_load(const std::string& key) {
  fs::path p = kernel_cache_dir() / (key + ".ackc");
  std::error_code ec;
  if (!fs::exists(p, ec)) return std::nullopt;
  std::string data;
  try {
    data = read_file(p, size_t(256) << 20);
  } catch (const Error&) {
    return std::nullopt;
  }
  auto corrupt = [&]() -> std::optional<JitResult> {
    fs::remove(p, ec);
    return std::nullopt;
  };
  const size_t head = kMagic.size() + 65;
  if (data.size() < head + 8 || data.compare(0, kMagic.size(), kMagic) != 0) return corrupt();
  std::string_view body(data.data() + head, data.size() - head);
  if (sha256_hex(body) != std::string_view(data.data() + kMagic.size(), 64)) return corrupt();
  uint64_t meta_len = 0;
  for (int i = 7; i >= 0; --i) meta_len = (meta_len << 8) | uint8_t(body[size_t(i)]);
  if (meta_len > body.size() - 8) return corrupt();
  JitResult r;
  try {
    Json m = parse_json_strict(body.substr(8, meta_len), p.string());
    if (m.value("key", "") != key) return corrupt();
    r.key = key;
    r.log = m.value("log", "");
    r.registers = m.value("registers", -1);
    r.spill_bytes = m.value("spill_bytes", -1);
    r.shared_bytes = m.value("shared_bytes", -1);
    r.stack_bytes = m.value("stack_bytes", -1);
  } catch (const std::exception&) {
    return corrupt();
  }
  r.cubin = std::string(body.substr(8 + meta_len));
  if (r.cubin.empty()) return corrupt();
  r.ok = true;
  r.from_cache = true;
  return r;
}

void cache_store(const JitResult& r) {
  if (!r.ok || r.key.empty()) return;
  try {
    fs::path dir = kernel_cache_dir();
    std::error_code ec;
    fs::create_directories(dir, ec);
    Json m = {{"key", r.key}, {"log", r.log}, {"registers", r.registers}, {"spill_bytes", r.spill_bytes},
              {"shared_bytes", r.shared_bytes}, {"stack_bytes", r.stack_bytes}};
    std::string meta = m.dump();
    std::string body(8, '\0');
    for (int i = 0; i < 8; ++i) body[size_t(i)] = char((uint64_t(meta.size()) >> (8 * i)) & 0xff);
    body += meta;
    body += r.cubin;
    std::string file = std::string(kMagic) + sha256_hex(body) + "\n" + body;
    write_file_atomic(dir / (r.key + ".ackc"), file);
  } catch (const Error&) {
    // unwritable cache: the kernel is still usable, only not cached
  }
}

}  // namespace ac::cuda
