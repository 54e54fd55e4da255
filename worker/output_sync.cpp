#include "worker/output_sync.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ostream>

#include "base/retry.h"
#include "bundle/folder_files.h"

namespace jobctl::worker {

namespace {

// Three attempts, pauses from 0.5 s: the lease is about to end, so the waits stay short (they
// are spent even while the worker stops: the stop is why the outputs go now).
constexpr RetryPolicy kOutputRetry{.max_attempts = 3,
                                   .first_delay = std::chrono::milliseconds(500),
                                   .max_delay = std::chrono::seconds(4)};

// 0.5 s doubling up to 4 s between them: about 19 s in all.
constexpr int kRestoreListAttempts = 7;

bool transient(const Error& e) {
  return e.code == ErrorCode::unavailable || e.code == ErrorCode::timeout || e.code == ErrorCode::io ||
         e.code == ErrorCode::internal;
}
bool transient(const Status& st) { return !st && transient(st.error()); }

}  // namespace

OutputSync::OutputSync(client::ApiClient& api, int64_t job_id, int64_t worker_id, int64_t epoch, std::string dir,
                       std::ostream& log, std::optional<uint32_t> owner)
    : api_(api), job_id_(job_id), worker_id_(worker_id), epoch_(epoch), dir_(std::move(dir)), log_(log), owner_(owner) {}

Status OutputSync::restore() {
  // The list is retried longer than a file: a jobctld restarting as the lease begins (a few
  // seconds) would otherwise fail the job before its program ran.
  auto listed = api_.list_outputs(job_id_);
  for (int attempt = 1; !listed && attempt < kRestoreListAttempts && transient(listed.error()); ++attempt) {
    sleep_wait(std::min<std::chrono::milliseconds>(kOutputRetry.first_delay * (1 << attempt), kOutputRetry.max_delay));
    listed = api_.list_outputs(job_id_);
  }
  if (!listed) return listed.error();
  const auto& outputs = listed->value("outputs", nlohmann::json::array());
  int restored = 0;
  uint64_t bytes = 0;
  for (const auto& o : outputs) {
    const std::string path = o.value("path", std::string());
    auto file = bundle::FileInside::create(dir_, path);
    if (!file) return file.error();
    Status got;
    for (int attempt = 0; attempt < kOutputRetry.max_attempts; ++attempt) {
      if (attempt > 0 && (::ftruncate(file->fd(), 0) != 0 || ::lseek(file->fd(), 0, SEEK_SET) != 0)) break;
      got = api_.download_output(job_id_, path, file->fd());
      if (!transient(got)) break;
      sleep_wait(kOutputRetry.first_delay * (1 << attempt));
    }
    if (!got) return make_error(got.error().code, "cannot fetch the output " + path + ": " + got.error().message);
    if (auto st = file->commit(); !st) return st;
    ++restored;
    bytes += o.value("bytes", uint64_t{0});
  }
  // What was restored is on the daemon already.
  auto files = bundle::list_folder_files(dir_);
  if (files)
    for (const auto& f : *files) sent_[f.path] = {f.bytes, f.mtime_ns};
  if (restored > 0)
    log_ << "jobctl-worker: job " << job_id_ << ": restored " << restored << " output file(s) (" << bytes
         << " bytes) into " << dir_ << "\n";
  return {};
}

int OutputSync::upload() {
  std::vector<std::string> skipped;
  auto files = bundle::list_folder_files(dir_, &skipped);
  if (!files) {
    log_ << "jobctl-worker: job " << job_id_ << ": cannot list its outputs: " << files.error().message << "\n";
    return 0;
  }
  for (const auto& s : skipped)
    log_ << "jobctl-worker: job " << job_id_ << ": output " << s << " is not a regular file; not uploaded\n";
  int stored = 0;
  uint64_t bytes = 0;
  for (const auto& f : *files) {
    if (auto it = sent_.find(f.path); it != sent_.end() && it->second == std::make_pair(f.bytes, f.mtime_ns)) continue;
    Status st;
    for (int attempt = 0; attempt < kOutputRetry.max_attempts; ++attempt) {
      auto fd = bundle::open_inside_for_read(dir_, f.path, owner_);
      if (!fd) {
        st = fd.error();
        break;
      }
      struct stat info {};
      const uint64_t size = ::fstat(*fd, &info) == 0 ? static_cast<uint64_t>(info.st_size) : f.bytes;
      st = api_.upload_output(job_id_, f.path, worker_id_, epoch_, *fd, size);
      ::close(*fd);
      if (!transient(st)) break;
      sleep_wait(kOutputRetry.first_delay * (1 << attempt));
    }
    if (!st) {
      log_ << "jobctl-worker: job " << job_id_ << ": output " << f.path << " not stored: " << st.error().message << "\n";
      continue;
    }
    sent_[f.path] = {f.bytes, f.mtime_ns};
    ++stored;
    bytes += f.bytes;
  }
  if (stored > 0)
    log_ << "jobctl-worker: job " << job_id_ << ": stored " << stored << " output file(s) (" << bytes << " bytes)\n";
  return stored;
}

}  // namespace jobctl::worker
