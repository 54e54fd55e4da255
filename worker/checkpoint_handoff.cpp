#include "worker/checkpoint_handoff.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <ostream>
#include <string>

#include "bundle/folder_files.h"

namespace jobctl::worker {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The announced file, opened with no link followed anywhere on its path: beneath the job's
// folder when it lies there, else beneath "/" (a program may keep its checkpoints on another
// file system, /dev/shm say). Errors name the path.
Expected<int> open_checkpoint(const fs::path& job_dir, const fs::path& path) {
  fs::path base = job_dir.lexically_normal();
  fs::path rel = path.lexically_relative(base);
  if (rel.empty() || *rel.begin() == "..") {
    base = "/";
    rel = path.relative_path();
  }
  const int base_fd = ::open(base.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (base_fd < 0) return make_error(ErrorCode::io, "cannot open " + base.string() + ": " + std::strerror(errno));
  auto fd = bundle::open_beneath(base_fd, rel.generic_string(), O_RDONLY | O_NONBLOCK);
  ::close(base_fd);
  return fd;
}

}  // namespace

void CheckpointHandoff::take(const json& ck, const json& progress) {
  if (ck.value("reason", std::string()) == "final") return;  // the job completes with it
  fs::path path = ck["path"].get<std::string>();
  if (path.is_relative()) path = program_.cwd / path;
  // The step it was taken at: the line's, else the last progress line's; a program that names
  // none gets one past the previous checkpoint's, so each upload is the newest.
  int64_t step = -1;
  if (ck.contains("step") && ck["step"].is_number_integer()) step = ck["step"].get<int64_t>();
  else if (progress.contains("step") && progress["step"].is_number_integer()) step = progress["step"].get<int64_t>();
  if (step < 0 || (program_.command && step < last_enqueued_step_)) step = last_enqueued_step_ + 1;
  last_enqueued_step_ = step;
  // The bytes uploaded are those of the file opened and checked here, read from the same
  // descriptor (it keeps them even when the program prunes or replaces the file): under --run-as
  // only a regular file of the job's user, as the descriptor's fstat says, never a link's target.
  auto fd = open_checkpoint(job_dir_, path.lexically_normal());
  if (!fd) {
    log_ << "jobctl-worker: job " << job_id_ << ": checkpoint " << path.string() << " not uploaded: "
         << fd.error().message << "\n";
    return;
  }
  const std::optional<uint32_t> owner =
      options_.run_as ? std::optional<uint32_t>(options_.run_as->uid) : std::nullopt;
  if (auto ok = bundle::check_regular_file(*fd, owner, path.string()); !ok) {
    log_ << "jobctl-worker: job " << job_id_ << ": checkpoint " << path.string()
         << " is not a file of the job's user; not uploaded (" << ok.error().message << ")\n";
    ::close(*fd);
    return;
  }
  uploader_.enqueue(step, *fd, ck.value("reason", std::string("program")));
}

}  // namespace jobctl::worker
