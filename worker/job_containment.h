// Ends everything a job's program started when the job ends, and caps its memory (docs/security.md,
// "What a job program can reach").
//
// Where the machine allows it, each run of a job gets a cgroup v2 of its own under a parent (by
// default the worker's own cgroup): the program joins it before exec (process::SpawnOptions::
// cgroup_procs_fd), so all it starts — setsid() or double fork included — stays in it, and
// end_all() writes cgroup.kill, waits for the cgroup to empty and removes it. memory.max is the
// spec's resources.memory_mb where the parent delegates the memory controller.
//
// Elsewhere (no cgroup v2, or one this process may not write) the fallback: the program leads a
// session of its own, and end_all() kills every process still in that session and, when the job
// runs as another user (--run-as) and no other job of this worker is running, every process of
// that user. A program running as the worker's own user that leaves its session escapes the
// fallback; docs/security.md says so.
//
// Ownership: a JobContainment owns its cgroup folder and the open cgroup.procs; destroying it
// calls end_all(). Thread safety: one per job run, used by that run's thread; the count of
// running jobs the uid sweep consults is shared and locked.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>

#include "process/child.h"

namespace jobctl::worker {

// The folder of this process's own cgroup v2 (its cgroup2 mount joined with the "0::" line of
// /proc/self/cgroup); nullopt when the machine has no cgroup v2.
std::optional<std::string> own_cgroup_dir();

// The name of a job run's cgroup: "jobctl-<worker pid>-job-<job id>-<epoch>".
std::string job_cgroup_name(int64_t job_id, int64_t epoch);

// Ends and removes the job cgroups under `parent` left by workers that are gone (killed before
// they could end their jobs; PR_SET_PDEATHSIG reaches a program, not what it left behind): those
// whose worker pid is no longer a running process. Returns how many; each is logged to `log`.
int end_orphaned_job_cgroups(const std::string& parent, std::ostream& log);

class JobContainment {
 public:
  // For one run. `cgroup_parent`: the folder under which its cgroup `name` is made; empty: no
  // cgroup. A parent that cannot take one is logged to `log` and the fallback used. `run_as`:
  // the user the job runs as (the uid sweep's), nullopt: the worker's own.
  static std::unique_ptr<JobContainment> start(const std::string& cgroup_parent, const std::string& name,
                                               uint64_t memory_max_bytes,
                                               const std::optional<process::Credentials>& run_as, std::ostream& log);
  ~JobContainment();
  JobContainment(const JobContainment&) = delete;
  JobContainment& operator=(const JobContainment&) = delete;

  // The open cgroup.procs the program is to join (SpawnOptions::cgroup_procs_fd); -1: no cgroup,
  // the program must then lead a session of its own (SpawnOptions::new_session).
  int procs_fd() const { return procs_fd_; }
  const std::string& cgroup_dir() const { return dir_; }
  // The program's pid (the session the fallback sweeps).
  void set_session(pid_t session) { session_ = session; }

  // Kills every process the job started and waits for them to go. Idempotent.
  void end_all();

 private:
  JobContainment(std::ostream& log) : log_(log) {}
  void kill_session();
  void sweep_user();

  std::ostream& log_;
  std::string dir_;  // the job's cgroup; empty: none
  int procs_fd_ = -1;
  pid_t session_ = -1;
  std::optional<process::Credentials> run_as_;
  bool counted_ = false;
  bool ended_ = false;
};

}  // namespace jobctl::worker
