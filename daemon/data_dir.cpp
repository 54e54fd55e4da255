#include "daemon/data_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace jobctl::daemon {

namespace fs = std::filesystem;

namespace {

Error io_error(const std::string& what, int err) {
  return make_error(ErrorCode::io, what + ": " + std::strerror(err), "data_dir");
}

// The pid the holder wrote into the lock file ("" when unreadable).
std::string holder_pid(int fd) {
  char buf[32] = {0};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return "";
  std::string pid(buf, static_cast<size_t>(n));
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  return pid;
}

}  // namespace

Expected<std::unique_ptr<DataDir>> DataDir::open(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return make_error(ErrorCode::io, "cannot create the data directory " + dir + ": " + ec.message(), "data_dir");
  if (::chmod(dir.c_str(), 0700) != 0) return io_error("cannot make " + dir + " private (mode 0700)", errno);
  const std::string lock_path = (fs::path(dir) / "jobctld.lock").string();
  const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return io_error("cannot open " + lock_path, errno);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    const std::string pid = err == EWOULDBLOCK ? holder_pid(fd) : "";
    ::close(fd);
    if (err != EWOULDBLOCK) return io_error("cannot lock " + lock_path, err);
    return make_error(ErrorCode::unavailable,
                      "the data directory " + dir + " is in use by another jobctld" +
                          (pid.empty() ? std::string() : " (pid " + pid + ")") +
                          "; two daemons on one database would diverge: stop that one first, or use another "
                          "--data-dir",
                      "data_dir");
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    const int err = errno;
    ::close(fd);
    return io_error("cannot write " + lock_path, err);
  }
  // Files an older jobctld (or an umask) left readable by others.
  for (const char* name : {"jobctl.db", "jobctl.db-wal", "jobctl.db-shm"}) {
    const std::string path = (fs::path(dir) / name).string();
    if (::chmod(path.c_str(), 0600) != 0 && errno != ENOENT) {
      const int err = errno;
      ::close(fd);
      return io_error("cannot make " + path + " private (mode 0600)", err);
    }
  }
  return std::unique_ptr<DataDir>(new DataDir(dir, fd));
}

DataDir::~DataDir() {
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the lock
}

}  // namespace jobctl::daemon
