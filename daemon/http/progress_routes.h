// GET /v1/jobs/{id}/progress: a job's progress history for the dashboard's curves, and
// GET /v1/jobs/{id}/log: its output, kept on disk (docs/api.md).
//
// Ownership: the handler borrows the service and the history; both must outlive the router.
#pragma once

#include <functional>
#include <vector>

#include "base/clock.h"
#include "net/router.h"
#include "daemon/http/blob_download.h"
#include "daemon/jobs/job_service.h"
#include "daemon/store/job_log_store.h"
#include "daemon/store/progress_history.h"

namespace jobctl::daemon::http {

// Adds the route to `router`. 404 for an unknown job; `?limit=N` (2..10000, default 2000) thins
// a long series.
void add_progress_routes(net::Router& router, jobs::JobService& service, store::ProgressHistory& history);

// GET /v1/jobs/{id}/log: the job's stored lines (docs/api.md), `?after=N` (lines numbered above
// N), `since=MS` (stamped at or after), `tail=N` (the last N), `limit=N` (at most N, the first),
// `timestamps=true` (the `text` field's lines start with their time): {"job_id", "lines": [{"n",
// "time_ms", "text"}], "text", "next", "more", "dropped_lines"}. GET /v1/jobs/{id}/log/download:
// the stored file itself, streamed (a download slot). 404 for an unknown job; 400 naming the
// parameter for a bad one.
void add_log_routes(net::Router& router, jobs::JobService& service, const store::JobLogStore& logs,
                    DownloadSlots& slots);

// The heartbeat's log hook (ApiInfo::on_log) writing to `logs`; a line its worker did not stamp
// is stamped with `clock` on arrival. Both must outlive the hook.
std::function<Status(int64_t job_id, const std::vector<jobs::OutputLine>& lines)> log_writer(store::JobLogStore& logs,
                                                                                           const Clock& clock);

}  // namespace jobctl::daemon::http
