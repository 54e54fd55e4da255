// Hands the checkpoints a job's program announces (`checkpoint` lines, docs/job-protocol.md) to
// the CheckpointUploader: decides the step each is stored under, keeps the file from being pruned
// under the upload (a hard link in the job's folder), and under --run-as uploads only a regular
// file of the job's own user (the worker reads with more rights than the program). The `final`
// checkpoint is not uploaded: the job completes with it.
//
// Ownership and thread safety: borrows the uploader and the log; used from the runner's thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>

#include <nlohmann/json.hpp>

#include "worker/checkpoint_uploader.h"
#include "worker/job_program.h"

namespace jobctl::worker {

class CheckpointHandoff {
 public:
  CheckpointHandoff(CheckpointUploader& uploader, const JobProgram& program, std::filesystem::path job_dir,
                    const RunnerOptions& options, int64_t job_id, std::ostream& log)
      : uploader_(uploader), program_(program), job_dir_(std::move(job_dir)), options_(options), job_id_(job_id),
        log_(log) {}

  // `checkpoint`: the line (path, optional step and reason); `progress`: the job's progress so far.
  void take(const nlohmann::json& checkpoint, const nlohmann::json& progress);

 private:
  CheckpointUploader& uploader_;
  const JobProgram& program_;
  const std::filesystem::path job_dir_;
  const RunnerOptions& options_;
  const int64_t job_id_;
  std::ostream& log_;
  int64_t last_enqueued_step_ = -1;
};

}  // namespace jobctl::worker
