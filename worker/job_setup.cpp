#include "worker/job_setup.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "base/crc32c.h"
#include "base/mutex.h"
#include "base/text_file.h"
#include "bundle/code_bundle.h"
#include "process/run.h"

namespace jobctl::worker {

namespace fs = std::filesystem;

namespace {

constexpr const char* kMadeFor = ".jobctl-setup";
constexpr const char* kDone = ".jobctl-setup-done";
constexpr size_t kTailBytes = 2000;

// The file's text; "" when it cannot be read (a folder not made yet).
std::string read_all(const fs::path& p) {
  auto text = read_text_file(p.string(), "setup");
  return text ? *text : std::string();
}

// Held while a lease prepares one setup folder; released (closed) when it goes.
class FolderLock {
 public:
  explicit FolderLock(const fs::path& path) : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600)) {
    if (fd_ >= 0 && ::flock(fd_, LOCK_EX) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~FolderLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;
  bool held() const { return fd_ >= 0; }

 private:
  int fd_;
};

void add_lines(std::vector<std::string>& out, const std::string& text) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
}

std::string tail(const std::string& text) {
  return text.size() <= kTailBytes ? text : "..." + text.substr(text.size() - kTailBytes);
}

// Runs the commands in `dir`; the first failure is the error.
Status run_commands(const JobProgram& program, const fs::path& dir, const RunnerOptions& options,
                    std::vector<std::string>& log_lines) {
  for (size_t i = 0; i < program.setup.size(); ++i) {
    const std::string& command = program.setup[i];
    log_lines.push_back("setup[" + std::to_string(i) + "]$ " + command);
    auto r = process::run({"/bin/sh", "-c", command},
                          {.cwd = dir.string(), .env = program.env, .timeout = std::chrono::seconds(options.setup_timeout_s)});
    if (!r) return make_error(ErrorCode::io, "setup[" + std::to_string(i) + "] could not start: " + r.error().message);
    const std::string output = r->out + r->err;
    add_lines(log_lines, output);
    if (!r->success())
      return make_error(ErrorCode::invalid_argument, "setup[" + std::to_string(i) + "] (" + command + ") failed: " +
                                                         r->describe() + "; its output ends:\n" + tail(output));
  }
  return {};
}

// Every entry under `dir` (links themselves, never followed) as it is now, one line each: its
// path, type and mode, size, inode and change time. The folder's own markers are left out (they
// are written after the listing). A program cannot change an entry and set its change time back.
std::string entries_as_they_are(const fs::path& dir) {
  std::string out;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, fs::directory_options::none, ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string rel = it->path().lexically_relative(dir).generic_string();
    if (rel.rfind(kMadeFor, 0) == 0) continue;
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0) return "unreadable " + rel;
    out += rel + " " + std::to_string(st.st_mode) + " " + std::to_string(st.st_size) + " " + std::to_string(st.st_ino) +
           " " + std::to_string(st.st_ctim.tv_sec) + "." + std::to_string(st.st_ctim.tv_nsec) + "\n";
  }
  if (ec) return "unreadable: " + ec.message();
  return out;
}

// What each setup folder held when this worker process made it (folder -> entries_as_they_are):
// in the worker's memory, which no program can reach, not on disk, where a program running as the
// worker's user could rewrite the record along with the folder. A folder made before this worker
// started is made again.
Mutex made_mu;
std::map<std::string, std::string> made_entries JOBCTL_GUARDED_BY(made_mu);

std::optional<std::string> entries_when_made(const fs::path& dir) JOBCTL_EXCLUDES(made_mu) {
  MutexLock lock(made_mu);
  auto it = made_entries.find(dir.string());
  if (it == made_entries.end()) return std::nullopt;
  return it->second;
}

void record_entries(const fs::path& dir, std::optional<std::string> entries) JOBCTL_EXCLUDES(made_mu) {
  MutexLock lock(made_mu);
  if (entries) made_entries[dir.string()] = std::move(*entries);
  else made_entries.erase(dir.string());
}

// Write permission off (`writable` false) or, for the owner, back on (to remove the folder) for
// `dir` and every entry under it; links are left alone.
void set_writable(const fs::path& dir, bool writable) {
  std::error_code ec;
  const auto change = [&](const fs::path& p) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0 || S_ISLNK(st.st_mode)) return;
    const mode_t mode = writable ? (st.st_mode | S_IWUSR) : (st.st_mode & ~(S_IWUSR | S_IWGRP | S_IWOTH));
    ::chmod(p.c_str(), mode & 07777);
  };
  change(dir);
  for (fs::recursive_directory_iterator it(dir, fs::directory_options::none, ec), end; !ec && it != end;
       it.increment(ec))
    change(it->path());
}

}  // namespace

