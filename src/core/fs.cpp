#include "agentcompile/core/fs.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "agentcompile/core/error.h"

namespace ac {

namespace {
std::string errno_text() { return std::strerror(errno); }

std::string random_suffix() {
  std::random_device rd;
  uint64_t x = (uint64_t(rd()) << 32) ^ rd() ^ uint64_t(::getpid());
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(x));
  return buf;
}
}  // namespace

// O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever; the
// S_ISREG check that follows rejects it. It changes nothing for regular files.
constexpr int kOpenReadFlags = O_RDONLY | O_CLOEXEC | O_NONBLOCK;

MappedFile::MappedFile(const fs::path& path) : path_(path) {
  int fd = ::open(path.c_str(), kOpenReadFlags);
  if (fd < 0) throw_input(path.string(), "cannot open: " + errno_text());
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    std::string why = errno_text();
    ::close(fd);
    throw_input(path.string(), "cannot stat: " + why);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw_input(path.string(), "not a regular file");
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      std::string why = errno_text();
      ::close(fd);
      throw_input(path.string(), "cannot map: " + why);
    }
    data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
}

MappedFile::~MappedFile() { release(); }

void MappedFile::release() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

MappedFile::MappedFile(MappedFile&& o) noexcept : data_(o.data_), size_(o.size_), path_(std::move(o.path_)) {
  o.data_ = nullptr;
  o.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    release();
    data_ = o.data_;
    size_ = o.size_;
    path_ = std::move(o.path_);
    o.data_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

std::string read_file(const fs::path& path, size_t max_bytes) {
  int fd = ::open(path.c_str(), kOpenReadFlags);
  if (fd < 0) throw_input(path.string(), "cannot open: " + errno_text());
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw_input(path.string(), "not a regular file");
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    ::close(fd);
    throw_input(path.string(), "file is " + std::to_string(st.st_size) + " bytes, more than the " +
                                   std::to_string(max_bytes) + " allowed");
  }
  std::string out(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < out.size()) {
    ssize_t n = ::read(fd, out.data() + got, out.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      throw_input(path.string(), "read failed");
    }
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  return out;
}

void write_file_atomic(const fs::path& path, std::string_view data) {
  fs::path tmp = path;
  tmp += ".tmp-" + random_suffix();
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw_input(path.string(), "cannot create: " + errno_text());
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string why = errno_text();
      ::close(fd);
      ::unlink(tmp.c_str());
      throw_input(path.string(), "write failed: " + why);
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = errno_text();
    ::unlink(tmp.c_str());
    throw_input(path.string(), "cannot write: " + why);
  }
}

StagingDir::StagingDir(const fs::path& final_path) : final_(fs::absolute(final_path).lexically_normal()) {
  if (final_.has_filename() == false) final_ = final_.parent_path();
  fs::path parent = final_.parent_path();
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) throw_input(parent.string(), "cannot create folder: " + ec.message());
  // Built with += : GCC 12 gives a false -Wrestrict warning for "." + std::string.
  std::string name = ".";
  name += final_.filename().string();
  name += ".tmp-";
  name += random_suffix();
  tmp_ = parent / name;
  if (!fs::create_directory(tmp_, ec) || ec) throw_input(final_.string(), "cannot create a temporary folder beside it");
}

StagingDir::~StagingDir() {
  if (!committed_) {
    std::error_code ec;
    fs::remove_all(tmp_, ec);
  }
}

void StagingDir::commit() {
  std::error_code ec;
  fs::path old;
  if (fs::exists(final_, ec)) {
    if (!fs::is_directory(final_, ec)) throw_input(final_.string(), "exists and is not a folder");
    old = final_;
    old += ".old-" + random_suffix();
    fs::rename(final_, old, ec);
    if (ec) throw_input(final_.string(), "cannot replace: " + ec.message());
  }
  fs::rename(tmp_, final_, ec);
  if (ec) {
    if (!old.empty()) fs::rename(old, final_, ec);
    throw_input(final_.string(), "cannot move the finished folder into place");
  }
  committed_ = true;
  if (!old.empty()) fs::remove_all(old, ec);
}

}  // namespace ac
