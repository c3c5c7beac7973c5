#pragma once
// Files: read-only memory maps of model files, bounded reads of small text files, and outputs that
// appear whole or not at all (write to a temporary name in the same folder, then rename).
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace ac {

namespace fs = std::filesystem;

class MappedFile {
 public:
  MappedFile() = default;
  // Maps `path` read-only; BadInput error naming the path when it cannot be opened or mapped.
  explicit MappedFile(const fs::path& path);
  ~MappedFile();
  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&& o) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const fs::path& path() const { return path_; }

 private:
  void release();
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  fs::path path_;
};

// Reads a whole file; a file larger than max_bytes is a BadInput error (never a huge allocation).
std::string read_file(const fs::path& path, size_t max_bytes);

// Writes `data` to `path` atomically (temporary file in the same folder, fsync, rename).
void write_file_atomic(const fs::path& path, std::string_view data);

// A folder that appears under its final name only when commit() is called: files are written
// into a hidden temporary sibling, which is removed if the object dies uncommitted. An existing
// target folder is replaced only at commit.
class StagingDir {
 public:
  explicit StagingDir(const fs::path& final_path);
  ~StagingDir();
  StagingDir(const StagingDir&) = delete;
  StagingDir& operator=(const StagingDir&) = delete;
  const fs::path& path() const { return tmp_; }
  void commit();

 private:
  fs::path final_;
  fs::path tmp_;
  bool committed_ = false;
};

}  // namespace ac
