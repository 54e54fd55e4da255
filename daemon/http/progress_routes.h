// GET /v1/jobs/{id}/progress: a job's progress history for the dashboard's curves (docs/api.md).
//
// Ownership: the handler borrows the service and the history; both must outlive the router.
#pragma once

#include "net/router.h"
#include "daemon/jobs/job_service.h"
#include "daemon/jobs/progress_history.h"

namespace jobctl::daemon::http {

// Adds the route to `router`. 404 for an unknown job; `?limit=N` (2..10000, default 2000) thins
// a long series.
void add_progress_routes(net::Router& router, jobs::JobService& service, jobs::ProgressHistory& history);

}  // namespace jobctl::daemon::http
