// The output of running jobs (docs/job-protocol.md: every line a job's program prints that is not
// a protocol line), as workers send it with their heartbeats, kept for `jobctl logs -f` and the
// dashboard: the last `max_bytes_per_job` bytes of each job, older output dropped with a marker.
// Held in memory only (a restart of jobctld starts every log afresh), for at most `max_jobs` jobs
// (the job written to longest ago is forgotten first).
//
// Offsets count every byte a job ever logged, so a reader asks for what came after the offset it
// read to; what was dropped meanwhile is reported as such.
//
// Thread safety: every method is safe from any thread.
#pragma once

#include <cstdint>
#include <list>
#include <string>
#include <unordered_map>

#include "base/mutex.h"

namespace jobctl::daemon::jobs {

struct LogChunk {
  std::string text;          // the output after `after`, a drop marker first when some was dropped
  int64_t next = 0;          // the offset to ask for next
  int64_t dropped_bytes = 0; // bytes after `after` that are no longer kept
};

class JobLogs {
 public:
  explicit JobLogs(size_t max_bytes_per_job = 256 << 10, size_t max_jobs = 1000)
      : max_bytes_(max_bytes_per_job), max_jobs_(max_jobs) {}

  void append(int64_t job_id, const std::string& text) JOBCTL_EXCLUDES(mu_);
  LogChunk read(int64_t job_id, int64_t after) const JOBCTL_EXCLUDES(mu_);

 private:
  struct Log {
    std::string kept;    // the last bytes
    int64_t end = 0;     // offset just past the last byte ever logged
    std::list<int64_t>::iterator age;
  };
  size_t max_bytes_;
  size_t max_jobs_;
  mutable Mutex mu_;
  std::unordered_map<int64_t, Log> logs_ JOBCTL_GUARDED_BY(mu_);
  std::list<int64_t> by_age_ JOBCTL_GUARDED_BY(mu_);  // least recently written first
};

}  // namespace jobctl::daemon::jobs
