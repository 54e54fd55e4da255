#include "bundle/folder_files.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "base/relative_path.h"

namespace jobctl::bundle {

namespace fs = std::filesystem;

namespace {

Error io_error(const std::string& what) { return make_error(ErrorCode::io, what + ": " + std::strerror(errno)); }

Status check_output_path(const std::string& path) {
  if (auto problem = relative_path_problem(path))
    return make_error(ErrorCode::invalid_argument, "refused the output path '" + path + "': " + *problem, "path");
  return {};
}

std::vector<std::string> components(const std::string& path) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t slash = path.find('/', start);
    out.push_back(path.substr(start, slash == std::string::npos ? std::string::npos : slash - start));
    if (slash == std::string::npos) return out;
    start = slash + 1;
  }
}

// The folder holding `path`'s last component, opened one component at a time from `dir` without
// following links; missing folders are made when `create`.
Expected<int> open_parent(const std::string& dir, const std::vector<std::string>& parts, bool create) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return io_error("cannot open " + dir);
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    int next = ::openat(fd, parts[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0 && errno == ENOENT && create) {
      if (::mkdirat(fd, parts[i].c_str(), 0755) != 0 && errno != EEXIST) {
        auto e = io_error("cannot create " + parts[i] + " in " + dir);
        ::close(fd);
        return e;
      }
      next = ::openat(fd, parts[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (next < 0) {
      auto e = io_error("cannot open the folder " + parts[i] + " in " + dir + " (a link or not a folder?)");
      ::close(fd);
      return e;
    }
    ::close(fd);
    fd = next;
  }
  return fd;
}

}  // namespace

Expected<std::vector<FolderFile>> list_folder_files(const std::string& dir, std::vector<std::string>* skipped) {
  std::vector<FolderFile> out;
  std::error_code ec;
  const fs::path root(dir);
  fs::recursive_directory_iterator it(root, fs::directory_options::none, ec), end;
  if (ec) return make_error(ErrorCode::io, "cannot read " + dir + ": " + ec.message());
  for (; it != end; it.increment(ec)) {
    if (ec) return make_error(ErrorCode::io, "cannot read " + dir + ": " + ec.message());
    const fs::file_status s = it->symlink_status(ec);
    const std::string rel = it->path().lexically_relative(root).generic_string();
    if (fs::is_directory(s)) continue;
    if (!fs::is_regular_file(s) || relative_path_problem(rel)) {
      if (skipped) skipped->push_back(rel);
      continue;
    }
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0) continue;  // gone since it was listed
    out.push_back(FolderFile{rel, static_cast<uint64_t>(st.st_size),
                             static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec});
  }
  std::sort(out.begin(), out.end(), [](const FolderFile& a, const FolderFile& b) { return a.path < b.path; });
  return out;
}

Expected<int> open_beneath(int dir_fd, const std::string& path, int flags) {
  const auto parts = components(path);
  for (const auto& p : parts)
    if (p.empty() || p == "." || p == "..")
      return make_error(ErrorCode::invalid_argument, "refused the path '" + path + "': an empty, . or .. component", "path");
  flags |= O_NOFOLLOW | O_CLOEXEC;
#ifdef SYS_openat2
  open_how how{};
  how.flags = static_cast<uint64_t>(flags);
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  const long got = ::syscall(SYS_openat2, dir_fd, path.c_str(), &how, sizeof how);
  if (got >= 0) return static_cast<int>(got);
  // A kernel (or a seccomp filter) without openat2: the same walk by hand below.
  if (errno != ENOSYS && errno != EPERM) return io_error("cannot open " + path);
#endif
  int fd = dir_fd;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    const int next = ::openat(fd, parts[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    const int err = errno;
    if (fd != dir_fd) ::close(fd);
    if (next < 0) {
      errno = err;
      return io_error("cannot open " + path + " (at " + parts[i] + ": a link or not a folder?)");
    }
    fd = next;
  }
  const int out = ::openat(fd, parts.back().c_str(), flags);
  const int err = errno;
  if (fd != dir_fd) ::close(fd);
  if (out < 0) {
    errno = err;
    return io_error("cannot open " + path);
  }
  return out;
}

Expected<uint64_t> check_regular_file(int fd, std::optional<uint32_t> owner, const std::string& shown) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return io_error("cannot stat " + shown);
  if (!S_ISREG(st.st_mode)) return make_error(ErrorCode::io, shown + " is not a regular file");
  if (owner && st.st_uid != *owner)
    return make_error(ErrorCode::io, shown + " belongs to uid " + std::to_string(st.st_uid) + ", not to the job's user (uid " +
                                         std::to_string(*owner) + ")");
  return static_cast<uint64_t>(st.st_size);
}

Expected<int> open_inside_for_read(const std::string& dir, const std::string& path, std::optional<uint32_t> owner) {
  if (auto st = check_output_path(path); !st) return st.error();
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return io_error("cannot open " + dir);
  auto fd = open_beneath(dir_fd, path, O_RDONLY | O_NONBLOCK);
  ::close(dir_fd);
  if (!fd) return make_error(fd.error().code, fd.error().message + " in " + dir);
  if (auto ok = check_regular_file(*fd, owner, path + " in " + dir); !ok) {
    ::close(*fd);
    return ok.error();
  }
  return *fd;
}

Expected<FileInside> FileInside::create(const std::string& dir, const std::string& path) {
  if (auto st = check_output_path(path); !st) return st.error();
  std::error_code ec;
  fs::create_directories(dir, ec);
  const auto parts = components(path);
  auto parent = open_parent(dir, parts, true);
  if (!parent) return parent.error();
  static std::atomic<uint64_t> nonce{0};
  const std::string tmp = "." + parts.back() + ".part-" + std::to_string(::getpid()) + "-" + std::to_string(nonce++);
  const int fd = ::openat(*parent, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    auto e = io_error("cannot create " + path + " in " + dir);
    ::close(*parent);
    return e;
  }
  return FileInside(*parent, fd, tmp, parts.back(), (fs::path(dir) / path).string());
}

FileInside::FileInside(int parent_fd, int fd, std::string tmp_name, std::string name, std::string shown)
    : parent_fd_(parent_fd), fd_(fd), tmp_name_(std::move(tmp_name)), name_(std::move(name)), shown_(std::move(shown)) {}

FileInside::FileInside(FileInside&& o) noexcept
    : parent_fd_(std::exchange(o.parent_fd_, -1)),
      fd_(std::exchange(o.fd_, -1)),
      tmp_name_(std::move(o.tmp_name_)),
      name_(std::move(o.name_)),
      shown_(std::move(o.shown_)),
      done_(std::exchange(o.done_, true)) {}

FileInside::~FileInside() {
  if (fd_ >= 0) ::close(fd_);
  if (parent_fd_ >= 0) {
    if (!done_) ::unlinkat(parent_fd_, tmp_name_.c_str(), 0);
    ::close(parent_fd_);
  }
}

Status FileInside::commit() {
  if (::fsync(fd_) != 0) return io_error("cannot write " + shown_);
  ::close(fd_);
  fd_ = -1;
  // A folder there is refused by renameat (EISDIR); a link there is replaced, never followed.
  if (::renameat(parent_fd_, tmp_name_.c_str(), parent_fd_, name_.c_str()) != 0) return io_error("cannot store " + shown_);
  done_ = true;
  return {};
}

}  // namespace jobctl::bundle