Expected<PreparedSetup> prepare_setup(const JobProgram& program, const std::string& bundle_bytes,
                                      const std::string& owner, const RunnerOptions& options, std::ostream& log) {
  PreparedSetup out;
  if (program.setup.empty()) return out;
  if (options.run_as)
    return make_error(ErrorCode::permission_denied,
                      "this worker runs job programs as another user (--run-as) and does not run setup commands "
                      "(they would run as the worker's own user); install what the job needs on the worker",
                      "setup");
  std::string made_for = "user " + owner + "\nbundle " + program.bundle + "\n";
  for (const auto& c : program.setup) made_for += c + "\n";
  char crc[16];
  std::snprintf(crc, sizeof crc, "%08x", crc32c::value(made_for.data(), made_for.size()));
  const fs::path root = fs::absolute(fs::path(options.work_dir)) / "setup";
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) return make_error(ErrorCode::io, "cannot create " + root.string() + ": " + ec.message());
  const std::string prefix = (program.bundle.empty() ? std::string("none") : program.bundle.substr(0, 16)) + "-" + crc;
  // The folder made for this bundle and setup, or the first free one after CRC collisions.
  for (int n = 0;; ++n) {
    out.dir = root / (prefix + "-" + std::to_string(n));
    if (!fs::exists(out.dir / kMadeFor) || read_all(out.dir / kMadeFor) == made_for) break;
  }
  FolderLock lock(out.dir.string() + ".lock");
  if (!lock.held()) return make_error(ErrorCode::io, "cannot lock " + out.dir.string() + ".lock");
  const bool made = fs::exists(out.dir / kDone) && read_all(out.dir / kMadeFor) == made_for;
  const std::optional<std::string> when_made = entries_when_made(out.dir);
  if (made && when_made && *when_made == entries_as_they_are(out.dir)) {
    out.cached = true;
    out.log_lines.push_back("setup: done before on this worker for this user, bundle and setup (" + out.dir.string() +
                            "); not run again");
  } else {
    if (made)
      out.log_lines.push_back("setup: what it made before in " + out.dir.string() +
                              (when_made ? " was changed since" : " was made before this worker started") +
                              "; made again from scratch");
    record_entries(out.dir, std::nullopt);
    set_writable(out.dir, true);
    fs::remove_all(out.dir, ec);  // a failed, interrupted or changed setup starts again from scratch
    fs::create_directories(out.dir, ec);
    if (ec) return make_error(ErrorCode::io, "cannot create " + out.dir.string() + ": " + ec.message());
    {
      std::ofstream f(out.dir / kMadeFor, std::ios::trunc);
      f << made_for;
      if (!f.flush()) return make_error(ErrorCode::io, "cannot write " + (out.dir / kMadeFor).string());
    }
    if (!bundle_bytes.empty())
      if (auto unpacked = bundle::unpack_bundle(bundle_bytes, out.dir.string()); !unpacked)
        return make_error(ErrorCode::invalid_argument, "refused the code bundle " + program.bundle + ": " +
                                                           unpacked.error().message);
    log << "jobctl-worker: running " << program.setup.size() << " setup command(s) in " << out.dir.string() << "\n";
    if (auto st = run_commands(program, out.dir, options, out.log_lines); !st) return st.error();
    // Read-only from now on (the folder itself once its marker is written), and reused only while
    // every entry is as listed in the marker.
    set_writable(out.dir, false);
    ::chmod(out.dir.c_str(), 0755);
    {
      std::ofstream done(out.dir / kDone, std::ios::trunc);
      if (!done.flush()) return make_error(ErrorCode::io, "cannot write " + (out.dir / kDone).string());
    }
    ::chmod((out.dir / kDone).c_str(), 0444);
    ::chmod((out.dir / kMadeFor).c_str(), 0444);
    ::chmod(out.dir.c_str(), 0555);
    record_entries(out.dir, entries_as_they_are(out.dir));
  }
  // What setup made, beside the program's own copy of the bundle.
  for (const auto& entry : fs::directory_iterator(out.dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kMadeFor, 0) == 0) continue;
    const fs::path at = program.cwd / name;
    if (fs::symlink_status(at, ec).type() != fs::file_type::not_found) continue;
    fs::create_symlink(entry.path(), at, ec);
    if (ec) return make_error(ErrorCode::io, "cannot link " + at.string() + " to " + entry.path().string() + ": " + ec.message());
  }
  return out;
}

}  // namespace jobctl::worker
