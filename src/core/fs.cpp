#include "agentcompile/core/fs.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <algorithm>
#include <random>
#include <set>

#include "agentcompile/core/error.h"
#include "agentcompile/core/json.h"

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

namespace {

// The whole of the open regular file `fd` (st_size bytes); BadInput naming `path` when larger
// than max_bytes or when the read fails.
std::string read_open_file(int fd, uint64_t size, size_t max_bytes, const fs::path& path) {
  if (size > max_bytes)
    throw_input(path.string(), "file is " + std::to_string(size) + " bytes, more than the " + std::to_string(max_bytes) +
                                   " allowed");
  std::string out(static_cast<size_t>(size), '\0');
  size_t got = 0;
  while (got < out.size()) {
    ssize_t n = ::pread(fd, out.data() + got, out.size() - got, off_t(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw_input(path.string(), "read failed");
    got += static_cast<size_t>(n);
  }
  return out;
}

struct Fd {  // closes on scope exit
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string read_file(const fs::path& path, size_t max_bytes) {
  Fd f{::open(path.c_str(), kOpenReadFlags)};
  if (f.fd < 0) throw_input(path.string(), "cannot open: " + errno_text());
  struct stat st {};
  if (::fstat(f.fd, &st) != 0 || !S_ISREG(st.st_mode)) throw_input(path.string(), "not a regular file");
  return read_open_file(f.fd, uint64_t(st.st_size), max_bytes, path);
}

FileInside::FileInside(const fs::path& root, const fs::path& rel) : path_(root / rel) {
  if (rel.empty() || rel.is_absolute() || rel.native().find('\0') != std::string::npos)
    throw_input(path_.string(), "is not a path inside " + root.string());
  std::error_code ec;
  const fs::path base = fs::canonical(root, ec);
  if (ec) throw_input(root.string(), "cannot resolve: " + ec.message());
  const fs::path real = fs::canonical(base / rel, ec);
  if (ec) throw_input(path_.string(), ec == std::errc::no_such_file_or_directory ? "is missing" : "cannot resolve: " + ec.message());
  const fs::path inside = real.lexically_relative(base);
  if (inside.empty() || inside == "." || *inside.begin() == "..")
    throw_input(path_.string(), "resolves to " + real.string() + ", outside " + base.string());
  // Walk the resolved path from the folder, refusing links: canonical() left none, so one found
  // now was swapped in since, and following it could leave the folder.
  Fd dir{::open(base.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (dir.fd < 0) throw_input(base.string(), "cannot open: " + errno_text());
  std::vector<fs::path> parts(inside.begin(), inside.end());
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    Fd next{::openat(dir.fd, parts[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
    if (next.fd < 0) throw_input(path_.string(), "changed while being opened: " + errno_text());
    std::swap(dir.fd, next.fd);
  }
  Fd file{::openat(dir.fd, parts.back().c_str(), kOpenReadFlags | O_NOFOLLOW)};
  if (file.fd < 0) throw_input(path_.string(), errno == ELOOP ? "changed while being opened (a link)" : "cannot open: " + errno_text());
  struct stat st {};
  if (::fstat(file.fd, &st) != 0) throw_input(path_.string(), "cannot stat: " + errno_text());
  if (!S_ISREG(st.st_mode)) throw_input(path_.string(), "not a regular file");
  std::swap(fd_, file.fd);
  size_ = uint64_t(st.st_size);
  dev_ = uint64_t(st.st_dev);
  ino_ = uint64_t(st.st_ino);
}

FileInside::~FileInside() {
  if (fd_ >= 0) ::close(fd_);
}

std::string FileInside::read(size_t max_bytes) const { return read_open_file(fd_, size_, max_bytes, path_); }

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

namespace {

// A folder as the user named it: absolute, normalised ("x/..", "."), no trailing separator.
fs::path folder_path(const fs::path& p) {
  fs::path a = fs::absolute(p).lexically_normal();
  if (!a.has_filename() && a != a.root_path()) a = a.parent_path();
  return a;
}

// The files a folder says it holds as one of `kind` (its marker, or the kind's unmarked-folder
// rule), the marker among them; nullopt when it is not such a folder (why not in *why).
std::optional<std::set<std::string>> declared_files(const fs::path& dir, const FolderKind& kind, std::string* why) {
  std::error_code ec;
  if (fs::symlink_status(dir / kFolderMarker, ec).type() == fs::file_type::not_found) {
    if (!kind.unmarked_files) return std::nullopt;
    std::optional<std::vector<std::string>> v = kind.unmarked_files(dir);
    if (!v) return std::nullopt;
    return std::set<std::string>(v->begin(), v->end());
  }
  try {
    const Json m = parse_json_strict(FileInside(dir, kFolderMarker).read(1 << 20), kFolderMarker);
    const std::string k = json_string(m, kFolderMarker, "kind");
    if (k != kind.name) {
      *why = " (it is a " + k + " folder)";
      return std::nullopt;
    }
    std::set<std::string> files = {kFolderMarker};
    for (const Json& f : json_require(m, kFolderMarker, "files"))
      if (f.is_string()) files.insert(f.get<std::string>());
    return files;
  } catch (const std::exception&) {
    *why = " (its " + std::string(kFolderMarker) + " is unreadable)";
    return std::nullopt;
  }
}

// The regular files under `dir` (relative, generic form), when everything there is one of
// `allowed` or a folder; otherwise the first other entry in *foreign.
std::set<std::string> listed_files(const fs::path& dir, const std::set<std::string>& allowed, std::string* foreign) {
  std::set<std::string> found;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string rel = it->path().lexically_relative(dir).generic_string();
    const fs::file_type t = it->symlink_status(ec).type();
    if (t == fs::file_type::directory) continue;
    if (t != fs::file_type::regular || !allowed.count(rel)) {
      *foreign = rel;
      return {};
    }
    found.insert(rel);
  }
  if (ec) *foreign = "an entry that cannot be listed (" + ec.message() + ")";
  return found;
}

// The files that replacing folder `a` removes (every entry in it is one, or a folder); nullopt
// when there is no `a`. BadInput (subject) when `a` may not be replaced.
std::optional<std::set<std::string>> replaceable_files(const fs::path& a, const FolderKind& kind, const std::string& subject) {
  if (a == a.root_path()) throw_input(subject, "is the root folder; refusing to replace it");
  struct stat st {};
  if (::lstat(a.c_str(), &st) != 0) {
    if (errno == ENOENT) return std::nullopt;
    throw_input(subject, "cannot stat: " + errno_text());
  }
  if (S_ISLNK(st.st_mode)) throw_input(subject, "is a symbolic link; refusing to replace it (name the folder itself)");
  if (!S_ISDIR(st.st_mode)) throw_input(subject, "exists and is not a folder");
  std::error_code ec, ec2;
  const fs::path cwd = fs::canonical(fs::current_path(ec), ec), real = fs::canonical(a, ec2);
  if (!ec && !ec2)
    if (const fs::path rel = cwd.lexically_relative(real); !rel.empty() && *rel.begin() != "..")
      throw_input(subject, "is the current folder or holds it; refusing to replace it");
  const std::string not_ours = "exists and is not a " + kind.name + " folder written by " + kind.writer;
  std::string why, foreign;
  const std::optional<std::set<std::string>> declared = declared_files(a, kind, &why);
  if (!declared) {
    if (fs::is_empty(a, ec) && !ec) return std::set<std::string>{};
    throw_input(subject, not_ours + why + "; refusing to replace it");
  }
  std::set<std::string> files = listed_files(a, *declared, &foreign);
  if (!foreign.empty())
    throw_input(subject, "holds " + foreign + ", which " + kind.writer + " did not write; refusing to replace it");
  return files;
}

// Removes `files` from `dir`, then the folders they leave empty, deepest first; anything that
// appeared there since it was checked stays. True when `dir` is gone.
bool remove_files(const fs::path& dir, const std::set<std::string>& files) {
  for (const std::string& f : files) ::unlink((dir / f).c_str());
  std::vector<fs::path> dirs;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->symlink_status(ec).type() == fs::file_type::directory) dirs.push_back(it->path());
  std::sort(dirs.begin(), dirs.end(), [](const fs::path& x, const fs::path& y) { return x.native().size() > y.native().size(); });
  for (const fs::path& d : dirs) ::rmdir(d.c_str());
  return ::rmdir(dir.c_str()) == 0;
}

// Renames `from` to `to` unless `to` exists (a folder made there since the check stays; plain
// rename() would replace an empty one). Filesystems without RENAME_NOREPLACE get rename().
bool move_no_replace(const fs::path& from, const fs::path& to) {
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return true;
  if (errno != EINVAL && errno != ENOSYS) return false;
  return ::rename(from.c_str(), to.c_str()) == 0;
}

}  // namespace

void check_replaceable(const fs::path& target, const FolderKind& kind, const std::string& subject) {
  (void)replaceable_files(folder_path(target), kind, subject);
}

StagingDir::StagingDir(const fs::path& final_path, FolderKind kind, std::string subject)
    : final_(folder_path(final_path)), kind_(std::move(kind)), subject_(subject.empty() ? final_path.string() : subject) {
  (void)replaceable_files(final_, kind_, subject_);  // refused before anything is written
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
  if (!fs::create_directory(tmp_, ec) || ec) throw_input(subject_, "cannot create a temporary folder beside it");
}

StagingDir::~StagingDir() {
  if (!committed_) {
    std::error_code ec;
    fs::remove_all(tmp_, ec);
  }
}

void StagingDir::commit() {
  // The marker lists every file written, so that a later run may replace this folder and only it.
  Json files = Json::array();
  std::error_code ec;
  for (fs::recursive_directory_iterator it(tmp_, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file(ec)) files.push_back(it->path().lexically_relative(tmp_).generic_string());
  if (ec) throw_input(subject_, "cannot list the finished folder: " + ec.message());
  write_file_atomic(tmp_ / kFolderMarker,
                    Json{{"written_by", "agentcompile"}, {"kind", kind_.name}, {"files", files}}.dump(2) + "\n");
  std::optional<std::set<std::string>> owned = replaceable_files(final_, kind_, subject_);
  fs::path old;
  if (owned) {
    old = final_;
    old += ".old-" + random_suffix();
    fs::rename(final_, old, ec);
    if (ec) throw_input(subject_, "cannot replace: " + ec.message());
    // Checked again under a name nothing else uses: an entry added since the first check keeps
    // the old folder where it was.
    try {
      owned = replaceable_files(old, kind_, subject_);
    } catch (const Error&) {
      fs::rename(old, final_, ec);
      throw;
    }
  }
  if (!move_no_replace(tmp_, final_)) {
    const std::string why = errno_text();
    if (!old.empty()) fs::rename(old, final_, ec);
    throw_input(subject_, "cannot move the finished folder into place: " + why);
  }
  committed_ = true;
  if (owned) remove_files(old, *owned);  // what is left there (appeared meanwhile) stays, under that name
}

}  // namespace ac
