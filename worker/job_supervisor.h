// The I/O loop of one running attempt: drains the program's stdout and stderr (so it never blocks
// on a full pipe), reads its job-protocol lines (worker/job_protocol.h), hands progress and log to
// the heartbeat thread and checkpoints to the uploader, and watches what stops the program — the
// worker's stop request, a heartbeat's verdict (cancel, move, lease lost), a fenced-off upload
// (taken as a lost lease only if the heartbeat it asks for at once does not say cancel) —
// and the SIGKILL deadline (worker/job_stopper.h). Nothing in the loop waits on jobctld: the
// heartbeats go out on their own thread (worker/heartbeat_sender.h), which wakes the loop through
// its wake_fd() when an answer changes the job's course.
//
// On a node of rank > 0 of a job across machines the job's progress and checkpoints are rank 0's:
// its `progress`, `start`, `epoch` and `done` lines become log lines, its `checkpoint` lines are
// ignored (and logged), and every log line is prefixed "[rank N] ". Once the lease is lost, a
// checkpoint the program still announces is not uploaded either.
//
// Ownership and thread safety: borrows everything it is given; run() once, on the runner's thread.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>

#include "process/child.h"
#include "process/line_splitter.h"
#include "worker/checkpoint_handoff.h"
#include "worker/checkpoint_uploader.h"
#include "worker/heartbeat_sender.h"
#include "worker/job_launch.h"
#include "worker/job_protocol.h"
#include "worker/job_stopper.h"
#include "worker/pending_log.h"
#include "worker/stop_source.h"

namespace jobctl::worker {

// The prefix of every log line a node of rank `rank` sends ("[rank 2] "; "" for rank 0 and a job
// on one machine).
std::string rank_log_prefix(int rank);

// How the program ended.
struct Supervised {
  StopReason stop = StopReason::none;
  process::ExitStatus status;
  bool worker_killed_it = false;  // a SIGKILL from the worker itself (its grace passed)
  std::string log_tail;           // the end of its log (stdout's other lines and stderr), for a failure
};

class JobSupervisor {
 public:
  struct Parts {
    LaunchedJob& job;
    const JobProgram& program;
    JobProtocol& protocol;
    HeartbeatSender& heartbeats;
    PendingLog& pending_log;
    CheckpointHandoff& checkpoints;
    const CheckpointUploader& uploader;
    const StopSource& stop;
  };
  // `resuming`: the attempt resumes from a checkpoint (its first step is logged: bench/recovery).
  // `rank`: this node's in a job across machines (0 for a job on one machine).
  JobSupervisor(Parts parts, int64_t job_id, bool resuming, int rank, std::ostream& log);

  // Runs until both pipes are closed and the program has ended (killed when it outlives its grace).
  Supervised run();

 private:
  // Reads what one pipe has; false once it is closed.
  void drain(int which);
  void on_stdout_line(const std::string& line);
  void append_log(const std::string& line);
  // Starts stopping the program for whatever asks it to stop now (first reason wins).
  void watch_stops(bool stop_requested);
  // A fenced-off upload: waits for the heartbeat verdict that says why, then stops as lost.
  void watch_fence();

  Parts p_;
  JobStopper stopper_;
  const int64_t job_id_;
  const bool resuming_;
  const int rank_;
  const std::string log_prefix_;
  std::ostream& log_;
  process::LineSplitter out_lines_, err_lines_;
  std::string log_tail_;
  bool first_step_logged_ = false;
  std::optional<JobStopper::Clock::time_point> fenced_since_;  // when a refused upload was first seen
};

}  // namespace jobctl::worker
