// GET /v1/jobs/{id}/progress: a job's progress history for the dashboard's curves, and
// GET /v1/jobs/{id}/log: its output (docs/api.md).
//
// Ownership: the handler borrows the service and the history; both must outlive the router.
#pragma once

#include "net/router.h"
#include "daemon/jobs/job_logs.h"
#include "daemon/jobs/job_service.h"
#include "daemon/store/progress_history.h"

namespace jobctl::daemon::http {

// Adds the route to `router`. 404 for an unknown job; `?limit=N` (2..10000, default 2000) thins
// a long series.
void add_progress_routes(net::Router& router, jobs::JobService& service, store::ProgressHistory& history);

// GET /v1/jobs/{id}/log?after=N: the job's output after offset N (default 0) as its workers sent
// it (docs/api.md): {"job_id", "text", "next", "dropped_bytes"}. 404 for an unknown job.
void add_log_routes(net::Router& router, jobs::JobService& service, const jobs::JobLogs& logs);

}  // namespace jobctl::daemon::http
