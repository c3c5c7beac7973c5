#pragma once
// Files: read-only memory maps of model files, bounded reads of small text files (also from
// inside a folder, links resolved and confined), and outputs that appear whole or not at all
// (write to a temporary name in the same folder, then rename), never replacing what the tool did
// not write.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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

// A regular file opened for reading from inside a folder: `rel` (relative) under `root`, with every
// symbolic link resolved and the result required to lie inside root. The resolved path is opened
// one component at a time without following links, so a link swapped in after the check is
// refused rather than followed; the size and identity come from the open file. BadInput naming
// root/rel when it is missing, outside root, or not a regular file (a FIFO, a device, a folder).
class FileInside {
 public:
  FileInside(const fs::path& root, const fs::path& rel);
  ~FileInside();
  FileInside(const FileInside&) = delete;
  FileInside& operator=(const FileInside&) = delete;
  uint64_t size() const { return size_; }
  // Device and inode: two names of one file (links, "a/../a") have the same identity.
  std::pair<uint64_t, uint64_t> identity() const { return {dev_, ino_}; }
  // The whole file; BadInput when it is larger than max_bytes (checked before reading).
  std::string read(size_t max_bytes) const;

 private:
  fs::path path_;
  int fd_ = -1;
  uint64_t size_ = 0, dev_ = 0, ino_ = 0;
};

// Writes `data` to `path` atomically (temporary file in the same folder, fsync, rename).
void write_file_atomic(const fs::path& path, std::string_view data);

// A kind of folder this tool writes whole and may later replace (a plan, a synthesised model).
// Every such folder holds kFolderMarker, which names the kind and lists the files written into
// it. An existing folder is replaced only when it is of the kind and holds nothing but those
// files, so nothing the tool did not write is ever deleted.
inline constexpr const char* kFolderMarker = ".agentcompile-folder.json";
struct FolderKind {
  std::string name;    // "plan", "synth-model": in the marker and in messages
  std::string writer;  // the command that writes it ("agentcompile compile"), for messages
  // Folders of the kind written before markers existed: the files (relative paths) such a folder
  // holds, or nullopt when `dir` is not one. Empty: there are no such folders.
  std::function<std::optional<std::vector<std::string>>(const fs::path& dir)> unmarked_files;
};

// BadInput (subject) unless `target` may become a folder of `kind`: absent, an empty folder, or a
// folder of the kind holding only its own files. Refused: a file, a symbolic link, the root
// folder, the current folder or one holding it, and anything else.
void check_replaceable(const fs::path& target, const FolderKind& kind, const std::string& subject);

// A folder that appears under its final name only when commit() is called: files are written
// into a hidden temporary sibling, which is removed if the object dies uncommitted. The target is
// checked (check_replaceable) at construction and again at commit, which writes the marker and
// moves the folder into place; a replaced folder is kept under another name until the new one is
// in place, then only its listed files (and the folders they leave empty) are removed.
class StagingDir {
 public:
  StagingDir(const fs::path& final_path, FolderKind kind, std::string subject = "");
  ~StagingDir();
  StagingDir(const StagingDir&) = delete;
  StagingDir& operator=(const StagingDir&) = delete;
  const fs::path& path() const { return tmp_; }
  void commit();

 private:
  fs::path final_;
  fs::path tmp_;
  FolderKind kind_;
  std::string subject_;
  bool committed_ = false;
};

}  // namespace ac
