#include "daemon/placement/job_progress.h"

#include <algorithm>

#include "daemon/store/records.h"

namespace jobctl::daemon::placement {

Expected<double> done_fraction(const std::optional<std::string>& progress_json, int64_t job_id) {
  if (!progress_json) return 0.0;
  auto p = store::decode_progress(*progress_json, "job " + std::to_string(job_id));
  if (!p) return p.error();
  return p->done_fraction();
}

Expected<int64_t> expected_end_ms(const store::LeaseSummary& lease, int64_t now_ms) {
  if (!lease.chosen) return now_ms + int64_t{3'600'000};
  auto done = done_fraction(lease.progress_json, lease.job_id);
  if (!done) return done.error();
  const double hours = lease.chosen->estimated_hours;
  if (*done <= 0 && lease.leased_ms > 0) return lease.leased_ms + static_cast<int64_t>(hours * 3.6e6);
  return now_ms + static_cast<int64_t>(hours * (1.0 - *done) * 3.6e6);  // hours -> ms
}

Expected<std::map<int64_t, std::vector<int64_t>>> held_gpu_ends(const std::vector<store::LeaseSummary>& leases,
                                                                 int64_t now_ms) {
  std::map<int64_t, std::vector<int64_t>> held;
  for (const auto& l : leases) {
    auto end = expected_end_ms(l, now_ms);
    if (!end) return end.error();
    held[l.worker_id].insert(held[l.worker_id].end(), static_cast<size_t>(std::max(l.gpus, 1)), *end);
  }
  return held;
}

}  // namespace jobctl::daemon::placement
