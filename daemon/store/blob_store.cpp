#include "daemon/store/blob_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "train/checkpoint/file_system.h"


namespace jobctl::daemon::store {

namespace fs = std::filesystem;

namespace {

// A failure of the disk itself (full, read-only, over a quota) is the store's, not the request's.
Error io_error(const std::string& what, int err) {
  if (err == ENOSPC || err == EDQUOT || err == EROFS || err == EFBIG || err == EIO)
    return make_error(ErrorCode::storage_unavailable,
                      "the checkpoint store cannot write: " + what + ": " + std::strerror(err));
  return make_error(ErrorCode::io, what + ": " + std::strerror(err));
}

// fsync of a whole file by path (train::PosixFileSystem syncs what it writes, and folders).
Status sync_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return io_error("cannot open " + path, errno);
  const bool ok = ::fsync(fd) == 0;
  const int err = errno;
  ::close(fd);
  if (!ok) return io_error("cannot sync " + path, err);
  return {};
}

Status check_name(std::string_view name) {
  if (name.empty() || name.front() == '.' || name.find('/') != std::string_view::npos ||
      name.find('\0') != std::string_view::npos)
    return make_error(ErrorCode::invalid_argument, "bad blob name '" + std::string(name.substr(0, 80)) + "'",
                      "name");
  return {};
}

}  // namespace

StagedFile::~StagedFile() {
  if (!kept_ && !path_.empty()) ::unlink(path_.c_str());
}

std::string BlobStore::job_dir(int64_t job_id) const {
  return (fs::path(root_) / ("job-" + std::to_string(job_id))).string();
}

std::string BlobStore::path_of(int64_t job_id, std::string_view name) const {
  return (fs::path(job_dir(job_id)) / std::string(name)).string();
}

std::string BlobStore::incoming_dir() const { return (fs::path(root_) / ".incoming").string(); }

Status BlobStore::prepare() const {
  std::error_code ec;
  const bool new_root = !fs::exists(root_, ec);
  fs::create_directories(incoming_dir(), ec);
  if (ec) return io_error("cannot create " + incoming_dir(), ec.value());
  for (const auto& dir : {root_, incoming_dir()}) ::chmod(dir.c_str(), 0700);
  if (new_root) {  // a new folder is only durable once its parent is synced too
    if (auto st = train::PosixFileSystem().sync_directory(fs::path(root_).parent_path().string()); !st) return st;
  }
  for (fs::directory_iterator it(incoming_dir(), ec), end; !ec && it != end; it.increment(ec))
    fs::remove(it->path(), ec);  // uploads a previous run did not finish
  return {};
}

Expected<std::string> BlobStore::stage(std::string_view bytes) const {
  std::error_code ec;
  fs::create_directories(incoming_dir(), ec);
  if (ec) return io_error("cannot create " + incoming_dir(), ec.value());
  std::string path = (fs::path(incoming_dir()) / "stage-XXXXXX").string();
  const int fd = ::mkstemp(path.data());
  if (fd < 0) return io_error("cannot create a file in " + incoming_dir(), errno);
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(path.c_str());
      return io_error("cannot write " + path, err);
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return path;
}

Status BlobStore::adopt(int64_t job_id, std::string_view name, const std::string& staged) const {
  if (auto st = check_name(name); !st) return st;
  const std::string dir = job_dir(job_id);
  std::error_code ec;
  const bool new_dir = !fs::exists(dir, ec);
  fs::create_directories(dir, ec);
  if (ec) return io_error("cannot create " + dir, ec.value());
  train::PosixFileSystem files;
  if (new_dir) {
    ::chmod(dir.c_str(), 0700);
    if (auto st = files.sync_directory(root_); !st) return st;
  }
  // The bytes reach the disk before the name does: a crash leaves the whole blob or none.
  if (auto st = sync_file(staged); !st) return st;
  if (auto st = files.rename(staged, path_of(job_id, name)); !st) return st;
  return files.sync_directory(dir);
}

Status BlobStore::write(int64_t job_id, std::string_view name, std::string_view bytes) const {
  auto staged = stage(bytes);
  if (!staged) return staged.error();
  Status st = adopt(job_id, name, *staged);
  if (!st) ::unlink(staged->c_str());
  return st;
}

Status BlobStore::remove(int64_t job_id, std::string_view name) const {
  if (auto st = check_name(name); !st) return st;
  const std::string path = path_of(job_id, name);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return io_error("cannot remove " + path, errno);
  return {};
}

Status BlobStore::remove_job(int64_t job_id) const {
  std::error_code ec;
  fs::remove_all(job_dir(job_id), ec);
  if (ec) return make_error(ErrorCode::io, "cannot remove " + job_dir(job_id) + ": " + ec.message());
  return {};
}

std::vector<int64_t> BlobStore::job_ids() const {
  std::vector<int64_t> out;
  std::error_code ec;
  for (fs::directory_iterator it(root_, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string n = it->path().filename().string();
    if (n.rfind("job-", 0) != 0) continue;
    try {
      size_t used = 0;
      const int64_t id = std::stoll(n.substr(4), &used);
      if (used == n.size() - 4) out.push_back(id);
    } catch (...) {
    }
  }
  return out;
}

std::vector<std::string> BlobStore::names(int64_t job_id) const {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(job_dir(job_id), ec), end; !ec && it != end; it.increment(ec)) {
    const std::string n = it->path().filename().string();
    if (n.size() > 4 && n.compare(n.size() - 4, 4, ".tmp") == 0) continue;
    out.push_back(n);
  }
  return out;
}

}  // namespace jobctl::daemon::store
