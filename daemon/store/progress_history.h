// The progress history of each job: every accepted heartbeat's progress object, with the time it
// arrived, so the dashboard can draw loss and accuracy curves (GET /v1/jobs/{id}/progress,
// docs/api.md). The store keeps only the last progress per job; this keeps the series.
//
// Storage: one JSON-lines file per job, `<dir>/<job id>.jsonl`, each line
// `{"time_ms": ..., "progress": {...}}`, appended with one write(2) on an O_APPEND descriptor.
// A line cut short by a crash is skipped on reading, so the history never blocks a read. It is
// derived data (losing it loses curves, never job state), which is why it lives beside the
// database rather than in it.
//
// Growth is bounded: a point is kept at most every `min_interval_ms` (1 s) while a job has fewer
// than `dense_points` (10,000) points, then at most every `sparse_interval_ms` (60 s), except
// that a point whose `epochs_done` differs from the last kept one (an epoch's test loss and
// accuracy) is always kept; reads thin a long series evenly to at most `limit` points (the first
// and last always kept).
//
// Ownership: owns its folder's files. Thread safety: every method is safe from any thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "base/expected.h"
#include "base/mutex.h"

namespace jobctl::daemon::store {

struct ProgressHistoryOptions {
  int64_t min_interval_ms = 1000;
  int64_t sparse_interval_ms = 60000;
  int64_t dense_points = 10000;
};

class ProgressHistory {
 public:
  // Creates `dir` if needed (an error if that fails).
  static Expected<std::unique_ptr<ProgressHistory>> open(std::filesystem::path dir, const Clock& clock,
                                                         ProgressHistoryOptions options = {});

  // Appends one point (a JSON object as text); points arriving faster than the interval are
  // dropped. Not JSON / not an object: invalid_argument, nothing written.
  Status record(int64_t job_id, std::string_view progress_json);

  // The job's points, oldest first: [{"time_ms": ..., "progress": {...}}, ...], thinned to at
  // most `limit` (>= 2). A job without points has an empty array.
  Expected<nlohmann::json> read(int64_t job_id, int64_t limit) const;

 private:
  ProgressHistory(std::filesystem::path dir, const Clock& clock, ProgressHistoryOptions options);
  std::filesystem::path file_for(int64_t job_id) const;

  struct JobState {
    int64_t points = 0;
    int64_t last_ms = 0;
    int64_t last_epochs = -1;  // progress.epochs_done of the last kept point
    bool torn_tail = false;    // the file ends without a newline (a crash mid-append)
  };

  std::filesystem::path dir_;
  const Clock& clock_;
  ProgressHistoryOptions options_;
  Mutex mu_;
  std::unordered_map<int64_t, JobState> jobs_ JOBCTL_GUARDED_BY(mu_);  // loaded lazily from the file on first record
};

}  // namespace jobctl::daemon::store
