#pragma once
// SHA-256 (OpenSSL) for cache keys, model hashes and integrity checks.
#include <string>
#include <string_view>

namespace ac {

std::string sha256_hex(std::string_view data);

// Incremental form, for hashing several parts (each part's length is mixed in, so ("ab", "c")
// and ("a", "bc") differ).
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  Sha256& part(std::string_view data);
  std::string hex();

 private:
  void* ctx_;
};

}  // namespace ac
