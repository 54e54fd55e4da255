// The jobs' logs on disk: every line a job's program printed (docs/job-protocol.md: what is not a
// protocol line), with the time its worker read it, as workers deliver them with their heartbeats
// (GET /v1/jobs/{id}/log, `jobctl logs`). A line is appended before the heartbeat that carried it
// is answered, so what a worker was told is delivered survives jobctld's end, SIGKILL included.
//
// Storage (docs/log-format.md): one text file per job, `<dir>/<job id>.log`, one line per log
// line: `<number> <time, RFC 3339 UTC with milliseconds> <text>\n`, numbered from 1 in the order
// received, across every lease of the job. Appends are one write(2) on an O_APPEND descriptor; a
// last line without its newline (a crash mid-append) is never read and is cut off before the next
// append. Bounded: when a file passes `max_bytes_per_job` it is rewritten (temp file, rename) to
// its first quarter and its last half, whole lines each; the numbers of the lines dropped between
// are missing, which is how readers learn of the gap.
//
// Ownership: owns its folder's files. Thread safety: every method is safe from any thread; appends
// are serialised by one mutex, reads take none (a read sees whole lines only).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/expected.h"
#include "base/mutex.h"

namespace jobctl::daemon::store {

// One line as a worker delivered it.
struct LogEntry {
  int64_t time_ms = 0;  // when the worker read it, ms since the epoch
  std::string text;     // without its newline
};

// One stored line.
struct StoredLogLine {
  int64_t number = 0;
  int64_t time_ms = 0;
  std::string text;
};

struct LogQuery {
  int64_t after = 0;       // only lines numbered above this
  int64_t since_ms = 0;    // only lines stamped at or after this (0: any)
  int64_t tail = 0;        // only the last `tail` lines of those (0: all)
  size_t max_lines = 5000; // at most this many, the first ones (`more` says when some are left)
};

struct LogPage {
  std::vector<StoredLogLine> lines;
  int64_t next = 0;           // the `after` that reads on from here
  int64_t dropped_lines = 0;  // lines numbered in the range read that are no longer kept
  bool more = false;          // `max_lines` cut the answer short
};

struct JobLogOptions {
  int64_t max_bytes_per_job = int64_t{64} << 20;
  size_t max_line_bytes = 16 << 10;  // a longer line is cut to this, marked "[cut]"
};

class JobLogStore {
 public:
  // Creates `dir` if needed (an error if that fails).
  static Expected<std::unique_ptr<JobLogStore>> open(std::filesystem::path dir, JobLogOptions options = {});

  // Appends the lines (newlines inside a text split it into lines of the same time). An error
  // (io) leaves the file as it was or with a torn last line, which no reader sees.
  Status append(int64_t job_id, const std::vector<LogEntry>& entries) JOBCTL_EXCLUDES(mu_);

  // The job's kept lines that match `query`, oldest first. A job without a log has none.
  Expected<LogPage> read(int64_t job_id, const LogQuery& query) const;

  // The job's file as stored (the full download), or not_found when it has no log.
  Expected<std::filesystem::path> file_of(int64_t job_id) const;

  // Removes the logs of the jobs `expired` says are past their retention; returns how many.
  Expected<int> sweep(const std::function<bool(int64_t job_id)>& expired) JOBCTL_EXCLUDES(mu_);

  // Parses one stored line (without its newline); false when it is not one.
  static bool parse_line(const std::string& line, StoredLogLine& out);
  // Formats one stored line, newline included.
  static std::string format_line(int64_t number, int64_t time_ms, const std::string& text);

 private:
  JobLogStore(std::filesystem::path dir, JobLogOptions options);
  std::filesystem::path path_of(int64_t job_id) const;

  struct FileState {
    int64_t last_number = 0;
    int64_t bytes = 0;
  };
  // Reads the file's last number and size, cutting a torn last line off.
  Expected<FileState> load(int64_t job_id) const;
  // Rewrites the file to its first quarter and last half (whole lines).
  Status compact(int64_t job_id, FileState& state) JOBCTL_REQUIRES(mu_);

  const std::filesystem::path dir_;
  const JobLogOptions options_;
  Mutex mu_;
  std::unordered_map<int64_t, FileState> files_ JOBCTL_GUARDED_BY(mu_);  // loaded on first append
};

}  // namespace jobctl::daemon::store
