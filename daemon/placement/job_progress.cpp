#include "daemon/placement/job_progress.h"

#include "daemon/store/records.h"

namespace jobctl::daemon::placement {

Expected<double> done_fraction(const std::optional<std::string>& progress_json, int64_t job_id) {
  if (!progress_json) return 0.0;
  auto p = store::decode_progress(*progress_json, "job " + std::to_string(job_id));
  if (!p) return p.error();
  return p->done_fraction();
}

}  // namespace jobctl::daemon::placement
