// How one attempt of a leased job ended, and its report to jobctld (docs/job-protocol.md, "Exit
// status"): cancelled and lost leases report nothing; a job given back (the worker stopping, or a
// move) waits for its last checkpoint's upload and reports preempt; exit 0 with a whole run
// reports complete with the program's result; anything else reports fail with the exit status,
// what it means, and the log's tail.
//
// Thread safety: functions; called on the runner's thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>

#include "worker/checkpoint_uploader.h"
#include "worker/job_program.h"
#include "worker/job_protocol.h"
#include "worker/job_supervisor.h"
#include "worker/lease_reporter.h"
#include "worker/stop_source.h"

namespace jobctl::worker {

enum class RunOutcome { succeeded, failed, cancelled, lease_lost, released };
const char* to_string(RunOutcome o);

// What finish_attempt reads besides the attempt's end.
struct AttemptEnd {
  const Supervised& supervised;
  const JobProgram& program;
  const JobProtocol& protocol;
  CheckpointUploader& uploader;
  LeaseReporter& reporter;
  const StopSource& stop;
  std::optional<int64_t> oom_kills_before;  // LaunchedJob's
  bool resuming = false;                    // the attempt resumed from a checkpoint
  bool keep_work_dir = false;               // keep a succeeded job's folder
  std::filesystem::path job_dir;            // removed after a success unless kept
  // Uploads the program's outputs (worker/output_sync.h): after the program exited or after the
  // last checkpoint of a job given back, before the report that ends the lease.
  std::function<void()> upload_outputs = [] {};
  // Ends the heartbeats (the last carries the log still pending): after the uploads, before the
  // report that ends the lease, so that the lease lives as long as the uploads take.
  std::function<void()> end_heartbeats = [] {};
};

// Reports the attempt's outcome. When a resuming program refused its checkpoint (an `error` line
// with resume_refused before it started), nothing is reported: `resume_refused` gets its message
// and the outcome is failed (the caller falls back to an older checkpoint).
RunOutcome finish_attempt(const AttemptEnd& end, std::string& resume_refused, std::ostream& log);

}  // namespace jobctl::worker
