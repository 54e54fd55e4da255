#include "train/checkpoint/file_system.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace jobctl::train {

namespace {

Error io_error(const std::string& what, const std::string& path, int err) {
  return make_error(ErrorCode::io, what + " " + path + ": " + std::strerror(err));
}

}  // namespace

Status PosixFileSystem::write_file_synced(const std::string& path, std::span<const uint8_t> data) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return io_error("cannot create", path, errno);
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      return io_error("cannot write", path, err);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    return io_error("cannot fsync", path, err);
  }
  if (::close(fd) != 0) return io_error("cannot close", path, errno);
  return ok_status();
}

Status PosixFileSystem::rename(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) return io_error("cannot rename " + from + " to", to, errno);
  return ok_status();
}

Status PosixFileSystem::sync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return io_error("cannot open directory", dir, errno);
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  // Some file systems do not support fsync on directories; there is nothing more to do there.
  if (rc != 0 && err != EINVAL && err != EROFS) return io_error("cannot fsync directory", dir, err);
  return ok_status();
}

Expected<std::vector<uint8_t>> PosixFileSystem::read_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return io_error("cannot open", path, errno);
  std::vector<uint8_t> out;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && st.st_size > 0) out.reserve(static_cast<size_t>(st.st_size));
  uint8_t buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      return io_error("cannot read", path, err);
    }
    if (n == 0) break;
    out.insert(out.end(), buf, buf + n);
  }
  ::close(fd);
  return out;
}

Expected<std::vector<std::string>> PosixFileSystem::list_directory(const std::string& dir) {
  std::error_code ec;
  std::vector<std::string> names;
  std::filesystem::directory_iterator it(dir, ec), end;
  if (ec) return make_error(ErrorCode::io, "cannot list " + dir + ": " + ec.message());
  for (; it != end; it.increment(ec)) {
    if (ec) return make_error(ErrorCode::io, "cannot list " + dir + ": " + ec.message());
    std::error_code fec;
    if (it->is_regular_file(fec)) names.push_back(it->path().filename().string());
  }
  return names;
}

Status PosixFileSystem::remove_file(const std::string& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return io_error("cannot remove", path, errno);
  return ok_status();
}

Status PosixFileSystem::create_directories(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return make_error(ErrorCode::io, "cannot create directory " + dir + ": " + ec.message());
  return ok_status();
}

std::string join_path(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

Status write_file_atomic(FileSystem& fs, const std::string& dir, const std::string& name,
                         std::span<const uint8_t> data) {
  const std::string final_path = join_path(dir, name);
  const std::string temp_path = final_path + ".tmp";
  if (auto st = fs.write_file_synced(temp_path, data); !st) {
    (void)fs.remove_file(temp_path);
    return st;
  }
  if (auto st = fs.rename(temp_path, final_path); !st) {
    (void)fs.remove_file(temp_path);
    return st;
  }
  return fs.sync_directory(dir.empty() ? "." : dir);
}

}  // namespace jobctl::train
