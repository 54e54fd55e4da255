#include "worker/checkpoint_handoff.h"

#include <sys/stat.h>

#include <ostream>
#include <string>
#include <system_error>

namespace jobctl::worker {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Whether `path` itself (not a link's target) is a regular file of `uid`.
bool owned_regular_file(const fs::path& path, uid_t uid) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == uid;
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
  // The program may prune or replace the file (the protocol asks it to replace atomically):
  // a hard link keeps this one for the uploader.
  const std::string copy = (job_dir_ / ("upload-" + std::to_string(step) + ".ckpt")).string();
  std::error_code link_ec;
  fs::remove(copy, link_ec);
  fs::create_hard_link(path, copy, link_ec);
  if (options_.run_as && !owned_regular_file(link_ec ? path : fs::path(copy), options_.run_as->uid)) {
    log_ << "jobctl-worker: job " << job_id_ << ": checkpoint " << path.string()
         << " is not a file of the job's user; not uploaded\n";
    fs::remove(copy, link_ec);
    return;
  }
  uploader_.enqueue(step, link_ec ? path.string() : copy, ck.value("reason", std::string("program")), !link_ec);
}

}  // namespace jobctl::worker
